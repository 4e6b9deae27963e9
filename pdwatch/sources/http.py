"""One GET of a ``/metrics`` page (urllib): the exposition text, or a ``ScrapeError`` saying why not."""

from __future__ import annotations

import urllib.error
import urllib.request

_MAX_BYTES = 64 << 20  # a /metrics page is a few hundred KiB; refuse anything absurd


class ScrapeError(OSError):
    """The endpoint could not be scraped (connection, HTTP status, size, decoding)."""


def fetch(url: str, timeout: float = 5.0) -> str:
    request = urllib.request.Request(url, headers={"Accept": "text/plain;version=0.0.4", "User-Agent": "pdwatch"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310 (http/https only)
            body = response.read(_MAX_BYTES + 1)
    except urllib.error.HTTPError as exc:
        raise ScrapeError(f"{url}: HTTP {exc.code}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ScrapeError(f"{url}: {reason}") from exc
    if len(body) > _MAX_BYTES:
        raise ScrapeError(f"{url}: response larger than {_MAX_BYTES} bytes")
    return body.decode("utf-8", errors="replace")
