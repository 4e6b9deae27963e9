#!/usr/bin/env python3
"""A replay's memory when it seeks, again and again, over a long run (issue 34).

A replay reads its files once, then every seek moves the rule clock: forward by evaluating the
rules up to the target, backward by a fresh store and rule engine fed the buffered events again
(``LiveSession.seek``). What an operator does with a day-long run is jump around in it; this
drives a real ``LiveSession`` (no dashboard: the same calls its keys make) through rounds of
seeks (to the end, the start, 3/4, 1/4, 1/2 and the end again), in a child process per input
so each starts from a fresh heap, and prints VmRSS after the files are read, after each round,
the peak (VmHWM), and the seconds per seek. Flat means: the last round's RSS is the first
round's, give or take the allocator's steps.

    python bench/bench_replay_seek.py FOLDER [FOLDER ...] [--rounds 5]

``bench/bench_shapes.py --replay`` runs it on the simulated NVL72 runs (1 h, 8 h, 24 h).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

FRACTIONS = (1.0, 0.0, 0.75, 0.25, 0.5, 1.0)


def vm(field: str) -> float:
    """VmRSS / VmHWM of this process, MB."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return math.nan


def one(folder: str, rounds: int) -> dict:
    from pdwatch.session.live import LiveSession

    t0 = time.perf_counter()
    session = LiveSession([folder], mode="replay", speed=math.inf)
    session.paused = True
    while session.ingest(5000):
        pass
    session.tick(0.0)  # the buffer loads; the clock stands at the logs' first time
    session.run_history.wait()  # the whole run judged (the timeline's), as the dashboard has it
    read_s = time.perf_counter() - t0
    loaded = vm("VmRSS")
    start, end = session.time_range
    per_round, seek_s = [], []
    for _ in range(rounds):
        for f in FRACTIONS:
            t = time.perf_counter()
            session.seek(start + (end - start) * f)
            session.tick(0.0)
            seek_s.append(time.perf_counter() - t)
        per_round.append(vm("VmRSS"))
    session.close()
    return {"folder": folder, "hours": (end - start).total_seconds() / 3600, "read_s": read_s, "loaded_mb": loaded,
            "rounds_mb": per_round, "peak_mb": vm("VmHWM"), "seek_s": sorted(seek_s),
            "findings": len(session.run_history.findings)}


def run(folders: list[str], rounds: int) -> list[dict]:
    out = []
    for folder in folders:
        child = subprocess.run([sys.executable, __file__, "--one", folder, "--rounds", str(rounds)],
                               check=True, capture_output=True, text=True)
        out.append(json.loads(child.stdout.strip().splitlines()[-1]))
    return out


def table(results: list[dict]) -> str:
    lines = [f"{'input':<28}{'log h':>6}{'read s':>8}{'read MB':>9}{'round 1 MB':>11}{'last MB':>9}{'peak MB':>9}"
             f"{'seek p50 s':>11}{'max s':>7}"]
    for r in results:
        s = r["seek_s"]
        lines.append(f"{Path(r['folder']).name:<28}{r['hours']:6.1f}{r['read_s']:8.1f}{r['loaded_mb']:9.0f}"
                     f"{r['rounds_mb'][0]:11.0f}{r['rounds_mb'][-1]:9.0f}{r['peak_mb']:9.0f}"
                     f"{s[len(s) // 2]:11.2f}{s[-1]:7.2f}")
    for r in results:
        first, last = r["rounds_mb"][0], r["rounds_mb"][-1]
        lines.append(f"  {Path(r['folder']).name}: RSS after each round of {len(FRACTIONS)} seeks: "
                     + " ".join(f"{x:.0f}" for x in r["rounds_mb"])
                     + f" MB ({last - first:+.0f} MB from the first round to the last)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # the child: one folder, JSON out
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.folders[0], args.rounds)))
        return 0
    print(table(run(args.folders, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
