"""The records of srt-slurm's ``raw_prometheus.jsonl``, one a line, as both its readers take them
(report's ``pdwatch.events.raw_prometheus`` and watch's ``raw_prometheus_tail``): a line's record
or why it is none, and the skipped lines told one by one up to ``MAX_TOLD``, then counted."""

from __future__ import annotations

from pdwatch.parsers.raw_prometheus import RawRecord, RecordError, parse_record

from . import jsonl

MAX_TOLD = 10  # skipped lines told one by one, then counted


def record_at(line_no: int, line: bytes | None) -> RawRecord | None:
    """The record on a line (None: a blank line). RecordError: cut off, not JSON, a field missing,
    or over ``jsonl.MAX_LINE_BYTES`` (``iter_lines`` gives such a line as None)."""
    if line is None:
        raise RecordError(f"longer than {jsonl.MAX_LINE_BYTES} bytes (its rest skipped)")
    if not line.strip():
        return None
    return parse_record(line, line_no)


class Skipped:
    """The lines of one file that held no record: the first ``MAX_TOLD`` told, the rest counted."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0
        self._counted = 0  # skipped past MAX_TOLD and already said in a count

    def skip(self, line_no: int, why: str) -> str | None:
        """One more; the sentence that tells it, while under ``MAX_TOLD``."""
        self.count += 1
        return f"{self.path}:{line_no}: record skipped: {why}" if self.count <= MAX_TOLD else None

    def untold(self) -> str | None:
        """The sentence counting the lines skipped past ``MAX_TOLD`` since it was last asked, if any."""
        more = self.count - MAX_TOLD - self._counted
        if more <= 0:
            return None
        self._counted += more
        return f"{self.path}: {more} more record(s) skipped (not told one by one)"
