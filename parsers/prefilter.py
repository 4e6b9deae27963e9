"""Find the lines of a block that may belong to a family, before any regex runs.

Measured on a 100 MB Dynamo-heavy log with the ~60 family needles: a literal
alternation in ``re`` scans ~30 MB/s, ``regex`` ~6 MB/s, pyahocorasick ~45 MB/s,
one ``bytes.find`` pass per needle ~75 MB/s in all, and Hyperscan (a multi-literal
SIMD matcher, PyPI ``hyperscan``, wheels for x86-64 and aarch64) ~2.7 GB/s. So
Hyperscan does the search; the ``find`` passes are the fallback where it cannot
be imported. Either way the result is the same: each hit line with its needles.
"""

from __future__ import annotations

import threading
from typing import Iterable

import regex

try:  # Optional accelerator; pure-Python fallback below.
    import hyperscan
except ImportError:  # pragma: no cover - depends on the platform
    hyperscan = None

# Line start, line end (newline excluded), needles in it, newlines from the search's start to the line.
Span = tuple[int, int, tuple[bytes, ...], int]
# Below this, a search's lines are found one call at a time: loading numpy (~55 ms) would cost more.
_VECTOR_MIN_BYTES = 256 << 10


class Prefilter:
    def __init__(self, needles: Iterable[bytes], *, use_hyperscan: bool = True) -> None:
        self.needles: tuple[bytes, ...] = tuple(sorted(set(needles)))
        if any(b"\n" in needle for needle in self.needles):
            raise ValueError("a needle must lie on one line")  # a hit's line is found around it
        self.engine = "hyperscan" if (use_hyperscan and hyperscan is not None) else "find"
        self._single_needles = [(needle,) for needle in self.needles]
        self._local = threading.local()  # a Hyperscan database owns scratch space: one per thread
        self._stop_ids: dict[frozenset[bytes], frozenset[int]] = {}  # lines_until's needles, as indexes

    def lines(self, data: bytes, start: int = 0) -> list[Span]:
        """Every line from ``start`` on that holds a needle, in order, with its needles and the
        number of newlines between ``start`` and the line (so its line number)."""
        if self.engine == "hyperscan":
            positions, indexes = self._hits_hyperscan(data, start)
        else:
            positions, indexes = self._hits_find(data, start)
        return self._spans(data, start, len(data), positions, indexes)

    def lines_until(self, data: bytes, start: int, until: frozenset[bytes]) -> tuple[list[Span], int]:
        """``lines`` up to the first line that holds a needle of ``until``, that line included,
        and where the search stopped: that line's end, else ``len(data)``. The scanner's search
        changes at such a line (a skipped kind's first event), so the hits after it were never
        used: a decode log's first block holds ~57k access lines, 45 ms of hits and spans."""
        if self.engine != "hyperscan" or not until:
            return self.lines(data, start), len(data)
        stop_ids = self._stop_ids.get(until)
        if stop_ids is None:
            stop_ids = self._stop_ids[until] = frozenset(i for i, nd in enumerate(self.needles) if nd in until)
        positions, indexes, limit = self._hits_to_first_stop(data, start, stop_ids)
        if limit is None:  # no such line: the scan went to the end, its hits are the answer
            return self._spans(data, start, len(data), positions, indexes), len(data)
        # Hyperscan does not promise to report matches in the order of their ends: the hits of the
        # lines before ``limit`` are taken again by a whole scan of them, not from the cut one.
        positions, indexes = self._hits_hyperscan(data, start, limit)
        spans = self._spans(data, start, limit, positions, indexes)
        for i, span in enumerate(spans):
            if not until.isdisjoint(span[2]):
                return spans[: i + 1], span[1]
        raise AssertionError("the line that stopped the scan holds a needle of until")  # pragma: no cover

    def _spans(self, data: bytes, start: int, end: int, positions: list[int], indexes: list[int]) -> list[Span]:
        if not positions:
            return []
        if end - start >= _VECTOR_MIN_BYTES:
            return self._lines_vectorised(data, start, positions, indexes, end)
        return self._lines_one_by_one(data, start, positions, indexes)

    def _lines_one_by_one(self, data: bytes, start: int, positions: list[int], indexes: list[int]) -> list[Span]:
        hits = sorted(zip(positions, indexes))
        spans: list[Span] = []
        find, rfind, count, n = data.find, data.rfind, data.count, len(data)
        line_end, newlines, counted_to = -1, 0, start
        found: list[bytes] = []
        for pos, index in hits:
            if pos > line_end:
                if found:
                    spans.append((line_start, line_end, tuple(found), newlines))
                line_start = rfind(b"\n", start, pos) + 1 or start
                newlines += count(b"\n", counted_to, line_start)
                counted_to = line_start
                line_end = find(b"\n", pos)
                if line_end < 0:
                    line_end = n
                found = []
            needle = self.needles[index]
            if needle not in found:
                found.append(needle)
        if found:
            spans.append((line_start, line_end, tuple(found), newlines))
        return spans

    def _lines_vectorised(self, data: bytes, start: int, positions: list[int], indexes: list[int],
                          end: int | None = None) -> list[Span]:
        """``_lines_one_by_one`` with every hit's line bounds and number found at once: one
        pass for the block's newlines and a binary search per hit, in numpy. A 4 MB block with
        ~1,800 hits: 1.1 ms, against 2.3 ms for an rfind, find and ``bytes.count`` per hit."""
        import numpy as np  # here: a small input (a tailed file's new lines) need not load it

        hit_at = np.asarray(positions, dtype=np.int64) - start
        needle_of = np.asarray(indexes, dtype=np.int64)
        if not (hit_at[1:] > hit_at[:-1]).all():  # Hyperscan's order is by position already, ties aside
            order = np.lexsort((needle_of, hit_at))  # by position, then needle: the order of a tuple sort
            hit_at, needle_of = hit_at[order], needle_of[order]
        # Only up to ``end`` (the newline ending the last hit's line, or the block's end).
        end = len(data) if end is None else end
        newline_at = np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=end - start, offset=start) == 10)
        line_of = np.searchsorted(newline_at, hit_at)  # newlines before the hit: a needle holds none
        # Line i runs from after newline i-1 to newline i; the ends stand for the block's edges.
        edges = np.concatenate(([-1], newline_at, [end - start])) + start
        line_starts = (edges[line_of] + 1).tolist()
        line_ends = edges[line_of + 1].tolist()
        needles, singles = self.needles, self._single_needles
        if not (line_of[1:] == line_of[:-1]).any():  # one needle a line, the common case: built in C
            return list(zip(line_starts, line_ends, [singles[i] for i in needle_of.tolist()], line_of.tolist()))
        spans: list[Span] = []
        last_line = -1
        for line, line_start, line_end, index in zip(line_of.tolist(), line_starts, line_ends, needle_of.tolist()):
            if line != last_line:
                spans.append((line_start, line_end, singles[index], line))
                last_line = line
            elif needles[index] not in spans[-1][2]:
                spans[-1] = (line_start, line_end, spans[-1][2] + (needles[index],), line)
        return spans

    def needles_in(self, line: bytes) -> tuple[bytes, ...]:
        return tuple(nd for nd in self.needles if nd in line)

    def _hits_find(self, data: bytes, start: int) -> tuple[list[int], list[int]]:
        positions: list[int] = []
        indexes: list[int] = []
        find = data.find
        for index, needle in enumerate(self.needles):
            pos = find(needle, start)
            while pos >= 0:
                positions.append(pos)
                indexes.append(index)
                pos = find(needle, pos + len(needle))
        return positions, indexes

    def _database(self):
        db = getattr(self._local, "db", None)
        if db is None:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            patterns = [regex.escape(n, literal_spaces=True) for n in self.needles]
            db.compile(expressions=patterns, ids=list(range(len(patterns))), elements=len(patterns))
            self._local.db = db
        return db

    def _hits_hyperscan(self, data: bytes, start: int, end: int | None = None) -> tuple[list[int], list[int]]:
        positions: list[int] = []
        indexes: list[int] = []
        add_position, add_index = positions.append, indexes.append
        offset = start - 1

        def on_match(index: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            # Hyperscan reports where a match ends; any byte of the needle lies on its line.
            add_position(offset + to)
            add_index(index)

        # A view, not a copy: a block is searched from several starts when its search stops early.
        self._database().scan(memoryview(data)[start:end] if start or end is not None else data,
                              match_event_handler=on_match)
        return positions, indexes

    def _hits_to_first_stop(self, data: bytes, start: int,
                            stop_ids: frozenset[int]) -> tuple[list[int], list[int], int | None]:
        """Scan from ``start``, stopping past the line of the first hit of ``stop_ids`` to be
        reported: the hits seen, and the newline that ends that line (the block's end if none),
        or None when no needle of ``stop_ids`` is there (the hits are then all of them)."""
        positions: list[int] = []
        indexes: list[int] = []
        add_position, add_index = positions.append, indexes.append
        offset, n, find = start - 1, len(data), data.find
        limit: int | None = None

        def on_match(index: int, _from: int, to: int, _flags: int, _ctx: object) -> bool:
            nonlocal limit
            position = offset + to
            if limit is not None:
                return position > limit  # True ends the scan
            add_position(position)
            add_index(index)
            if index in stop_ids:
                line_end = find(b"\n", position)
                limit = n if line_end < 0 else line_end
            return False

        try:
            self._database().scan(memoryview(data)[start:] if start else data, match_event_handler=on_match)
        except hyperscan.ScanTerminated:
            pass
        return positions, indexes, limit
