"""One GET of a ``/metrics`` page (urllib): its text, or a ``ScrapeError`` naming the cause.

Refused, not resolved, timed out, TLS, an HTTP status, an answer that is not HTTP, an empty,
binary or too large page: each has its own words (``http_failures``, ``page_shape``). Whether
the text is an exposition is the caller's check (the parser's), told with ``page_shape.not_exposition``.
"""

from __future__ import annotations

import urllib.error
import urllib.request

from .http_failures import Failure, request_failure, status_failure
from .page_shape import binary_failure

MAX_BYTES = 64 << 20  # a /metrics page is a few hundred KiB; refuse anything absurd
_TOO_LARGE = Failure("too_large", f"page larger than {MAX_BYTES >> 20} MiB, the most pdwatch reads")


class ScrapeError(OSError):
    """The endpoint could not be scraped: ``cause`` is the kind of failure (a notice is given
    again when it changes), ``reason`` one line saying it; ``str()`` is ``URL: reason``."""

    def __init__(self, url: str, failure: Failure) -> None:
        super().__init__(f"{url}: {failure.reason}")
        self.url = url
        self.cause, self.reason = failure


def fetch(url: str, timeout: float = 5.0) -> str:
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4", "User-Agent": "pdwatch"})
    try:
        response = urllib.request.urlopen(request, timeout=timeout)  # noqa: S310 (http/https only)
    except urllib.error.HTTPError as exc:
        exc.close()
        cause, reason = status_failure(exc.code, str(exc.reason or ""))
        if exc.code == 404:
            reason += " (is the path right? vLLM serves /metrics)"
        raise ScrapeError(url, Failure(cause, reason)) from None
    except Exception as exc:
        failure = request_failure(exc, url, timeout)
        if failure is None:
            raise
        raise ScrapeError(url, failure) from None
    with response:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > MAX_BYTES:
            raise ScrapeError(url, _TOO_LARGE)  # not read at all
        try:
            body = response.read(MAX_BYTES + 1)
        except Exception as exc:
            failure = request_failure(exc, url, timeout, answered=True)
            if failure is None:
                raise
            raise ScrapeError(url, failure) from None
        status = response.status
    if len(body) > MAX_BYTES:
        raise ScrapeError(url, _TOO_LARGE)
    if not body.strip():
        what = "no content" if not body else "only white space"
        raise ScrapeError(url, Failure("empty", f"empty page (HTTP {status}, {what})"))
    binary = binary_failure(body)
    if binary is not None:
        raise ScrapeError(url, binary)
    return body.decode("utf-8", errors="replace")
