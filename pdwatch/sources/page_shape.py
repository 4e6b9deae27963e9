"""What a ``/metrics`` page that is not Prometheus exposition text looks like, in a few words.

Whether a page parses is prometheus_client's call (``pdwatch.parsers.exposition``); this says
what an operator sees instead: a login page, JSON, compressed bytes, or which line broke, with
its first bytes escaped (``shown.quoted``). The look is structural and cheap: a line is blank, a
``#`` comment, or ``name{labels} value [timestamp]``.
"""

from __future__ import annotations

import codecs
import re

from .http_failures import Failure
from .shown import escaped, first_line, quoted

_SAMPLE = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?[ \t]+[-+]?(?:[0-9.]|Inf|inf|NaN|nan)\S*(?:[ \t]+\S+)?")
_SNIFF = 1024  # bytes looked at to tell text from binary


def binary_failure(body: bytes) -> Failure | None:
    """A page whose start has a NUL byte or is not UTF-8 (compressed, protobuf, an image): not text."""
    head = body[:_SNIFF]
    try:
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a character cut at the edge is fine
        text = b"\x00" not in head
    except UnicodeDecodeError:
        text = False
    if text:
        return None
    return Failure("not_exposition binary", f"not Prometheus exposition text (binary data): begins {quoted(head[:64])}")


def not_exposition(text: str, parser_reason: str) -> Failure:
    """Why ``text``, which the parser refused with ``parser_reason``, is not exposition text: the
    first line that does not look like one, else the parser's words."""
    first = None  # the number of the first line that is not blank
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped and first is None:
            first = number
        if not stripped or stripped.startswith("#") or _SAMPLE.fullmatch(stripped):
            continue
        kind, what = _kind(first_line(text))
        where = "begins" if number == first else f"line {number} is"
        return Failure(f"not_exposition {kind}", f"not Prometheus exposition text{what}: {where} {quoted(stripped)}")
    return Failure("not_exposition", f"not valid Prometheus exposition text: {escaped(parser_reason, 120)}")


def _kind(first: str) -> tuple[str, str]:
    if first.startswith("<"):
        return "html", " (an HTML page)"
    if first.startswith(("{", "[")):
        return "json", " (JSON)"
    return "text", ""
