#!/usr/bin/env python3
"""Can a compiled string engine read pdwatch's hot lanes faster than the per-line path? (issue 19)

Measures, per line, on the lane lines of the benchmark logs (``bench_shapes.py`` makes them):
Python's ``re`` as the lanes use it (``fastlane``: the whole line in one ``fullmatch``, groups),
against Polars (Rust ``regex`` crate: ``str.extract_groups``, ``str.contains``) and pyarrow
compute (RE2: ``extract_regex``, ``match_substring_regex``), on the same lines and the same
patterns (the lanes' own, translated: ASCII classes spelled out). Also the operations a bulk
reader would lean on: a literal search, and writing floats as orjson does (a JSON line must be
byte for byte what ``pdwatch parse`` writes).

Not a dependency of pdwatch: ``pip install polars pyarrow`` to run it. What it showed on the
2-core machine (see bench/README.md): neither engine matches a whole line with its groups
faster than ``re`` (Polars 1.6-2.1 us, RE2 1.95 us, ``re`` 1.9 us per router line); without
groups they take 0.3-0.4 us. A Polars bulk reader built on that (validation, literal slicing,
typed columns, JSON assembled in Polars) gave byte-identical output but no faster ``pdwatch
parse`` end to end (1.82-2.21 s against 1.81-1.86 s on the 100 MB dense log), so pdwatch does
not use one.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent


def _rust(pattern: bytes) -> str:
    """A lane's bytes pattern for Rust/RE2 (ASCII classes spelled out, its one lookahead implied)."""
    text = pattern.decode("ascii").replace("(?= |$) ", " ")
    out, i, in_class = [], 0, False
    while i < len(text):
        pair = text[i:i + 2]
        if pair in (r"\d", r"\w"):
            inner = "0-9" if pair == r"\d" else "0-9A-Za-z_"
            out.append(inner if in_class else f"[{inner}]")
            i += 2
            continue
        if text[i] == "\\":
            out.append(pair)
            i += 2
            continue
        in_class = True if text[i] == "[" else False if text[i] == "]" else in_class
        out.append(text[i])
        i += 1
    return "^(?:" + "".join(out) + ")$"


def _no_groups(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        out.append("(?:" if pattern[i] == "(" and not pattern.startswith("(?", i) else pattern[i])
        i += 1
    return "".join(out)


def _named(pattern: str) -> str:  # RE2's extract_regex wants named groups
    out, k, i = [], 0, 0
    while i < len(pattern):
        if pattern[i] == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if pattern[i] == "(" and not pattern.startswith("(?", i):
            out.append(f"(?P<g{k}>")
            k += 1
        else:
            out.append(pattern[i])
        i += 1
    return "".join(out)


def lane_lines(path: Path, needle: bytes, coloured: bool | None) -> list[bytes]:
    from pdwatch.parsers.scanner import _PREFILTER
    data = path.read_bytes()
    spans = _PREFILTER.lines(data)
    return [data[s:e] for s, e, nd, _ in spans
            if nd == (needle,) and (coloured is None or data[s:s + 1] == b"\x1b") == (coloured is not False)]


def timed(fn, n: int, reps: int = 3) -> float:
    best = 1e9
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best / n * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=str(BENCH_DIR / "out" / "shapes"), help="bench_shapes.py's logs")
    args = ap.parse_args(argv)
    try:
        import numpy as np
        import orjson
        import polars as pl
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError as exc:
        print(f"needs polars and pyarrow (pip install polars pyarrow): {exc}", file=sys.stderr)
        return 2
    from pdwatch.parsers import fastlane as F

    logs = Path(args.dir)
    cases = [("router line (dense log)", lane_lines(logs / "dense-100M.log", b"Selected worker: ", True),
              F.WORKER_SELECTED_LANE.dynamo_line),
             ("stats line (mixed log)", lane_lines(logs / "mixed-100M.log", b"Running: ", False),
              F.STATS_LANE.vllm_line)]
    print(f"{'lines':<26}{'n':>8}  {'us per line':>45}")
    print(f"{'':<34}{'re':>8}{'Polars':>9}{'RE2':>8}{'Polars':>9}{'RE2':>8}{'Polars':>9}")
    print(f"{'':<34}{'groups':>8}{'groups':>9}{'groups':>8}{'match':>9}{'match':>8}{'find':>9}")
    for name, lines, compiled in cases:
        n = len(lines)
        buf = b"".join(lines)
        offsets = np.concatenate(([0], np.cumsum([len(x) for x in lines]))).astype(np.int64)
        arr = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(buf)])
        series = pl.from_arrow(arr)
        rust = _rust(compiled.pattern)
        row = [timed(lambda: [compiled.fullmatch(x) for x in lines], n),
               timed(lambda: series.str.extract_groups(rust), n),
               timed(lambda: pc.extract_regex(arr, _named(rust)), n),
               timed(lambda: series.str.contains(_no_groups(rust)), n),
               timed(lambda: pc.match_substring_regex(arr, _no_groups(rust)), n),
               timed(lambda: series.str.contains(" worker", literal=True), n)]
        print(f"{name:<26}{n:8d}" + "".join(f"{x:9.2f}" if k else f"{x:8.2f}" for k, x in enumerate(row)))
    rng = random.Random(1)
    values = [0.0, 1.0, 100.0, 0.1, 0.001, 0.0001, 1e15, 1e16, 2.5e-5, -0.0] + \
        [round(rng.uniform(0, 1e6), rng.randint(0, 6)) for _ in range(200_000)] + [rng.uniform(0, 1) for _ in range(100_000)]
    want = [orjson.dumps(v).decode() for v in values]
    polars_diff = sum(a != b for a, b in zip(pl.Series(values, dtype=pl.Float64).cast(pl.String).to_list(), want))
    arrow_diff = sum(a != b for a, b in zip(pc.cast(pa.array(values, pa.float64()), pa.string()).to_pylist(), want))
    print(f"\nfloats written as orjson writes them, of {len(values):,}: Polars differs on {polars_diff:,}, "
          f"pyarrow on {arrow_diff:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
