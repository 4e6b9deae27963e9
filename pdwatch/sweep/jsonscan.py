"""The top-level scalars of a JSON object, read from a file of any size in bounded memory.

A benchmark result file holds a few dozen scalar keys and per-request arrays (``ttfts``, ``itls``,
``generated_texts``...) that reach hundreds of MB, with the latency keys written *after* the arrays.
``read_top_level`` walks the file in 1 MiB chunks and skips every array and object it is not asked
for, keeping only the bytes of the value being read: memory stays at a few MiB whatever the file's
size. Skipped values are checked for closed strings and matching brackets, not parsed.

It never raises on bad content: a truncated or malformed file comes back with the values read so
far and an ``error`` naming the byte where reading stopped.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

CHUNK_BYTES = 1 << 20
# A wanted array or object larger than this is skipped as if unwanted (the old per-percentile
# lists are a few hundred bytes; nothing worth keeping is near this size).
MAX_KEPT_VALUE_BYTES = 1 << 16

_SPACE = re.compile(rb"[ \t\r\n]*+")
# The inside of a string up to its closing quote (or up to a lone backslash at the chunk's end).
_STRING_BODY = re.compile(rb'(?:[^"\\]++|\\.)*+', re.S)
# Everything inside an array or object that is neither a bracket nor a string.
_NOT_STRUCTURE = re.compile(rb'[^"\[\]{}]*+')
_SCALAR_TOKEN = re.compile(rb"[A-Za-z0-9+\-.]*+")
_CLOSER = {ord("["): ord("]"), ord("{"): ord("}")}


@dataclass
class TopLevelRead:
    """What ``read_top_level`` found: the values it kept, and why it stopped early if it did."""

    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # "truncated JSON at byte 1234" / "invalid JSON at byte 12: expected ':'"
    more_documents: bool = False  # data follows the object (vLLM's --append-result writes one per run)
    size: int = 0  # bytes read


class _Stop(Exception):
    """Reading ends here; the message is the reason shown to the user."""


class _Chunks:
    """A sliding window on the file: ``buf[pos:]`` is unread; consumed bytes are dropped on each
    refill unless ``keep_from`` marks the start of a value being kept."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream
        self.buf = b""
        self.pos = 0
        self.base = 0  # file offset of buf[0]
        self.keep_from: int | None = None
        self.eof = False

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def refill(self) -> bool:
        if self.eof:
            return False
        more = self.stream.read(CHUNK_BYTES)
        if not more:
            self.eof = True
            return False
        cut = self.pos if self.keep_from is None else self.keep_from
        self.buf = self.buf[cut:] + more
        self.base += cut
        self.pos -= cut
        if self.keep_from is not None:
            self.keep_from -= cut
            if len(self.buf) - self.keep_from > MAX_KEPT_VALUE_BYTES:
                self.keep_from = None  # too big to keep: the value is skipped instead
        return True

    def need_more(self) -> None:
        if not self.refill():
            raise _Stop(f"truncated JSON at byte {self.base + len(self.buf)}")  # where the data ended

    def skip_space(self) -> None:
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or not self.refill():
                return

    def peek(self) -> int:
        self.skip_space()
        if self.pos >= len(self.buf):
            raise _Stop(f"truncated JSON at byte {self.offset}")
        return self.buf[self.pos]

    def expect(self, char: bytes, what: str) -> None:
        if self.peek() != char[0]:
            raise _Stop(f"invalid JSON at byte {self.offset}: expected {what}")
        self.pos += 1

    def skip_string(self) -> None:
        """``buf[pos]`` is the opening quote; stop after the closing one."""
        self.pos += 1
        while True:
            end = _STRING_BODY.match(self.buf, self.pos).end()
            if end < len(self.buf) and self.buf[end] == ord('"'):
                self.pos = end + 1
                return
            self.pos = end  # at the end of the chunk, or at a backslash whose escaped byte is not read yet
            self.need_more()

    def skip_compound(self) -> None:
        """``buf[pos]`` opens an array or object; stop after the bracket that closes it."""
        open_brackets: list[int] = []
        while True:
            end = _NOT_STRUCTURE.match(self.buf, self.pos).end()
            if end >= len(self.buf):
                self.pos = end
                self.need_more()
                continue
            char = self.buf[end]
            self.pos = end
            if char == ord('"'):
                self.skip_string()
            elif char in _CLOSER:
                open_brackets.append(_CLOSER[char])
                self.pos += 1
            else:
                if not open_brackets or open_brackets.pop() != char:
                    raise _Stop(f"invalid JSON at byte {self.offset}: unmatched {chr(char)!r}")
                self.pos += 1
                if not open_brackets:
                    return

    def skip_scalar(self) -> None:
        """A number, true, false, null, NaN or Infinity: stop at the first byte that cannot belong to one."""
        read_any = False
        while True:
            end = _SCALAR_TOKEN.match(self.buf, self.pos).end()
            read_any = read_any or end > self.pos
            if end < len(self.buf):
                if not read_any:
                    raise _Stop(f"invalid JSON at byte {self.offset}: unexpected {chr(self.buf[self.pos])!r}")
                self.pos = end
                return
            # a value inside an object never ends the file: at the end, it was cut short
            self.pos = end
            self.need_more()

    def value(self, keep: bool) -> tuple[bool, Any]:
        """Read one value at ``pos``; return (kept, value). Unkept values are skipped."""
        first = self.peek()
        self.keep_from = self.pos if keep else None
        start = self.offset
        if first == ord('"'):
            self.skip_string()
        elif first in _CLOSER:
            self.skip_compound()
        else:
            self.skip_scalar()
        kept_from, self.keep_from = self.keep_from, None
        if kept_from is None:
            return False, None
        try:
            return True, json.loads(self.buf[kept_from:self.pos])
        except ValueError:
            raise _Stop(f"invalid JSON at byte {start}: not a JSON value") from None


