#!/usr/bin/env python3
"""Benchmark ``pdwatch parse`` against ``grep -c`` and lnav on the same large mixed log.

Why this shape: the machines are noisy, so absolute numbers mean little; what issue 2
asks for is pdwatch *relative to baselines measured in the same run, on the same file*:

* ``grep -c 'Avg prompt throughput' FILE`` -- the floor: one pass over the bytes, in C;
* ``pdwatch parse FILE --format jsonl > /dev/null`` -- wall time, MB/s, peak RSS;
* ``lnav -n -c ';SELECT count(*) FROM all_logs' FILE`` -- the tool a user would reach
  for, indexing the same file.

For each size the file is made by ``make_mixed_log.py`` (reused if already there), each
tool is run once to warm the page cache and its own start-up, then the three tools are
timed round-robin ``--repeat`` times (median and min reported). The warm-up run of
pdwatch doubles as the correctness check: the number of ``stats`` events it prints must
equal ``grep -c 'Avg prompt throughput'``.

Peak RSS comes from GNU ``/usr/bin/time -f %M`` wrapped around each command (Debian
package ``time``); without it, from ``os.wait4`` on the child, which over-reports (see
``_wrapped``). Sizes and MB are binary: 1 MB = 2**20 bytes.

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.dont_write_bytecode = True  # no __pycache__ in bench/ from importing the sibling script
import make_mixed_log  # noqa: E402  (sibling script)

MIB = 1 << 20
NEEDLE = "Avg prompt throughput"
LNAV_QUERY = ";SELECT count(*) FROM all_logs"
STATS_PREFIXES = (b'{"kind":"stats"', b'{"kind": "stats"')  # orjson's compact form, json's spaced one


@dataclass
class Run:
    seconds: float
    max_rss_mb: float
    stdout: bytes = b""


@dataclass
class Result:
    tool: str
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.seconds for r in self.runs)

    @property
    def best(self) -> float:
        return min(r.seconds for r in self.runs)

    @property
    def rss(self) -> float:
        return max(r.max_rss_mb for r in self.runs)


# --- running one command ------------------------------------------------------------------------

GNU_TIME = "/usr/bin/time"


def _wrapped(cmd: list[str], rss_file: str | None) -> list[str]:
    """Put GNU time in front of ``cmd`` so it reports the child's peak RSS (``%M``, KiB) to a file.

    Why not ``os.wait4`` on our own child: Linux counts the memory a process had *before*
    ``exec`` in its ``ru_maxrss``, and a child forked from this Python process starts with
    our footprint (grep would show ~20 MB). GNU time is a small C program, so the child it
    forks starts tiny. Its own start-up adds about a millisecond to the wall time.
    """
    return [GNU_TIME, "-f", "%M", "-o", rss_file, *cmd] if rss_file else cmd


def _finish(proc: subprocess.Popen, cmd: list[str], err, rss_file: str | None) -> float:
    """Reap ``proc``; return its peak RSS in MB; raise with its stderr if it failed."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        err.seek(0)
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {err.read()[-2000:].decode(errors='replace')}")
    if rss_file:
        with open(rss_file) as fh:
            return int(fh.read().split()[-1]) / 1024
    return usage.ru_maxrss / 1024  # fallback: an upper bound (includes our pre-exec footprint)


