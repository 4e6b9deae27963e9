#!/usr/bin/env python3
"""``pdwatch report`` over a whole deployment's logs (~1 GB, 72 engines), next to grep and lnav.

Why: issue 7 asks what a post-mortem costs on a realistic deployment: wall time, peak
memory and MB/s of ``pdwatch report``, with ``grep -c`` and lnav on the same files in the
same run as the yardsticks.

The logs (in ``bench/out/report-SIZE/``, reused when present):

1. ``pdwatch simulate --topology 8xDEP8-1xDEP8`` (8 prefill endpoints of DP8 and one
   decode endpoint of DP8: 72 engines, 10 files with the frontend) for ``--duration``;
2. each file padded to ``SIZE / files`` with realistic Dynamo/vLLM noise from
   ``make_mixed_log.Noise`` (Rust ANSI lines, EngineCore/Worker lines, request logging,
   access and router lines, ...), interleaved in time: the noise lines between two
   simulated lines carry the time of the line before them, so every file stays in time
   order and the report's time range is the simulation's.

Then, after one warm-up of each tool, ``--repeat`` timed runs round-robin of:

* ``grep -c 'Avg prompt throughput' FILES`` (one pass over the bytes: the floor);
* ``pdwatch report FILES --format json`` (stdout to /dev/null);
* ``lnav -n -c ';SELECT count(*) FROM all_logs' FILES`` (lnav indexing the files).

Peak RSS of each child is GNU time's ``%M`` (see ``bench_parse.py`` for why not
``wait4``): for ``pdwatch report``, which reads the files on every core, that is its
largest process (the parent; each worker is forked from it and shares its pages), not
the sum. CPU s is user + system time of the child and its workers (from
``RUSAGE_CHILDREN``): on a shared machine it says more than wall time. The running
helpers are ``bench_parse.py``'s. MB = 2^20 bytes.

Quick check: ``python bench/bench_report.py --size 50M --duration 10m --repeat 1``.
The 1 GB run (the default) takes several minutes on 2 cores; take figures on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from calendar import timegm
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.dont_write_bytecode = True

import bench_parse as bp  # noqa: E402  (how a child is run and measured)
import make_mixed_log as mml  # noqa: E402  (the noise generators)

MIB = 1 << 20
TOPOLOGY = "8xDEP8-1xDEP8"
_ISO = re.compile(rb"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?")
_MD = re.compile(rb"\b(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")


def line_time(line: bytes, year: int) -> float | None:
    """POSIX time of a simulated line (Dynamo ISO, or vLLM's year-less UTC stamp)."""
    m = _ISO.search(line, 0, 200)
    if m:
        y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
        frac = float(b"0." + m.group(7)) if m.group(7) else 0.0
        return timegm((y, mo, d, h, mi, s)) + frac
    m = _MD.search(line, 0, 200)
    if m:
        mo, d, h, mi, s = (int(x) for x in m.groups())
        return float(timegm((year, mo, d, h, mi, s)))
    return None


def pad_file(src: Path, dst: Path, target: int, noise: mml.Noise, seed_year: int) -> int:
    """Copy ``src`` to ``dst`` with noise lines after its lines until ``dst`` is ~``target`` bytes."""
    import random

    src_size = src.stat().st_size
    with open(src, "rb") as fh:
        lines = fh.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    makers = [getattr(noise, name) for name, _ in mml.Noise.KINDS]
    weights = [w for _, w in mml.Noise.KINDS]
    rng: random.Random = noise.rng
    clock = mml.Clock()
    iso, md = clock.stamps(time.time())
    sample = [m(iso, md) for m in rng.choices(makers, weights=weights, k=2000)]
    mean = sum(len(x.encode()) + 1 for x in sample) / len(sample)  # bytes per noise line
    per_line = max(0.0, (target - src_size) / mean / max(1, len(lines)))
    carry, t = 0.0, None
    written = 0  # bytes so far, the batch included
    tmp = dst.with_suffix(dst.suffix + ".part")
    with open(tmp, "wb", buffering=4 * MIB) as out:
        batch: list[bytes] = []
        for line in lines:
            batch.append(line)
            written += len(line) + 1
            t = line_time(line, seed_year) or t
            if t is None or written >= target:
                continue
            carry += per_line
            k, carry = int(carry), carry - int(carry)
            if k:
                iso, md = clock.stamps(t)
                extra = [m(iso, md).encode() for m in rng.choices(makers, weights=weights, k=k)]
                batch += extra
                written += sum(len(x) + 1 for x in extra)
            if len(batch) >= 20_000:
                out.write(b"\n".join(batch) + b"\n")
                batch.clear()
        if batch:
            out.write(b"\n".join(batch) + b"\n")
    os.replace(tmp, dst)
    return written


def fill_level(sizes: list[int], total: int) -> int:
    """The size L to pad the small files up to so that sum(max(size, L)) == total (water-filling:
    the frontend's simulated log may already be bigger than its share)."""
    rest, n = total, len(sizes)
    for k, size in enumerate(sorted(sizes, reverse=True)):
        level = rest // (n - k)
        if size <= level:
            return level
        rest -= size
    return 0


def make_logs(folder: Path, size: int, duration: str, seed: int) -> list[Path]:
    done = folder / "DONE"
    if done.exists():
        paths = sorted(folder.glob("*.out"))
        print(f"reusing {folder} ({sum(p.stat().st_size for p in paths) / MIB:.0f} MB, {len(paths)} files)", flush=True)
        return paths
    shutil.rmtree(folder, ignore_errors=True)
    sim = folder.with_name(folder.name + ".sim")
    shutil.rmtree(sim, ignore_errors=True)
    t0 = time.perf_counter()
    subprocess.run([*bp.pdwatch_command(), "simulate", "--out", str(sim), "--topology", TOPOLOGY,
                    "--duration", duration, "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    sources = sorted(sim.glob("*.out"))
    folder.mkdir(parents=True)
    import random
    noise = mml.Noise(random.Random(seed))
    year = time.gmtime(sources[0].stat().st_mtime).tm_year  # the simulator stamps "now"
    level = fill_level([src.stat().st_size for src in sources], size)
    for src in sources:
        pad_file(src, folder / src.name, max(level, src.stat().st_size), noise, year)
    shutil.rmtree(sim)
    done.write_text("")
    paths = sorted(folder.glob("*.out"))
    print(f"made {folder}: {sum(p.stat().st_size for p in paths) / MIB:.0f} MB in {len(paths)} files "
          f"({time.perf_counter() - t0:.0f} s)", flush=True)
    return paths


def children_cpu() -> float:
    """User + system CPU seconds of the children waited for so far (pdwatch's workers included:
    it waits for them). On a shared machine CPU time says more than wall time."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G", help="total size of the logs, binary units (default 1G; 50M: quick check)")
    ap.add_argument("--duration", default="1h", help="simulated load duration (default 1h)")
    ap.add_argument("--repeat", type=int, default=1, help="timed runs per tool (default 1)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir", default=str(BENCH_DIR / "out"), help="where the logs go (default bench/out)")
    ap.add_argument("--delete", action="store_true", help="delete the logs afterwards (default: keep for reuse)")
    args = ap.parse_args(argv)

    size = mml.parse_size(args.size)
    folder = Path(args.out_dir) / f"report-{args.size}-{args.duration}-s{args.seed}"
    paths = make_logs(folder, size, args.duration, args.seed)
    files = [str(p) for p in paths]
    total = sum(p.stat().st_size for p in paths)
    lines = sum(1 for p in paths for _ in open(p, "rb"))

    rss_file = None
    if os.path.exists(bp.GNU_TIME):
        rss_file = tempfile.NamedTemporaryFile(prefix="rss-", delete=False).name
    else:
        print(f"note: {bp.GNU_TIME} missing: peak RSS from wait4 (over-reports)", file=sys.stderr)
    tools = {
        "grep -c": ["grep", "-c", bp.NEEDLE, *files],
        "pdwatch report": [*bp.pdwatch_command(), "report", *files, "--format", "json"],
    }
    if shutil.which("lnav"):
        tools["lnav"] = ["lnav", "-n", "-c", bp.LNAV_QUERY, *files]
    else:
        print("note: lnav not found, skipped (sudo apt-get install lnav)", file=sys.stderr)

    # Warm-up (page cache), and the checks: pdwatch's report, grep's counts, lnav's rows.
    print("warm-up ...", flush=True)
    load_before = os.getloadavg()[0]
    warm = {name: bp.run_once(cmd, capture=True, rss_file=rss_file) for name, cmd in tools.items()}
    results: dict[str, list] = {name: [] for name in tools}
    cpu: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(args.repeat):
        for name, cmd in tools.items():
            before = children_cpu()
            results[name].append(bp.run_once(cmd, rss_file=rss_file))
            cpu[name].append(children_cpu() - before)
    if rss_file:
        os.unlink(rss_file)

    grep_count = sum(int(x.rsplit(b":", 1)[-1]) for x in warm["grep -c"].stdout.split())
    report = json.loads(warm["pdwatch report"].stdout)
    engines = sum(len(e["engines"]) for e in report["deployment"]["endpoints"])
    lnav_rows = bp.lnav_count(warm["lnav"]) if "lnav" in warm else None

    print(f"\n{total / MIB:.0f} MB in {len(files)} files, {lines:,} lines, topology {TOPOLOGY} "
          f"({engines} engines in the report), {os.cpu_count()} CPUs, "
          f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'tool':<16}{'median s':>10}{'min s':>9}{'MB/s':>9}{'CPU s':>8}{'peak RSS MB':>13}{'x grep':>8}{'x lnav':>8}")
    med = {n: sorted(r.seconds for r in rs)[len(rs) // 2] for n, rs in results.items()}
    for name, runs in results.items():
        m = med[name]
        rss = max(r.max_rss_mb for r in runs + [warm[name]])
        x_lnav = f"{m / med['lnav']:8.2f}" if "lnav" in med else f"{'-':>8}"
        cpu_s = sorted(cpu[name])[len(cpu[name]) // 2]
        print(f"{name:<16}{m:10.2f}{min(r.seconds for r in runs):9.2f}{total / MIB / m:9.1f}{cpu_s:8.2f}{rss:13.1f}"
              f"{m / med['grep -c']:8.1f}{x_lnav}")
    print(f"\nchecks: grep -c stats lines {grep_count:,}; report: {len(report['findings'])} findings "
          f"({', '.join(sorted({f['rule'] for f in report['findings']})) or 'none'}), "
          f"TPS/GPU {report['summary']['tps_per_gpu']}"
          + (f"; lnav all_logs rows {lnav_rows:,} of {lines:,} lines" if lnav_rows is not None else ""))
    if args.delete:
        shutil.rmtree(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main())
