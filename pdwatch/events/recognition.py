"""What was read and recognised: the words for inputs that hold nothing pdwatch knows.

A report of random bytes, or of an application's own log, used to look like a report of a
healthy job, and ``--fail-on`` passed on it: a CI gate pointed at the wrong folder stayed green.
Every command now says so (``NothingToJudge``, exit status 3) in one line naming what it read and
what it looks for, and a folder only partly recognised names its other files
(``unrecognised_notice``).
"""

from __future__ import annotations

import os

from pdwatch.errors import NothingToJudge
from pdwatch.sources.records import SourceNotice
from pdwatch.units import fmt_bytes, fmt_count

LOOKED_FOR = ("vLLM's stats, start-up and error lines, Dynamo's frontend and worker lines, "
              "or Prometheus /metrics pages of vLLM or Dynamo")
_COUNT_CHUNK = 1 << 20


def _line_count(path: str) -> int | None:
    """Lines of a local file (a last line without its newline counts); None when unreadable."""
    try:
        with open(path, "rb") as f:
            lines, last = 0, b"\n"
            while chunk := f.read(_COUNT_CHUNK):
                lines += chunk.count(b"\n")
                last = chunk[-1:]
            return lines + (last != b"\n")
    except OSError:
        return None


def _size(path: str) -> int | None:
    try:
        return os.path.getsize(path) if os.path.isfile(path) else None
    except OSError:
        return None


def _plural(n: int, word: str) -> str:
    return f"{fmt_count(n)} {word}{'' if n == 1 else 's'}"


def what_was_read(sources: list[str]) -> str:
    """``2 files (2.0 MB, 7,961 lines)``; other sources (stdin, URLs, ssh) by count."""
    files = [s for s in sources if _size(s) is not None]
    others = [s for s in sources if s not in files]
    parts = []
    if files:
        sizes = [_size(f) or 0 for f in files]
        lines = [_line_count(f) for f in files]
        counted = f", {_plural(sum(n or 0 for n in lines), 'line')}" if all(n is not None for n in lines) else ""
        parts.append(f"{_plural(len(files), 'file')} ({fmt_bytes(sum(sizes))}{counted})")
    if others:
        parts.append(", ".join(others))
    return " and ".join(parts) or "nothing"


def nothing_to_judge(sources: list[str], *, not_servers: bool = False) -> NothingToJudge:
    """The one line for inputs with no vLLM or Dynamo server in them. ``not_servers``: some lines
    were recognised, but only ones any process writes (tracebacks, access lines)."""
    found = ("only tracebacks or HTTP access lines, no vLLM or Dynamo server" if not_servers
             else "no line pdwatch recognises")
    return NothingToJudge(f"nothing to judge: read {what_was_read(sources)} and found {found} "
                          f"(it looks for {LOOKED_FOR})")


def unrecognised_notices(files: list[str], recognised: set[str] | frozenset[str],
                         failed: set[str] | frozenset[str] = frozenset()) -> list[SourceNotice]:
    """The notices of a run's local files that gave no recognised line (those that could not be
    read, ``failed``, are said otherwise): the one rule report, replay and parse follow."""
    return [unrecognised_notice(p) for p in files if p not in recognised and p not in failed and os.path.isfile(p)]


def unrecognised_notice(source: str) -> SourceNotice:
    """A file of a run with no line pdwatch recognises: named, so a typo'd glob or a stray file shows."""
    size = _size(source)
    if size is None:  # not a local file (stdin, ssh): its size is not known here
        read = ""
    elif size == 0:
        read = " (empty)"
    else:
        read = f" ({fmt_bytes(size)}, {_plural(_line_count(source) or 0, 'line')})"
    return SourceNotice(source, "unrecognised", f"{source}: no vLLM or Dynamo line in it{read}: left out")
