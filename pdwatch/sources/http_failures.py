"""Why an HTTP request failed, in the words an operator acts on (a ``/metrics`` scrape and the
Prometheus API alike).

A failure is a ``Failure``: its ``cause`` (a short key: ``refused``, ``http 500``, ...; a
notice is given again when it changes) and its ``reason`` (one line: what happened, where, and
what to check). A connection refused, a name that does not resolve, no answer in time, a TLS
error and an HTTP status are different problems: an operator told "unreachable" for a server
that answers HTTP 500 looks for a network problem that is not there.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import urlsplit

from .shown import escaped, quoted


class Failure(NamedTuple):
    cause: str
    reason: str


# Causes where the request never reached the server's HTTP side (the rest: it was reached, and failed).
NOT_REACHED = frozenset({"dns", "refused", "connect_timeout", "tls", "network"})
# What OpenSSL says when a TLS client meets a port that speaks plain HTTP.
_PLAIN_HTTP_ON_TLS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "UNKNOWN_PROTOCOL")
_SSL_TEXT = re.compile(r"^\[SSL: [A-Z0-9_]+\] (.*?)(?: \(_ssl\.c:\d+\))?$")


def status_failure(code: int, phrase: str = "") -> Failure:
    """``HTTP 500 Internal Server Error``: the standard phrase, else the server's own (escaped)."""
    from http import HTTPStatus  # here: nothing else of a run that reads files needs it

    try:
        phrase = HTTPStatus(code).phrase
    except ValueError:
        phrase = escaped(phrase or "", 60)
    return Failure(f"http {code}", f"HTTP {code} {phrase}".rstrip())


def request_failure(exc: BaseException, url: str, timeout: float, *, answered: bool = False) -> Failure | None:
    """The failure ``exc`` (raised by ``urllib.request.urlopen``, or by reading the answer when
    ``answered``) stands for; None for an exception that is no failure of the request (a bug)."""
    import http.client  # here: urllib.request has loaded them when a request failed
    import socket
    import ssl
    import urllib.error

    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return Failure("error", f"bad URL: {escaped(url, 100)}")
    where = f"{host}:{port}"
    # urllib wraps what fails before the request is sent (connecting, TLS) in a URLError
    connecting = isinstance(exc, urllib.error.URLError)
    error = exc.reason if connecting else exc  # type: ignore[attr-defined]
    tls_hint = " (if the port speaks TLS, use https://)" if parts.scheme == "http" else ""
    if isinstance(error, str):
        return Failure("error", escaped(error, 200))
    if isinstance(error, socket.gaierror):
        return Failure("dns", f"DNS name not resolved: {host} ({error.strerror or error})")
    if isinstance(error, ConnectionRefusedError):
        return Failure("refused", f"connection refused by {where} (no server listening on that port)")
    if isinstance(error, ssl.SSLCertVerificationError):
        return Failure("tls", f"TLS certificate not accepted: {error.verify_message or _ssl_text(error)}")
    if isinstance(error, ssl.SSLError):
        hint = (" (does the port speak plain HTTP? then use http://)"
                if getattr(error, "reason", None) in _PLAIN_HTTP_ON_TLS else "")
        return Failure("tls", f"TLS handshake failed: {_ssl_text(error)}{hint}")
    if isinstance(error, TimeoutError):
        if connecting:
            return Failure("connect_timeout", f"timed out after {timeout:g} s connecting to {where} "
                                              f"(no answer: the host is down, or a firewall drops the packets)")
        if answered:
            return Failure("timeout", f"timed out after {timeout:g} s reading the answer (the server stopped sending)")
        return Failure("timeout", f"timed out after {timeout:g} s waiting for the answer "
                                  f"(connected, but the server did not answer in time)")
    if isinstance(error, http.client.RemoteDisconnected):
        return Failure("closed", f"the server closed the connection without an answer{tls_hint}")
    if isinstance(error, ConnectionResetError):
        if answered:
            return Failure("reset", "connection reset by the server while it sent the answer")
        return Failure("reset", f"connection reset by the server before it answered{tls_hint}")
    if isinstance(error, http.client.BadStatusLine):
        line = str(error.args[0] if error.args else "").rstrip("\r\n")
        tls = line.startswith(("\x15\x03", "\x16\x03"))  # a TLS record: the port speaks TLS
        hint = " (a TLS port? use https://)" if tls and parts.scheme == "http" else " (is it the right port?)"
        return Failure("not_http", f"not an HTTP answer: {quoted(line)}{hint}")
    if isinstance(error, http.client.IncompleteRead):
        return Failure("cut_short", f"the answer was cut short: {len(error.partial)} bytes read"
                                    + (f", {error.expected} more expected" if error.expected else ""))
    if isinstance(error, http.client.HTTPException):
        return Failure("not_http", f"not a valid HTTP answer: {escaped(str(error), 100)}")
    if isinstance(error, OSError):
        return Failure("network", f"cannot connect to {where}: {escaped(error.strerror or str(error), 100)}")
    if isinstance(error, ValueError):
        return Failure("error", f"bad URL: {escaped(str(error), 100)}")
    return None


def _ssl_text(error: BaseException) -> str:
    """OpenSSL's words without its brackets: ``wrong version number``."""
    text = str(error.args[1]) if len(error.args) > 1 else str(error)
    match = _SSL_TEXT.match(text)
    return escaped(match.group(1) if match else text, 120)
