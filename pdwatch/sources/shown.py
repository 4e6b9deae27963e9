"""Text a server sent, made safe to show in a notice: one line, no control character.

A page, a status reason or an error text is data: an escape sequence in it must not reach a
terminal, so every character that is not printable is shown escaped (``\\x1b``, ``\\n``, as
Python's ``repr`` writes it). Brackets stay as they are: the views show notices as plain text,
never as markup.
"""

from __future__ import annotations


def _char(ch: str) -> str:
    if ch.isprintable() and ch != "\\":
        return ch
    return repr(ch)[1:-1]  # '\x1b', '\n', '\u202e', '\\'


def escaped(text: str, limit: int = 300) -> str:
    """``text`` on one line (runs of white space as one space), escaped, cut at ``limit`` characters."""
    out = "".join(map(_char, " ".join(text.split())))
    return out if len(out) <= limit else out[:limit - 1] + "…"


def quoted(data: str | bytes, limit: int = 60) -> str:
    """``data`` in quotes, every character escaped as needed (bytes: non-ASCII ones as ``\\xNN``);
    at most ``limit`` characters inside the quotes, then ``…``."""
    parts = (_char(chr(b)) if 0x20 <= b < 0x7f else f"\\x{b:02x}" for b in data) if isinstance(data, bytes) \
        else map(_char, data)
    out, size = [], 0
    for part in parts:
        if size + len(part) > limit:
            return "'" + "".join(out) + "'…"
        out.append(part)
        size += len(part)
    return "'" + "".join(out) + "'"


def first_line(text: str) -> str:
    """The first line of ``text`` that is not blank, without its end (``""`` if none)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), "")
