#!/usr/bin/env python3
"""What ``pdwatch watch`` costs left open on a big job: CPU and RSS at the logs' own pace.

Why: an operator leaves the dashboard open on a login node that also runs their shell. The soak
(``bench_soak.py``) grows logs 100x faster than a job writes them, which says how memory grows over
a week but not what a watch costs at the pace a real job logs: there every refresh finds a few new
lines from a few of the 72 engines, and what a refresh recomputes decides the CPU.

What it does, in one run:

1. takes the soak's staged simulation (``bench_soak.py``'s, made once if missing: 8 prefill + 64
   decode engines, one per srt-slurm worker log, plus the Dynamo frontend's; engines' stats lines
   10 s apart, each engine on its own phase as real engines are);
2. writes the first ``--warm-hours`` (1) log-hours of every file at once, starts ``pdwatch watch
   --headless --jsonl`` (a), the dashboard on a real pseudo-terminal (b) and ``tail -F`` on them,
   and waits until each has read them (its CPU idle);
3. then appends each following line at its own time stamp, the log clock ``--pace`` (1) times
   the wall clock, for ``--seconds`` (120) of wall time, and prints each one's CPU over that span
   as a share of one core, its CPU seconds, and its RSS before and after.

Quick check: ``python bench/bench_watch_pace.py --prefill 1 --decode 3 --stage-hours 0.5
--warm-hours 0.2 --seconds 10``. A benchmark, not a test: it prints figures; compare within a run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import bench_soak as soak  # noqa: E402  (the staged simulation and the watchers are the soak's)

_CLOCK = re.compile(rb"(\d\d):(\d\d):(\d\d)")


def timed_lines(chunk: bytes) -> list[tuple[int, bytes]]:
    """``chunk``'s lines with their time of day in seconds (a line with none: its predecessor's)."""
    out: list[tuple[int, bytes]] = []
    last = -1
    for line in chunk.splitlines(keepends=True):
        m = _CLOCK.search(line, 0, 80)
        if m:
            last = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))
        out.append((last, line))
    return out


def schedule(stage: Path, names: list[str], lo: list[int], hi: list[int]) -> list[tuple[float, int, bytes]]:
    """Every line between each file's ``lo`` and ``hi`` offsets as (log seconds from the first
    stamped line, file number, bytes), in time order: what a job writes, line by line."""
    per_file = []
    for i, name in enumerate(names):
        with open(stage / "logs" / name, "rb") as fh:
            fh.seek(lo[i])
            per_file.append(timed_lines(fh.read(hi[i] - lo[i])))
    stamps = [t for lines in per_file for t, _ in lines if t >= 0]
    if not stamps:
        return []
    first = min(stamps)
    merged = []
    for i, lines in enumerate(per_file):
        prev = 0.0
        for t, line in lines:
            at = prev if t < 0 else float((t - first) % 86400)
            at = prev if at > 43200 else max(at, prev)  # a day's wrap, or a line stamped a second early
            merged.append((at, i, line))
            prev = at
    merged.sort(key=lambda m: (m[0], m[1]))  # stable: a file's lines keep their order
    return merged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefill", type=int, default=8, help="prefill engines, one per log (default 8)")
    ap.add_argument("--decode", type=int, default=64, help="decode engines, one per log (default 64)")
    ap.add_argument("--stage-hours", type=float, default=6.0,
                    help="log-hours of the staged simulation used (default 6, the soak's)")
    ap.add_argument("--warm-hours", type=float, default=1.0, help="log-hours written before measuring (default 1)")
    ap.add_argument("--seconds", type=float, default=120.0, help="wall seconds measured (default 120)")
    ap.add_argument("--pace", type=float, default=1.0, help="log seconds per wall second (default 1: the job's own)")
    ap.add_argument("--no-dashboard", action="store_true", help="headless watch and tail -F only")
    ap.add_argument("--pty-size", default="40x120", help="dashboard terminal ROWSxCOLS (default 40x120)")
    ap.add_argument("--out-dir", default=str(BENCH_DIR / "out"), help="where the files go (default bench/out)")
    args = ap.parse_args(argv)
    if args.warm_hours * 3600 + args.seconds * args.pace > args.stage_hours * 3600:
        ap.error("--warm-hours plus the measured span must fit in --stage-hours")

    stage_args = argparse.Namespace(prefill=args.prefill, decode=args.decode, hours=args.stage_hours,
                                    cc=32 * args.decode, style="vllm", noise="quiet", seed=34)
    out = Path(args.out_dir)
    stage = out / soak.stage_key(stage_args)
    if not (stage / "meta.json").exists():
        soak.say(f"simulating {args.prefill + args.decode} engines for {args.stage_hours:g} log-hours (once)")
        soak.simulate(stage_args, stage)
    import numpy as np
    meta = json.loads((stage / "meta.json").read_text())
    names: list[str] = meta["files"]
    index = np.fromfile(stage / "index.bin", dtype=np.int64).reshape(-1, meta["index_cols"])
    warm_row = int(np.searchsorted(index[:, 0], args.warm_hours * 3.6e6))
    end_row = min(int(np.searchsorted(index[:, 0], (args.warm_hours * 3600 + args.seconds * args.pace + 10) * 1000)),
                  len(index) - 1)
    lo = [int(x) for x in index[warm_row, 1:]]
    hi = [int(x) for x in index[end_row, 1:]]
    lines = schedule(stage, names, lo, hi)

    run_dir = out / f"pace-{os.getpid()}"
    folder = run_dir / "outputs" / soak.JOB / "logs"
    folder.mkdir(parents=True)
    for name, size in zip(names, lo):
        with open(stage / "logs" / name, "rb") as src, open(folder / name, "wb") as dst:
            dst.write(src.read(size))
    fds = [os.open(folder / n, os.O_WRONLY | os.O_APPEND) for n in names]
    rows_, cols_ = (int(x) for x in args.pty_size.lower().split("x"))
    procs: dict[str, int] = {}
    headless = dashboard = tail = None
    try:
        headless = soak.Headless(folder, None, 0)
        procs["headless"] = headless.pid
        if not args.no_dashboard:
            dashboard = soak.Dashboard(folder, rows_, cols_, [])
            procs["dashboard"] = dashboard.pid
        tail = subprocess.Popen(["tail", "-F", "-q", "-n", "0", *[str(folder / n) for n in names]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs["tail -F"] = tail.pid
        time.sleep(5)
        for name, pid in procs.items():
            waited = soak.wait_caught_up(pid)
            soak.say(f"{name} read the first {args.warm_hours:g} log-hour(s) ({waited:.0f} s)")
        before = {n: (soak.rss_mb(p), soak.cpu_s(p)) for n, p in procs.items()}
        w0 = time.monotonic()
        span = args.seconds * args.pace
        written = 0
        for at, i, line in lines:
            if at > span:
                break
            wait = w0 + at / args.pace - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            os.write(fds[i], line)
            written += 1
        left = w0 + args.seconds - time.monotonic()
        if left > 0:
            time.sleep(left)
        wall = time.monotonic() - w0
        after = {n: (soak.rss_mb(p), soak.cpu_s(p)) for n, p in procs.items()}
    finally:
        for fd in fds:
            os.close(fd)
        if headless is not None:
            headless.stop()
        if dashboard is not None:
            dashboard.stop()
        if tail is not None:
            tail.terminate()
            tail.wait()
    print(f"pdwatch watch at {args.pace:g}x the logs' pace: {meta['topology']} ({args.prefill + args.decode} engines, "
          f"{len(names)} files incl. the frontend), after {args.warm_hours:g} log-hour(s) written at once")
    print(f"{written} lines appended over {wall:.0f} s of wall time ({written / wall:.1f} lines/s); "
          f"{os.cpu_count()} CPUs; {soak.uptime_line()}")
    print(f"\n{'':10} {'CPU % of a core':>16} {'CPU s':>8} {'RSS MB before':>14} {'RSS MB after':>13}")
    for name in procs:
        cpu = after[name][1] - before[name][1]
        print(f"{name:10} {100 * cpu / wall:16.1f} {cpu:8.1f} {before[name][0]:14.1f} {after[name][0]:13.1f}")
    shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
