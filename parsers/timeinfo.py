"""Resolve log timestamps to timezone-aware datetimes, one resolver per source.

vLLM prints ``MM-DD HH:MM:SS`` in the process's local time with no year. The year
comes from, in order: ``--year`` (explicit), a year seen in the same file (Dynamo,
Ray and container timestamps carry one), the file's modification time (a log is
never newer than its mtime), else the current year. Across a new year the month
drops (12 -> 01): the year then moves forward, never back. vLLM's local time is
taken as UTC unless a zone is given.
"""

from __future__ import annotations

from datetime import datetime, timezone, tzinfo
from zoneinfo import ZoneInfo

import orjson
import regex

_YEAR_IN_TEXT = regex.compile(rb"(?<!\d)(20\d\d)-(0[1-9]|1[0-2])-([0-3]\d)[T ]\d\d:\d\d")


def zone(name: str | None) -> tzinfo:
    """``None``/``UTC`` -> UTC; else an IANA zone name. Raises ValueError for unknown names."""
    if not name or name.upper() in {"UTC", "Z"}:
        return timezone.utc
    try:
        return ZoneInfo(name)
    except Exception as exc:  # ZoneInfoNotFoundError, ValueError for malformed keys
        raise ValueError(f"unknown time zone {name!r}") from exc


def year_hint_from_bytes(data: bytes) -> tuple[int, int] | None:
    """(year, month) of the first dated timestamp in ``data``, if any."""
    m = _YEAR_IN_TEXT.search(data)
    return (int(m[1]), int(m[2])) if m else None


_STAMPS_REMEMBERED = 256  # per resolver (per source): cleared past this

class TimeResolver:
    def __init__(self, *, year: int | None = None, tz: tzinfo | None = None,
                 mtime: float | None = None, now: datetime | None = None) -> None:
        self._explicit_year = year
        self._tz = tz or timezone.utc
        self._mtime = datetime.fromtimestamp(mtime, self._tz) if mtime is not None else None
        self._now = now
        self._seen: tuple[int, int] | None = None  # (year, month) read from the file
        self._year: int | None = None  # year currently applied to vLLM stamps
        self._last_month: int | None = None
        # Stamps already read, for the lines that share one (a stats interval's); a log's stamps only
        # move forward, so a few hundred do: one resolver a source, and a week-long watch reads many.
        self._cache: dict[str, datetime | None] = {}
        # ``pdwatch parse``'s direct JSON lines (see ``fastlane``): a stamp as ``_jsonl_bytes`` writes it.
        self._json_cache: dict[bytes, bytes] = {}
        self._valid_seconds: set[bytes] = set()  # ``YYYY-MM-DDTHH:MM:SS`` heads that ``utc_iso`` accepted

    def observe_year(self, year: int, month: int) -> None:
        """A dated timestamp was seen in this source; it anchors vLLM's year-less stamps."""
        if self._explicit_year is None and self._seen is None:
            self._seen = (year, month)

    def state(self) -> tuple:
        return (self._seen, self._year, self._last_month)

    def restore(self, state: tuple) -> None:
        self._seen, self._year, self._last_month = state
        self._cache.clear()
        self._json_cache.clear()
        self._valid_seconds.clear()

    def _advance(self, month: int) -> None:
        """The year of a vLLM stamp of ``month``, which follows the log's months."""
        if self._year is None:
            self._year = self._initial_year(month)
        elif self._last_month is not None and month < self._last_month and self._last_month - month >= 6:
            # 12 -> 01: a new year began while the log ran.
            self._year += 1
            self._cache.clear()
            self._json_cache.clear()
        self._last_month = month

    def vllm(self, month_day: str, clock: str) -> datetime | None:
        self._advance(int(month_day[:2]))
        key = month_day + " " + clock
        ts = self._cache.get(key)
        if ts is None and key not in self._cache:
            ts = self._build(self._year, month_day, clock)
            if len(self._cache) > _STAMPS_REMEMBERED:
                self._cache.clear()
            self._cache[key] = ts
        return ts

    def vllm_json(self, month_day: bytes, hms: bytes, frac: bytes | None) -> bytes:
        """``vllm`` as the JSON value ``pdwatch parse`` writes for it, from a lane's raw groups.
        A stats interval's lines share their stamp: one dict hit each, no datetime."""
        self._advance(int(month_day[:2]))
        key = month_day + hms + frac if frac else month_day + hms  # fixed widths: unambiguous
        json = self._json_cache.get(key)
        if json is None:
            clock = hms.decode() + "." + frac.decode() if frac else hms.decode()
            json = _json_stamp(self._build(self._year, month_day.decode(), clock))
            if len(self._json_cache) > _STAMPS_REMEMBERED:
                self._json_cache.clear()
            self._json_cache[key] = json
        return json

    def utc_iso_json(self, text: bytes) -> bytes:
        """``utc_iso`` as the JSON value ``pdwatch parse`` writes for it. The common stamp,
        ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` with a non-zero fraction, is written as orjson writes
        the datetime (``...ffffff+00:00``) once its second is known to be valid."""
        if len(text) == 27 and text[-7:-1] != b"000000" and text[:19] in self._valid_seconds:
            return b'"' + text[:26] + b'+00:00"'
        ts = self.utc_iso(text.decode())
        if ts is None:
            return b"null"
        if len(self._valid_seconds) > _STAMPS_REMEMBERED:
            self._valid_seconds.clear()
        self._valid_seconds.add(text[:19])
        return _json_stamp(ts)

    def iso(self, text: str) -> datetime | None:
        """Parse an ISO 8601 stamp (``Z``, offset, or naive = this resolver's zone)."""
        try:
            ts = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
        except ValueError:
            return None
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=self._tz)
        self.observe_year(ts.year, ts.month)
        return ts

    def utc_iso(self, text: str) -> datetime | None:
        """``iso`` for a stamp of ``YYYY-MM-DDTHH:MM:SS[.frac]Z`` form (a lane matched it): Python
        >= 3.11 reads the ``Z`` itself, and once the year is anchored nothing is left to observe."""
        try:
            ts = datetime.fromisoformat(text)
        except ValueError:  # second 61, month 13 ... from a torn line
            return None
        if self._explicit_year is None and self._seen is None:
            self._seen = (ts.year, ts.month)
        return ts

    def _initial_year(self, month: int) -> int:
        if self._explicit_year is not None:
            return self._explicit_year
        if self._seen is not None:
            year, seen_month = self._seen
            # A Dynamo stamp from January and a vLLM stamp from December belong to different years.
            if month - seen_month >= 6:
                return year - 1
            if seen_month - month >= 6:
                return year + 1
            return year
        anchor = self._mtime or self._now or datetime.now(self._tz)
        return anchor.year - 1 if month > anchor.month else anchor.year

    def _build(self, year: int, month_day: str, clock: str) -> datetime | None:
        try:
            hms, _, frac = clock.partition(".")
            micro = int((frac + "000000")[:6]) if frac else 0
            return datetime(year, int(month_day[:2]), int(month_day[3:5]), int(hms[:2]),
                            int(hms[3:5]), int(hms[6:8]), micro, tzinfo=self._tz)
        except ValueError:  # 02-30, 25:00:00 ... from a torn or corrupted line
            return None


def _json_stamp(ts: datetime | None) -> bytes:
    """A stamp as ``pdwatch parse``'s ``_jsonl_bytes`` writes it: a UTC one by orjson, else its isoformat."""
    if ts is None:
        return b"null"
    return orjson.dumps(ts if ts.tzinfo is timezone.utc else ts.isoformat())
