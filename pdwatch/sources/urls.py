"""``/metrics`` URLs as pdwatch names them; no heavy imports, so the sources can use it cheaply."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def normalize_url(url: str) -> str:
    """``host:port`` -> ``http://host:port/metrics``; a URL without a path gets ``/metrics``."""
    if "://" not in url:
        url = "http://" + url
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{url!r}: expected http://HOST:PORT/metrics")
    path = parts.path if parts.path not in ("", "/") else "/metrics"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
