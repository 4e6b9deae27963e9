#!/usr/bin/env python3
"""What would a compiled router-line reader buy ``pdwatch parse`` on an event-dense log? (issue 19)

On a Dynamo frontend at INFO nearly every line is a router line (``Selected worker: ...``), and
``pdwatch parse`` spends most of its CPU matching each one with ``re`` and formatting its JSON
line in Python. This script bounds what any faster reader of those lines could reach, by timing
in one run, on the same file:

* ``parse``: ``pdwatch parse FILE --format jsonl`` as shipped;
* ``floor``: the same command with a router-line block's reading replaced by splitting it into
  lines and writing one fixed JSON line per line (a real router line's, so the output has the
  real one's size). Nothing is matched or read: what is left is the rest of ``parse`` (the
  search, pieces on every core, the workers' output to stdout). A compiled reader's own cost
  would come on top of it;
* ``lnav``: ``lnav -n -c ';SELECT count(*) FROM all_logs' FILE``, the baseline of issue 19.

The floor's output is not pdwatch's (it is checked to have as many lines, and close to as many
bytes): it is a measurement for a decision (shipping compiled code), not a mode of pdwatch.

Usage: ``python bench/bench_router_floor.py [--repeat 5] [FILE]`` (default: the dense log that
``bench_shapes.py`` writes to ``bench/out/shapes/dense-100M.log``). Only the standard library
and pdwatch are used.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.dont_write_bytecode = True
import bench_parse as bp  # noqa: E402  (sibling script)

DEFAULT_FILE = BENCH_DIR / "out" / "shapes" / "dense-100M.log"
FLOOR_ENV = "PDWATCH_BENCH_ROUTER_FLOOR"

# Run as ``python bench_router_floor.py --as-pdwatch ARGS``: pdwatch's CLI with the floor patched
# in before the workers fork (they inherit it).
_CHILD_FLAG = "--as-pdwatch"


def _floor_router_lines(self, data: bytes, pos: int, line_no: int, out: list) -> tuple[int, int]:
    """``LogScanner._router_lines`` with nothing read: one fixed JSON line per line of the block."""
    lines = data[pos:].split(b"\n")
    if lines and not lines[-1]:
        lines.pop()
    fixed = self._router_json % (line_no, b'"2026-12-03T01:11:05.017707+00:00"', b'"INFO"', b"prefill",
                                 b"7858357388210", b"0", b"11.046", b"0", b"1", b"2040")
    out.extend([fixed] * len(lines))
    return len(data), line_no + len(lines)


def _child(argv: list[str]) -> int:
    from pdwatch.parsers import scanner

    scanner.LogScanner._router_lines = _floor_router_lines
    from pdwatch.cli import main
    sys.argv = ["pdwatch", *argv]
    return main()


def _count(cmd: list[str]) -> tuple[int, int]:
    """(lines, bytes) of the command's stdout."""
    with tempfile.TemporaryFile() as out:
        subprocess.run(cmd, stdout=out, stderr=subprocess.DEVNULL, check=True)
        out.seek(0)
        lines = size = 0
        for block in iter(lambda: out.read(1 << 20), b""):
            lines += block.count(b"\n")
            size += len(block)
    return lines, size


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", default=str(DEFAULT_FILE))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    if not os.path.exists(args.file):
        print(f"bench_router_floor: {args.file}: no such file (python bench/bench_shapes.py --shapes dense "
              "writes it)", file=sys.stderr)
        return 2
    parse = [*bp.pdwatch_command(), "parse", args.file, "--format", "jsonl"]
    floor = [sys.executable, str(Path(__file__).resolve()), _CHILD_FLAG, "parse", args.file, "--format", "jsonl"]
    lnav = ["lnav", "-n", "-c", bp.LNAV_QUERY, args.file]
    tools = {"parse": parse, "floor": floor, "lnav": lnav}
    real, fake = _count(parse), _count(floor)  # also the warm-up
    bp.run_once(lnav)
    times: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(args.repeat):  # round-robin: the machine's noise falls on every tool alike
        for name, cmd in tools.items():
            times[name].append(bp.run_once(cmd).seconds)
    lnav_median = statistics.median(times["lnav"])
    print(f"{args.file}: {os.path.getsize(args.file) / bp.MIB:.0f} MB; load average "
          f"{os.getloadavg()[0]:.2f}; medians (min) of {args.repeat} runs, round-robin")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"  {name:<6} {median:6.2f} s ({min(runs):.2f})  {median / lnav_median:5.2f}x lnav")
    print(f"  parse wrote {real[0]:,} lines, {real[1] / bp.MIB:.0f} MB; floor {fake[0]:,} lines, "
          f"{fake[1] / bp.MIB:.0f} MB")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == _CHILD_FLAG:
        sys.exit(_child(sys.argv[2:]))
    sys.exit(main())
