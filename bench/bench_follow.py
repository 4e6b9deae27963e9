#!/usr/bin/env python3
"""Live follow of many growing files: pdwatch's CPU while idle and under load, and latency.

Why: issue 7 asks what ``pdwatch watch`` costs while it follows a deployment: idle CPU
under 2 % of one core, and a stats line visible within 500 ms at the default refresh.

What it does, in one run:

1. makes ``--files`` (64) logs in ``bench/out/follow-*/``, named like srt-slurm names
   them (half prefill, half decode workers, one engine each), each starting with a few
   stats lines so every endpoint exists;
2. starts pdwatch in a child process: the loop of ``pdwatch watch --headless`` itself
   (``pdwatch.commands.watch.run_headless`` on a ``LiveSession``, default refresh
   0.5 s), with ``tick`` wrapped to note when each stats line becomes visible in the
   snapshot (the engine rows of the session's snapshot); and, as the baseline on the
   same files at the same time, ``tail -F`` (output to /dev/null);
3. **idle** (``--idle`` s, >= 20): nothing is written; CPU of each process, as % of one
   core, from /proc/PID/stat (user + system);
4. **load** (``--load`` s): this script writes ``--rate`` (10,000) lines/s in total
   across the files: vLLM stats lines (one per file every ``--stats-every`` s) and
   realistic Dynamo/vLLM noise from ``make_mixed_log.Noise``; CPU again, and the rate
   reached;
5. **latency**: every stats line carries a marker in its prompt throughput
   (``900000 + n`` tokens/s); the writer notes ``CLOCK_MONOTONIC`` after the line is
   flushed, the child when a tick's snapshot first shows it. p50/p95/max over the
   markers seen (a marker overwritten by the next line of the same engine before a tick
   is not seen; the count is printed). Also during a **trickle** phase (stats lines
   only, ``--trickle`` s), closer to a real deployment's rate.

The figures depend on the machine and on what else runs on it; compare only within one
run. Quick check: ``python bench/bench_follow.py --files 8 --idle 10 --load 10 --trickle 5``.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import make_mixed_log as mml  # noqa: E402  (the noise generators, reused)

MARK_BASE = 900_000.0
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --- the child: pdwatch watch --headless, with a look at each snapshot ------------------------

def child(folder: str, marks_path: str, refresh: float) -> int:
    from pdwatch.commands.watch import run_headless
    from pdwatch.session.live import LiveSession

    session = LiveSession([folder], mode="watch")
    seen: set[float] = set()
    marks = open(marks_path, "w", buffering=1)
    original = session.tick

    def tick(*args, **kwargs):
        snap = original(*args, **kwargs)
        now = time.monotonic()
        for ep in snap.endpoints:
            for row in ep.engine_rows:
                v = row.prompt_tps
                if v is not None and v >= MARK_BASE and v not in seen:
                    seen.add(v)
                    marks.write(f"{int(v - MARK_BASE)} {now:.6f}\n")
        marks.write(f"tick {now:.6f}\n")
        return snap

    session.tick = tick  # type: ignore[method-assign]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open(os.devnull, "w") as out:
        return run_headless(session, out, refresh=refresh, stop=stop, err=sys.stderr)


# --- the writer -------------------------------------------------------------------------------

class Writer:
    """Appends lines to the files at a given rate, stats lines carrying markers."""

    def __init__(self, paths: list[Path], seed: int = 1) -> None:
        self.paths = paths
        self.rng = random.Random(seed)
        self.noise = mml.Noise(self.rng)
        self.makers = [getattr(self.noise, name) for name, _ in mml.Noise.KINDS]
        self.weights = [w for _, w in mml.Noise.KINDS]
        self.clock = mml.Clock()
        self.files = [open(p, "a", buffering=1 << 16) for p in paths]
        self.states = [mml.EngineState(0, "decode" in p.name) for p in paths]
        self.next_mark = 0
        self.written: dict[int, float] = {}  # marker -> monotonic time it was flushed
        self.lines = 0

    def stats_line(self, i: int, md: str) -> tuple[str, int]:
        st = self.states[i]
        st.step(self.rng)
        msg = st.message(self.rng)
        _, _, rest = msg.partition(" tokens/s, ")
        mark = self.next_mark
        self.next_mark += 1
        msg = f"Engine 000: Avg prompt throughput: {MARK_BASE + mark:.1f} tokens/s, {rest}"
        return mml.vllm_line(mml.API, "INFO", md, "loggers.py:271", msg), mark

    def run(self, seconds: float, rate: float, stats_every: float, noise: bool = True) -> float:
        """Write for ``seconds``; returns the lines/s reached."""
        n = len(self.files)
        step = 0.05
        start = time.monotonic()
        next_stats = [start + stats_every * (i + 1) / n for i in range(n)]
        written0 = self.lines
        carry = 0.0
        t = start
        while t - start < seconds:
            iso, md = self.clock.stamps(time.time())
            marks: list[int] = []
            if noise:
                carry += rate * step
                k, carry = int(carry), carry - int(carry)
                kinds = self.rng.choices(self.makers, weights=self.weights, k=k)
                for j, make in enumerate(kinds):
                    self.files[j % n].write(make(iso, md) + "\n")
                self.lines += k
            for i in range(n):
                if t >= next_stats[i]:
                    line, mark = self.stats_line(i, md)
                    self.files[i].write(line + "\n")
                    marks.append(mark)
                    next_stats[i] += stats_every
                    self.lines += 1
            for f in self.files:
                f.flush()
            now = time.monotonic()
            for m in marks:
                self.written[m] = now
            t += step
            delay = t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                t = time.monotonic()  # behind: do not try to catch up in a burst
        return (self.lines - written0) / (time.monotonic() - start)

    def close(self) -> None:
        for f in self.files:
            f.close()


# --- measuring --------------------------------------------------------------------------------

def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


class CpuMeter:
    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids

    def start(self) -> None:
        self.t0 = time.monotonic()
        self.c0 = {k: cpu_seconds(p) for k, p in self.pids.items()}

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self.t0
        return {k: 100.0 * (cpu_seconds(p) - self.c0[k]) / wall for k, p in self.pids.items()}


def read_marks(path: Path) -> tuple[dict[int, float], list[float]]:
    seen: dict[int, float] = {}
    ticks: list[float] = []
    with open(path) as fh:
        for line in fh:
            a, _, b = line.strip().partition(" ")
            if not b:
                continue
            if a == "tick":
                ticks.append(float(b))
            else:
                seen.setdefault(int(a), float(b))
    return seen, ticks


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def latency_line(label: str, written: dict[int, float], seen: dict[int, float], marks: range) -> str:
    lat = [1000.0 * (seen[m] - written[m]) for m in marks if m in seen and m in written]
    total = sum(1 for m in marks if m in written)
    if not lat:
        return f"  {label:<8} no marker seen ({total} written)"
    return (f"  {label:<8} p50 {quantile(lat, 0.5):6.0f} ms   p95 {quantile(lat, 0.95):6.0f} ms   "
            f"max {max(lat):6.0f} ms   ({len(lat)} of {total} markers seen)")


# --- main -------------------------------------------------------------------------------------

def make_files(folder: Path, n: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        role = "prefill" if i < n // 2 else "decode"
        paths.append(folder / f"node{i:03d}_{role}_w{i % max(1, n // 2)}.out")
    for p in paths:
        p.write_text("")
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=64, help="files followed (default 64)")
    ap.add_argument("--rate", type=float, default=10_000, help="lines/s in total during the load phase (default 10000)")
    ap.add_argument("--stats-every", type=float, default=1.0, help="seconds between two stats lines per file (default 1)")
    ap.add_argument("--idle", type=float, default=20.0, help="seconds of the idle phase (default 20)")
    ap.add_argument("--load", type=float, default=20.0, help="seconds of the load phase (default 20)")
    ap.add_argument("--trickle", type=float, default=10.0, help="seconds of stats lines only (default 10; 0: skip)")
    ap.add_argument("--refresh", type=float, default=0.5, help="pdwatch's refresh (default 0.5, as watch)")
    ap.add_argument("--out-dir", default=str(BENCH_DIR / "out"), help="where the files go (default bench/out)")
    ap.add_argument("--keep", action="store_true", help="keep the files (default: delete them)")
    ap.add_argument("--child", nargs=2, metavar=("DIR", "MARKS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child[0], args.child[1], args.refresh)

    folder = Path(args.out_dir) / f"follow-{os.getpid()}"
    paths = make_files(folder, args.files)
    marks_path = folder.with_suffix(".marks")
    writer = Writer(paths)
    # A few stats lines first, so every endpoint exists before the idle phase.
    writer.run(min(2.0, 2 * args.stats_every) + 0.1, 0, args.stats_every, noise=False)
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs["pdwatch"] = subprocess.Popen(
            [sys.executable, __file__, "--child", str(folder), str(marks_path), "--refresh", str(args.refresh)],
            stderr=subprocess.DEVNULL)
        if shutil.which("tail"):
            procs["tail -F"] = subprocess.Popen(["tail", "-F", "-q", "-n", "0", *map(str, paths)],
                                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(3.0)  # start-up: imports, the first read of the files
        for name, p in procs.items():
            if p.poll() is not None:
                print(f"{name} exited early with status {p.returncode}", file=sys.stderr)
                return 1
        meter = CpuMeter({k: p.pid for k, p in procs.items()})
        meter.start()
        time.sleep(args.idle)
        idle = meter.stop()

        meter.start()
        first_load = writer.next_mark
        reached = writer.run(args.load, args.rate, args.stats_every)
        load = meter.stop()
        last_load = writer.next_mark

        trickle: dict[str, float] = {}
        reached_trickle = 0.0
        if args.trickle > 0:
            meter.start()
            reached_trickle = writer.run(args.trickle, 0, args.stats_every, noise=False)
            trickle = meter.stop()
        time.sleep(2 * args.refresh + 0.5)  # the last lines' ticks
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in procs.values():
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        writer.close()

    seen, ticks = read_marks(marks_path)
    gaps = [b - a for a, b in zip(ticks, ticks[1:])]
    print(f"{args.files} files, refresh {args.refresh} s, stats line every {args.stats_every} s per file; "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"CPU, % of one core        idle ({args.idle:g} s)   load ({args.load:g} s, {reached:,.0f} lines/s)"
          + (f"   trickle ({args.trickle:g} s, {reached_trickle:,.0f} lines/s)" if trickle else ""))
    for name in procs:
        print(f"  {name:<22} {idle[name]:10.2f}   {load[name]:24.2f}"
              + (f"   {trickle[name]:24.2f}" if trickle else ""))
    print("latency, line flushed -> visible in a snapshot:")
    print(latency_line("load", writer.written, seen, range(first_load, last_load)))
    if trickle:
        print(latency_line("trickle", writer.written, seen, range(last_load, writer.next_mark)))
    if gaps:
        print(f"  tick gaps: p50 {quantile(gaps, 0.5) * 1000:.0f} ms, max {max(gaps) * 1000:.0f} ms "
              f"({len(ticks)} ticks)")
    lat = [1000.0 * (seen[m] - writer.written[m]) for m in range(first_load, writer.next_mark)
           if m in seen and m in writer.written]
    ok_idle = idle["pdwatch"] < 2.0
    ok_lat = bool(lat) and max(lat) < 500.0
    print(f"targets: idle < 2% of a core: {'YES' if ok_idle else 'NO'} ({idle['pdwatch']:.2f} %); "
          f"latency < 500 ms: {'YES' if ok_lat else 'NO'} (max {max(lat) if lat else float('nan'):.0f} ms)")
    if args.keep:
        print(f"files kept in {folder}")
    else:
        shutil.rmtree(folder, ignore_errors=True)
        marks_path.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