def read_top_level(path: str | Path, keys: set[str] | frozenset[str] | None = None) -> TopLevelRead:
    """The top-level keys of the JSON object in ``path`` whose name is in ``keys`` (all if None),
    with their values; arrays and objects over 64 KiB are never kept. Reads the first document only.

    Raises ``OSError`` when the file cannot be opened; bad content is reported in ``error``.
    """
    result = TopLevelRead()
    with open(path, "rb") as stream:
        chunks = _Chunks(stream)
        try:
            _read_object(chunks, keys, result.values)
            chunks.skip_space()
            result.more_documents = chunks.pos < len(chunks.buf)
        except _Stop as stop:
            result.error = str(stop)
        result.size = chunks.offset
    return result


def _read_object(chunks: _Chunks, keys: set[str] | frozenset[str] | None, values: dict[str, Any]) -> None:
    if chunks.peek() != ord("{"):
        raise _Stop(f"invalid JSON at byte {chunks.offset}: expected an object ('{{')")
    chunks.pos += 1
    if chunks.peek() == ord("}"):
        chunks.pos += 1
        return
    while True:
        if chunks.peek() != ord('"'):
            raise _Stop(f"invalid JSON at byte {chunks.offset}: expected a key")
        _, key = chunks.value(keep=True)
        chunks.expect(b":", "':'")
        kept, value = chunks.value(keep=keys is None or key in keys)
        if kept:
            values[key] = value
        separator = chunks.peek()
        chunks.pos += 1
        if separator == ord("}"):
            return
        if separator != ord(","):
            raise _Stop(f"invalid JSON at byte {chunks.offset - 1}: expected ',' or '}}'")


# --- big files: the head and the tail --------------------------------------------------------
#
# Walking 300 MB of per-request arrays costs seconds a file even skipped (a Python step per
# bracket and per string). The scalars sit before the first array and after the last one, so a
# big file is read at both ends: the head as far as it goes, the tail after its last array. When
# that finds every key asked for (``needed``), and the file ends where an object ends, it is the
# answer; otherwise the whole file is walked as before. (A file damaged in its middle, between
# the arrays, is then not seen as damaged: its figures, all at its ends, are whole.)

ENDS_FROM_BYTES = 8 << 20  # below this, walking the file costs less than being clever
END_BYTES = 256 << 10
_TAIL_PAIR = re.compile(rb'(?<!\\)"([A-Za-z0-9_]+)"\s*:\s*(-?[0-9][0-9.eE+\-]*|null|true|false|"(?:[^"\\]|\\.)*")\s*(?=[,}])')


def read_scalars(path: str | Path, keys: frozenset[str], needed: frozenset[str]) -> TopLevelRead:
    """``read_top_level(path, keys)``, from the file's two ends when it is big and they hold every
    key of ``needed`` (see above)."""
    size = Path(path).stat().st_size
    if size < ENDS_FROM_BYTES:
        return read_top_level(path, keys)
    with open(path, "rb") as stream:
        head = stream.read(END_BYTES)
        stream.seek(size - END_BYTES)
        tail = stream.read(END_BYTES)
    values: dict[str, Any] = {}
    start = TopLevelRead()
    chunks = _Chunks(_Bytes(head))
    try:
        _read_object(chunks, keys, values)
    except _Stop:
        pass  # the head ends inside an array: what came before it is read
    stripped = tail.rstrip()
    ends_an_object = stripped.endswith(b"}")
    after_arrays = tail[tail.rfind(b"]") + 1:] if b"]" in tail else b""
    for m in _TAIL_PAIR.finditer(after_arrays):
        key = m[1].decode()
        if key in keys and key not in values:
            try:
                values[key] = json.loads(m[2])
            except ValueError:
                continue
    if ends_an_object and needed <= values.keys():
        start.values, start.size = values, size
        return start
    return read_top_level(path, keys)


class _Bytes:
    """A bytes object read like a file (``_Chunks`` reads the head through it)."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def read(self, n: int = -1) -> bytes:
        out = self._data[self._pos:] if n < 0 else self._data[self._pos:self._pos + n]
        self._pos += len(out)
        return out