def run_once(cmd: list[str], *, capture: bool = False, rss_file: str | None = None) -> Run:
    """Run ``cmd`` once: wall time from ``perf_counter`` around the child, and its peak RSS.

    stdout goes to /dev/null unless ``capture``; stderr goes to a temporary file (a pipe
    could fill up and stall the child while we read stdout), shown if the command fails.
    """
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(_wrapped(cmd, rss_file), stderr=err,
                                stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
        out = proc.stdout.read() if capture else b""
        if capture:
            proc.stdout.close()
        rss = _finish(proc, cmd, err, rss_file)
        seconds = time.perf_counter() - t0
    return Run(seconds, rss, out)


def count_stats_events(cmd: list[str], rss_file: str | None = None) -> tuple[int, Run]:
    """Run pdwatch once, streaming its JSON lines, and count the ``stats`` events."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(_wrapped(cmd, rss_file), stdout=subprocess.PIPE, stderr=err, bufsize=MIB)
        stats = sum(1 for line in proc.stdout if line.startswith(STATS_PREFIXES))
        proc.stdout.close()
        rss = _finish(proc, cmd, err, rss_file)
        seconds = time.perf_counter() - t0
    return stats, Run(seconds, rss)


# --- the tools --------------------------------------------------------------------------------


def pdwatch_command() -> list[str]:
    """The installed ``pdwatch`` script next to this interpreter, else on PATH, else ``-m``."""
    beside = Path(sys.executable).parent / "pdwatch"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("pdwatch")
    return [found] if found else [sys.executable, "-m", "pdwatch"]


def lnav_count(run: Run) -> int:
    """lnav prints a one-column table (``count(*)`` then the number); return the number."""
    lines = [ln.strip() for ln in run.stdout.decode(errors="replace").splitlines() if ln.strip()]
    if not lines or not re.fullmatch(r"\d+", lines[-1]):
        raise RuntimeError(f"lnav did not print a count: {run.stdout[:300]!r}")
    return int(lines[-1])


def file_for(size_label: str, out_dir: Path, seed: int) -> tuple[Path, bool]:
    """Make (or reuse) the mixed log of this size; True when it was made now."""
    size = make_mixed_log.parse_size(size_label)
    path = out_dir / (f"mixed-{size_label}.log" if seed == 1 else f"mixed-{size_label}-s{seed}.log")
    if path.exists() and path.stat().st_size >= size:
        print(f"reusing {path} ({path.stat().st_size / MIB:.0f} MB)", flush=True)
        return path, False
    print(f"writing {path} ...", end=" ", flush=True)
    t0 = time.perf_counter()
    counts = make_mixed_log.write_log(str(path), size, seed, make_mixed_log.parse_start("2026-03-31T18:00:00Z"))
    seconds = time.perf_counter() - t0
    report = make_mixed_log.mix_report(counts, path.stat().st_size, seconds, str(path))
    Path(str(path) + ".mix.txt").write_text(report + "\n")
    print(f"{path.stat().st_size / MIB:.0f} MB in {seconds:.1f} s", flush=True)
    return path, True


# --- one size ---------------------------------------------------------------------------------


@dataclass
class SizeReport:
    label: str
    path: Path
    mb: float
    lines: int
    grep_count: int
    stats_events: int
    lnav_rows: list[int]  # lnav's count(*) from every lnav run (it varies: see README)
    results: dict[str, Result]


def bench_size(label: str, path: Path, repeat: int, use_lnav: bool, rss_file: str | None) -> SizeReport:
    file = str(path)
    mb = path.stat().st_size / MIB
    grep = ["grep", "-c", NEEDLE, file]
    pdwatch = [*pdwatch_command(), "parse", file, "--format", "jsonl"]
    lnav = ["lnav", "-n", "-c", LNAV_QUERY, file]

    print(f"[{label}] warm-up: grep, pdwatch (counting stats events), lnav", flush=True)
    lines = int(run_once(["grep", "-c", "", file], capture=True).stdout)  # also pulls the file into page cache
    grep_count = int(run_once(grep, capture=True).stdout)
    stats_events, _ = count_stats_events(pdwatch, rss_file)
    lnav_rows = [lnav_count(run_once(lnav, capture=True, rss_file=rss_file))] if use_lnav else []

    results = {name: Result(name) for name in ("grep -c", "pdwatch", *(["lnav"] if use_lnav else []))}
    for i in range(repeat):  # round-robin, so a noisy moment hits every tool alike
        results["grep -c"].runs.append(run_once(grep, capture=True, rss_file=rss_file))
        results["pdwatch"].runs.append(run_once(pdwatch, rss_file=rss_file))
        if use_lnav:
            results["lnav"].runs.append(run_once(lnav, capture=True, rss_file=rss_file))
        times = "  ".join(f"{name} {res.runs[-1].seconds:.2f}s" for name, res in results.items())
        print(f"[{label}] run {i + 1}/{repeat}: {times}", flush=True)
    if use_lnav:
        lnav_rows += [lnav_count(run) for run in results["lnav"].runs]
    return SizeReport(label, path, mb, lines, grep_count, stats_events, lnav_rows, results)


# --- report -----------------------------------------------------------------------------------


def table(reports: list[SizeReport]) -> str:
    head = f"{'size':>6}  {'tool':<8} {'median s':>9} {'min s':>8} {'MB/s':>8} {'peak RSS MB':>12} {'x grep':>8} {'x lnav':>8}"
    rows = [head, "-" * len(head)]
    for rep in reports:
        grep = rep.results["grep -c"].median
        lnav = rep.results["lnav"].median if "lnav" in rep.results else None
        for name, res in rep.results.items():
            vs_lnav = f"{res.median / lnav:8.2f}" if lnav else f"{'-':>8}"
            rows.append(f"{rep.label:>6}  {name:<8} {res.median:9.2f} {res.best:8.2f} {rep.mb / res.median:8.1f} "
                        f"{res.rss:12.1f} {res.median / grep:8.1f} {vs_lnav}")
    return "\n".join(rows)


def checks(reports: list[SizeReport]) -> list[str]:
    out = []
    for rep in reports:
        ok = rep.stats_events == rep.grep_count
        lnav = ""
        if rep.lnav_rows:
            lo, hi = min(rep.lnav_rows), max(rep.lnav_rows)
            lnav = f"; lnav all_logs rows {lo if lo == hi else f'{lo}..{hi}'} of {rep.lines} lines"
        out.append(f"[{rep.label}] {rep.mb:.0f} MB, {rep.lines} lines: pdwatch stats events {rep.stats_events} "
                   f"{'==' if ok else '!='} grep -c {rep.grep_count} -> {'OK' if ok else 'MISMATCH'}{lnav}")
    return out


def verdict(reports: list[SizeReport]) -> str:
    parts = []
    if all("lnav" in r.results for r in reports):
        faster = all(r.results["pdwatch"].median < r.results["lnav"].median for r in reports)
        worst = max(r.results["pdwatch"].median / r.results["lnav"].median for r in reports)
        parts.append(f"faster than lnav: {'YES' if faster else 'NO'} (pdwatch/lnav time up to {worst:.2f}x)")
    else:
        parts.append("faster than lnav: not measured (lnav missing)")
    worst_grep = max(r.results["pdwatch"].median / r.results["grep -c"].median for r in reports)
    parts.append(f"within 10x of grep -c: {'YES' if worst_grep <= 10 else 'NO'} (up to {worst_grep:.1f}x)")
    if len(reports) > 1:
        small, large = min(reports, key=lambda r: r.mb), max(reports, key=lambda r: r.mb)
        r0, r1 = small.results["pdwatch"].rss, large.results["pdwatch"].rss
        growth = (r1 - r0) / r0 * 100
        parts.append(f"peak RSS flat ({small.label} -> {large.label}): {'YES' if growth < 10 else 'NO'} "
                     f"({r0:.0f} -> {r1:.0f} MB, {growth:+.1f} %)")
    correct = all(r.stats_events == r.grep_count for r in reports)
    parts.append(f"stats events == grep -c: {'YES' if correct else 'NO'}")
    return "targets: " + "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="500M,1G", help="comma-separated file sizes (default 500M,1G; 100M is a quick run)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per tool and size (default 3)")
    ap.add_argument("--keep", action="store_true", help="keep the log files this run generated (default: delete them)")
    ap.add_argument("--out-dir", default=str(BENCH_DIR / "out"), help="where the logs go (default bench/out)")
    ap.add_argument("--seed", type=int, default=1, help="seed for make_mixed_log (default 1)")
    args = ap.parse_args(argv)

    use_lnav = shutil.which("lnav") is not None
    if not use_lnav:
        print("lnav not found: skipping it (install with: sudo apt-get install lnav)", file=sys.stderr)
    if shutil.which("grep") is None:
        print("grep not found", file=sys.stderr)
        return 2
    if not os.access(GNU_TIME, os.X_OK):
        print(f"{GNU_TIME} not found (install with: sudo apt-get install time); peak RSS falls back to "
              "os.wait4, which includes this script's own footprint", file=sys.stderr)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"pdwatch: {' '.join(pdwatch_command())}; cpus: {os.cpu_count()}; repeat: {args.repeat}", flush=True)

    reports = []
    with tempfile.NamedTemporaryFile(prefix="bench-rss-") as rss:
        rss_file = rss.name if os.access(GNU_TIME, os.X_OK) else None
        for label in [s.strip() for s in args.sizes.split(",") if s.strip()]:
            path, made = file_for(label, out_dir, args.seed)
            try:
                reports.append(bench_size(label, path, args.repeat, use_lnav, rss_file))
            finally:
                if made and not args.keep:
                    path.unlink(missing_ok=True)

    print()
    print(table(reports))
    print()
    for line in checks(reports):
        print(line)
    print(verdict(reports))
    return 0 if all(r.stats_events == r.grep_count for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
