"""What the sources layer emits: blocks of complete lines, /metrics scrapes, and notices about sources."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

NOTICE_KINDS = frozenset(
    {
        "opened",
        "missing",
        "truncated",
        "rotated",
        "deleted",
        "renamed",  # renamed away by a rotation whose new file is not there yet
        "recreated",
        "error",
        "line_capped",
        "metrics_file",
        "not_a_file",
        "down",  # a remote source (URL, ssh, Prometheus) failed, or fails now for another cause; retried
        "up",  # a remote source is reachable again
        "wrapped",  # a log whose lines a terminal had cut: the pieces were rejoined
        "undecodable",  # lines of a log that are not valid UTF-8: read with U+FFFD for their bad bytes
        "unrecognised",  # a file of the run with no line pdwatch recognises: left out
        "info",  # what pdwatch made of a source: a scrape joined to an endpoint, a page with nothing to read
    }
)


# Notices that say a finished run's input could not be read (its command then exits 2).
READ_FAILURES = frozenset({"missing", "error", "not_a_file"})


class Labels(Mapping[str, str]):
    """A Prometheus target's labels (``job``, ``instance``, ... all its series share): read-only,
    hashable and picklable (a ``MappingProxyType`` is not), so one instance is shared by every
    block and event of a target."""

    __slots__ = ("_labels",)

    def __init__(self, labels: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        self._labels = dict(labels)

    def __getitem__(self, key: str) -> str:
        return self._labels[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._labels)

    def __len__(self) -> int:
        return len(self._labels)

    def __hash__(self) -> int:
        return hash(frozenset(self._labels.items()))

    def __repr__(self) -> str:
        return f"Labels({self._labels!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Labels, (self._labels,)


@dataclass(frozen=True, slots=True)
class LineBlock:
    source: str  # path as given / as the glob expanded it, or "-" for stdin
    first_line_no: int  # 1-based line number of the first line in `data`, within this generation
    data: bytes  # complete lines, each ending in b"\n" -- except a stream's final line at its end
    generation: int  # 0 at first open; +1 per truncation / rotation / re-creation


@dataclass(frozen=True, slots=True)
class ScrapeBlock:
    source: str  # the URL, normalised: http://host:port/metrics
    scrape_no: int  # 1-based number of the attempt to scrape this URL (the events' line_no)
    ts: datetime  # when the response arrived, UTC
    text: str  # the Prometheus exposition, already checked to parse


@dataclass(frozen=True, slots=True)
class SampleBlock:
    """One scrape of one target as a Prometheus server stored it: the samples pdwatch maps."""

    source: str  # the target, named by its server and labels: prom+http://prom:9090{instance="...",job="..."}
    scrape_no: int  # 1-based count of this target's scrapes read (the events' line_no)
    ts: datetime  # when Prometheus scraped it (its samples' timestamp), UTC
    samples: list[tuple[str, dict[str, str], float]]  # (sample name, labels, value)
    role: tuple[str, str] | None = None  # (role, which label said so), on a target's first block
    # The target's labels (those all its series share, which ``source`` renders): its events carry
    # them, and the deployment model names and matches the endpoint by them, not by ``source``.
    labels: Labels = Labels()


@dataclass(frozen=True, slots=True)
class SourceNotice:
    source: str
    kind: str  # one of NOTICE_KINDS
    message: str  # one human-readable line, starting with "<source>: "


def capped_notice(source: str, cut_lines: int, cut_bytes: int, cap: int) -> SourceNotice:
    return SourceNotice(
        source,
        "line_capped",
        f"{source}: {cut_lines} line(s) longer than {cap} bytes cut so far "
        f"({cut_bytes} bytes dropped)",
    )


def reading_notices(source: str, *, wrap_widths: tuple[int, ...] = (), rejoined: int = 0,
                     undecodable: int = 0) -> list[SourceNotice]:
    """What a log's reading found once it is read: lines a terminal had cut at ``wrap_widths``
    columns (``rejoined`` pieces read as the rest of the line before them; such a file is read
    line by line, not in parallel: a line's pieces may fall on either side of a block's edge),
    and ``undecodable`` lines that are not valid UTF-8."""
    notices = []
    if rejoined:
        at = " or ".join(map(str, wrap_widths)) or "a fixed width"
        notices.append(SourceNotice(source, "wrapped", f"{source}: lines cut at {at} columns by a terminal: {rejoined} "
                                                       f"piece(s) rejoined to the line before them (read line by line)"))
    if undecodable:
        notices.append(SourceNotice(source, "undecodable", f"{source}: {undecodable} line(s) not valid UTF-8: their "
                                                           f"bad bytes are read as U+FFFD"))
    return notices
