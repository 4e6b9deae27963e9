"""Turn one raw physical line into plain text: decode, resolve carriage returns, strip ANSI/VT.

Log text is data. After this step a line holds no escape sequence and no control
character but tab, so nothing downstream (terminal, TUI, report) can be driven by it.
"""

from __future__ import annotations

import regex

# Every ANSI/VT sequence family, longest forms first: OSC (title, clipboard, hyperlinks)
# ended by BEL or ST or left unterminated by a torn write; DCS/SOS/PM/APC strings; CSI
# (SGR colours, cursor moves); two-byte and nF escapes; a lone ESC; 8-bit CSI.
_ANSI = regex.compile(
    r"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b[ -/]*[0-~]"
    r"|\x1b"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
# Colour codes are nearly all the escapes real logs hold: strip them on bytes first, cheaply.
_SGR = regex.compile(rb"\x1b\[[0-9;]*m")
# C0/C1 controls other than tab, after ANSI removal (NUL from a torn write, BEL, backspace, ...).
_CONTROL = regex.compile(r"[\x00-\x08\x0a-\x1f\x7f\x80-\x9f]")


def decode(raw: bytes) -> str:
    """Decode as UTF-8; invalid bytes become U+FFFD, never an error."""
    return raw.decode("utf-8", errors="replace")


def undecodable_lines(data: bytes) -> int:
    """How many lines of ``data`` are not valid UTF-8 (``decode`` gives them U+FFFD): a block of
    ASCII or of valid UTF-8, nearly every block, is judged in one C call."""
    if data.isascii():
        return 0
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return sum(1 for line in data.split(b"\n") if not _is_utf8(line))
    return 0


def _is_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def clean_line(text: str) -> str:
    """Plain text of one physical line as a terminal would have left it.

    A trailing CR is vLLM's multi-line formatter (``\\r\\n``) or a CRLF file; a CR
    inside the line is a progress bar redrawing itself, so only the text after the
    last CR is what the reader saw.
    """
    text = text.rstrip("\r\n")
    if "\r" in text:
        text = text[text.rfind("\r") + 1 :]
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    if not text.isprintable():  # C-speed test; the regex runs only when something is there
        text = _CONTROL.sub("", text)
    return text


def clean_raw(raw: bytes) -> str:
    if b"\x1b[" in raw:
        raw = _SGR.sub(b"", raw)
    return clean_line(decode(raw))
