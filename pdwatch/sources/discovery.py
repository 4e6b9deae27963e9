"""Expand command-line path arguments into log files and recorded /metrics scrapes."""

from __future__ import annotations

import glob
import os
import stat

LOG_SUFFIXES = (".out", ".log", ".err", ".txt")
# First-line prefixes of a recorded Prometheus scrape (our recorder writes a "# =====" banner).
METRICS_MARKERS = (b"# =====", b"# HELP", b"# TYPE")
_MAGIC = frozenset("*?[")


def is_raw_prometheus(path: str | os.PathLike[str]) -> bool:
    """srt-slurm's scrape file by its name: ``raw_prometheus*.jsonl`` or ``.jsonl.gz``."""
    name = os.path.basename(os.fspath(path)).lower()
    return name.startswith("raw_prometheus") and name.endswith((".jsonl", ".jsonl.gz"))


def source_of(path: str, endpoint: str) -> str:
    return f"{path}#{endpoint}"


def split_source(source: str) -> tuple[str, str | None]:
    """(file, endpoint) of a raw_prometheus event source; (source, None) for any other source."""
    path, sep, endpoint = source.rpartition("#")
    if sep and endpoint and "=" not in endpoint and is_raw_prometheus(path):
        return path, endpoint
    return source, None


def evidence_source(source: str) -> str:
    """What evidence shows for ``source``: a raw_prometheus record as ``FILE`` (its line says which)."""
    return split_source(source)[0]


def classify_first_bytes(head: bytes) -> str | None:
    """Return "metrics", "log", or None when `head` is too short to tell."""
    if head.startswith(METRICS_MARKERS):
        return "metrics"
    line_done = b"\n" in head
    if line_done or not any(m.startswith(head) for m in METRICS_MARKERS):
        return "log"
    return None  # empty, or a partial first line that could still become a marker


def classify_txt(path: str) -> str | None:
    """Classify a *.txt file by its first line; raises OSError if it can't be read."""
    with open(path, "rb") as f:
        return classify_first_bytes(f.read(64))


def is_txt(path: str) -> bool:
    return path.lower().endswith(".txt")


def _is_regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _dir_logs(path: str) -> list[str]:
    try:
        with os.scandir(path) as it:
            return [
                os.path.join(path, e.name)
                for e in it
                if (e.name.lower().endswith(LOG_SUFFIXES) or is_raw_prometheus(e.name)) and e.is_file()
            ]
    except OSError:
        return []  # unreadable dir: nothing to offer; a later rescan may succeed


def unlistable_dirs(args: list[str]) -> dict[str, str]:
    """Directory arguments that cannot be listed, with the reason (``_dir_logs`` sees them as empty)."""
    problems: dict[str, str] = {}
    for arg in args:
        if arg != "-" and os.path.isdir(arg):
            try:
                with os.scandir(arg):
                    pass
            except OSError as exc:
                problems[arg] = exc.strerror or str(exc)
    return problems


def expand_candidates(args: list[str]) -> list[str]:
    """Paths the args stand for, before .txt classification (sorted, de-duplicated)."""
    found: dict[str, str] = {}  # normalised -> first spelling seen

    def add(p: str) -> None:
        found.setdefault(p if p == "-" else os.path.normpath(p), p)

    for arg in args:
        if arg == "-":
            add(arg)
        elif os.path.isdir(arg):
            for p in _dir_logs(arg):
                add(p)
        elif _is_regular(arg):
            add(arg)  # an existing file wins even if its name holds glob characters
        elif _MAGIC.intersection(arg):
            for m in sorted(glob.glob(arg)):
                if os.path.isdir(m):
                    for p in _dir_logs(m):
                        add(p)
                elif _is_regular(m):
                    add(m)
        else:
            add(arg)  # regular file, or not there yet (follow mode waits for it)
    return sorted(found.values())


def expand_paths(args: list[str]) -> tuple[list[str], list[str]]:
    """Return (log_files, recorded_metrics_files), each sorted and de-duplicated.

    Recorded scrapes are the ``*.txt`` whose first line is a scrape's, and srt-slurm's
    ``raw_prometheus.jsonl[.gz]`` (by name: a folder given holds it in ``logs/`` beside the logs).

    A *.txt that can't be classified yet (empty / unreadable) stays a log candidate;
    SourceSet re-checks it before delivering any of its lines.
    """
    logs: list[str] = []
    metrics: list[str] = []
    for p in expand_candidates(args):
        kind = None
        if p != "-" and is_raw_prometheus(p):
            kind = "metrics"  # srt-slurm's scrapes, one JSON record a line
        elif p != "-" and is_txt(p) and _is_regular(p):
            try:
                kind = classify_txt(p)
            except OSError:
                pass
        (metrics if kind == "metrics" else logs).append(p)
    return logs, metrics
