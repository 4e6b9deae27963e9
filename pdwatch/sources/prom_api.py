"""A small client of the Prometheus HTTP API (``/api/v1/series``, ``query``, ``query_range``).

urllib and orjson only: the same calls work against Prometheus and the stores that speak
its API (Thanos, Mimir, VictoriaMetrics). Every failure is a ``PromError`` whose message is
one line naming the server and what went wrong: it cannot be reached (refused, DNS, TLS, no
connection in time: ``http_failures``), it did not answer in time, an HTTP error status that
is no answer of the API (a Prometheus still starting answers 503, a proxy 502, a wrong path
prefix 404), a server that is no Prometheus API, a query the server refused as malformed
(``bad_data``), or one it stopped at a limit of its own (samples in memory, points per
series, time-out). Text the server sent is shown escaped (``shown``).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from pdwatch.errors import UsageError

from .http_failures import NOT_REACHED, request_failure, status_failure
from .shown import escaped, first_line, quoted

_MAX_BYTES = 512 << 20  # one chunk's answer is a few MB; refuse anything absurd
# Statuses that say the path or the method is not served: nothing there speaks the API.
_NO_SUCH_API = frozenset({404, 405, 501})
# What Prometheus says when a query hits one of its limits (HTTP 422/503, errorType execution/timeout).
_LIMIT_WORDS = ("too many samples", "maximum resolution", "timed out", "limit exceeded", "exceeded the limit",
                "too many series", "max samples")


class PromError(UsageError):
    """The Prometheus server could not answer; ``kind`` is unreachable (no answer: not reached, or
    not in time), http_status, not_api, bad_data or limit; ``cause`` tells failures of one kind
    apart (``refused``, ``http 503``, ...), so a watch tells a change of cause."""

    def __init__(self, message: str, kind: str = "error", cause: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.cause = cause or kind


def one_line(text: str, limit: int = 300) -> str:
    return escaped(str(text), limit)


class PromClient:
    def __init__(self, base: str, name: str, *, timeout: float = 60.0, auth: tuple[str, str] | None = None) -> None:
        """``base``: the server's URL up to its API (``http://host:9090`` or with a path prefix);
        ``name``: how messages name it (no password)."""
        self.base = base.rstrip("/")
        self.name = name
        self.timeout = timeout
        self._headers = {"User-Agent": "pdwatch", "Accept": "application/json"}
        if auth is not None:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            self._headers["Authorization"] = f"Basic {token}"
        self.bytes_read = 0

    # -- the API --------------------------------------------------------------------------
    def series(self, match: str, start: float, end: float) -> list[dict[str, str]]:
        return self._call("series", {"match[]": match, "start": _num(start), "end": _num(end)})

    def query(self, expr: str, at: float | None = None) -> dict[str, Any]:
        params = {"query": expr}
        if at is not None:
            params["time"] = _num(at)
        return self._call("query", params)

    def query_range(self, expr: str, start: float, end: float, step: float) -> dict[str, Any]:
        return self._call("query_range", {"query": expr, "start": _num(start), "end": _num(end),
                                          "step": _num(step)})

    # -- plumbing ---------------------------------------------------------------------------
    def _call(self, endpoint: str, params: dict[str, str]) -> Any:
        import urllib.error  # here: urllib.request costs every `pdwatch parse` of a file ~12 ms at start-up
        import urllib.parse
        import urllib.request

        url = f"{self.base}/api/v1/{endpoint}"
        body = urllib.parse.urlencode(params).encode()  # POST: a long selector fits no URL limit
        headers = {**self._headers, "Content-Type": "application/x-www-form-urlencoded"}
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        status, phrase, payload, ctype, answered = None, "", b"", "", False
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310 (http/https only)
                answered = True
                status, ctype = response.status, response.headers.get("Content-Type", "")
                payload = response.read(_MAX_BYTES + 1)
        except urllib.error.HTTPError as exc:
            status, phrase = exc.code, str(exc.reason or "")
            ctype = exc.headers.get("Content-Type", "") if exc.headers else ""
            try:
                payload = exc.read(1 << 20)
            except OSError:
                payload = b""
        except Exception as exc:
            failure = request_failure(exc, url, self.timeout, answered=answered)
            if failure is None:
                raise
            reached = "" if failure.cause not in NOT_REACHED else "cannot reach the Prometheus server: "
            raise PromError(f"{self.name}: {reached}{failure.reason}", "unreachable", failure.cause) from None
        if len(payload) > _MAX_BYTES:
            raise PromError(f"{self.name}: an answer larger than {_MAX_BYTES >> 20} MB; read a shorter range "
                            f"(--since/--until) or a coarser --step", "limit")
        self.bytes_read += len(payload)
        try:
            doc = orjson.loads(payload)
        except orjson.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict) or doc.get("status") not in ("success", "error"):
            self._no_api(url, status, phrase, ctype, payload)
        if doc["status"] == "error":
            kind = str(doc.get("errorType", "error"))
            error = one_line(doc.get("error", "no reason given"))
            if kind == "timeout" or any(w in error.lower() for w in _LIMIT_WORDS):
                raise PromError(f"{self.name}: a server-side limit stopped the query ({kind}: {error}); "
                                f"read a shorter range (--since/--until) or a coarser --step", "limit")
            raise PromError(f"{self.name}: the server refused the query ({kind}: {error})", kind)
        return doc.get("data")

    def _no_api(self, url: str, status: int | None, phrase: str, ctype: str, payload: bytes) -> None:
        """An answer that is no answer of the API: an HTTP error status says so first (the server,
        or a proxy before it, failed), else it is no Prometheus API at all."""
        text = first_line(payload.decode("utf-8", errors="replace"))
        if status is not None and status >= 400:
            cause, reason = status_failure(status, phrase)
            there = " (no Prometheus API there: a wrong address or path prefix?)" if status in _NO_SUCH_API else ""
            said = f": {quoted(text)}" if text else ""
            raise PromError(f"{self.name}: {reason} from {url}{there}{said}", "http_status", cause)
        said = f"begins {quoted(text)}" if text else "an empty answer"
        raise PromError(f"{self.name}: not a Prometheus HTTP API at {self.base} "
                        f"(HTTP {status}, {escaped(ctype, 60) or 'no content type'}): {said}", "not_api")


def _num(x: float) -> str:
    """Seconds since the epoch as Prometheus reads them (milliseconds are its resolution)."""
    return f"{x:.3f}"
