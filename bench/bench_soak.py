#!/usr/bin/env python3
"""Soak bench for ``pdwatch watch`` (issue 34): memory and CPU over hours of growing logs.

Why: issue 34 asks that ``pdwatch watch`` left on a job for a shift or a week does not grow
without bound: at most 2 MB of RSS per log-hour after its first hour.

What it does, in one run:

1. **simulates** (once, cached in ``bench/out/soak-stage-*``) a deployment of ``--prefill``
   (8) prefill and ``--decode`` (64) decode engines, one engine per srt-slurm worker log
   (``<node>_prefill_w<i>.out`` / ``<node>_decode_w<i>.out``, topology ``8xTEP4-64xTEP4``:
   one engine over 4 GPUs each) plus the Dynamo frontend's log, with pdwatch's own simulator
   (``pdwatch.sim``: every line is the simulator's), a stats line per engine every 10 s of log
   time, for ``--hours`` (8) log-hours. Known faults are written into the logs at known times:
   a decode engine dies (CUDA OOM) half an hour into the run and another half an hour before
   its end (one crash, mid-run, when the run is shorter than 2 h). The simulation records, every
   ``INDEX_STEP_S`` of log time, how far each file had grown;
2. **grows** the files of ``outputs/<job>/logs/`` from that record with the log clock
   compressed ``--compression`` (100) times (1 log-hour = 36 s of wall time at 100x);
3. runs, on that folder, at the same time: ``pdwatch watch --headless --jsonl`` (a),
   ``pdwatch watch`` (the dashboard) on a real pseudo-terminal whose output is read as it comes
   (b), and the baseline ``tail -F`` over the same files;
4. at every log-hour (and at the end) samples each one's RSS (VmRSS of the process and its
   children, /proc/PID/status) and CPU seconds (utime + stime, /proc/PID/stat, children
   included) and prints a table; then the RSS growth per log-hour after the first hour (the
   issue's target: <= 2 MB), CPU per log-hour in the first third against the last third, and
   how far behind the logs the findings run: for each crash, the wall time from its lines
   being written to the headless ``engine_failure`` line and to the dashboard's screen showing
   it (and that lag in log seconds, x compression).

``--trace`` runs the headless watch under tracemalloc and prints the allocation sites that
grew most between the end of the first log-hour and the end (tracemalloc costs CPU and
memory of its own: the headless RSS of a traced run is not the figure to quote). Before each
snapshot the feed pauses until the traced watch has caught up (its CPU idle for 2 s), so a
snapshot holds what watch keeps, not a backlog of lines it has yet to read; a traced watch is
several times slower, so use a lower ``--compression`` (e.g. ``--hours 3 --compression 50``).

Week mode: ``--hours 168 --compression 300`` (34 min of wall time; simulating a week once takes
~1 h on one core, cached for the next run). At 300x each watcher takes a whole core (a refresh
then finds lines from every engine), and on 2 cores the dashboard falls behind the logs: its
memory per log-hour holds, its lag is no real-pace figure (``bench_watch_pace.py`` is).

The dashboard's screen is read with pyte (``pip install pyte``, a terminal emulator; not a
pdwatch dependency) when it is installed; without it the bytes written to the terminal are
searched, which can miss a row Textual redrew only in part.

Quick check: ``python bench/bench_soak.py --prefill 1 --decode 3 --hours 0.05 --compression 100``.
This is a benchmark, not a test: it prints figures. Compare only within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CLK_TCK = os.sysconf("SC_CLK_TCK")
INDEX_STEP_S = 5.0  # log seconds between two records of the files' sizes
STAGE_VERSION = 1
JOB = "4242"


def say(msg: str) -> None:
    print(f"bench: {msg}", file=sys.stderr, flush=True)


# --- 1. the simulated deployment, staged ------------------------------------------------------

def crash_times(hours: float) -> list[float]:
    """Log seconds at which a decode engine dies: 0.5 h in and 0.5 h before the end (>= 2 h runs)."""
    total = hours * 3600.0
    if hours >= 2.0:
        return [1800.0, total - 1800.0]
    return [round(total / 2.0, 1)]


def stage_key(args: argparse.Namespace) -> str:
    return (f"soak-stage-v{STAGE_VERSION}-{args.prefill}p{args.decode}d-{args.hours:g}h-cc{args.cc}"
            f"-{args.style}-{args.noise}-s{args.seed}")


def simulate(args: argparse.Namespace, stage: Path) -> None:
    """Run the simulator fast-forward into ``stage``; write ``index.bin`` (log second, then each
    file's size, int64, every INDEX_STEP_S) and ``meta.json``."""
    import numpy as np

    from pdwatch.sim import Crash, LogOptions, SimConfig, Simulation
    from pdwatch.sim.logwriter import LogRun

    class SoakSimulation(Simulation):
        """The simulator, with several engine crashes at known times (SimConfig holds one)."""

        def __init__(self, cfg: SimConfig, crashes: list[Crash]) -> None:
            super().__init__(cfg)
            self.pending = sorted(crashes, key=lambda c: c.at)

        def tick(self) -> None:
            while self.pending and self.t >= self.pending[0].at:
                self._crash(self.pending.pop(0), self.t)
            super().tick()

    tmp = stage.with_name(stage.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    topology = f"{args.prefill}xTEP4-{args.decode}xTEP4"
    crashes = [Crash(f"decode_w{args.decode - 1 - i}", 0, at) for i, at in enumerate(crash_times(args.hours))]
    cfg = SimConfig(topology=topology, cc=args.cc, duration=args.hours * 3600.0, seed=args.seed, dt=0.25)
    sim = SoakSimulation(cfg, crashes)
    # The logs end "now" (as a fast-forward simulation's do): their times lie in the past of the wall clock.
    start = datetime.now(timezone.utc).replace(microsecond=0) - timedelta(seconds=cfg.duration)
    opts = LogOptions(style=args.style, noise=args.noise, interval=10.0, start=start, scenario="soak")
    writer = LogRun(sim, tmp / "logs", opts)
    sim.record_requests = opts.noise == "full"
    names = [p.name for p in writer.paths]
    rows: list[list[int]] = []

    def record(t: float) -> None:
        rows.append([int(round(t * 1000))] + [log_size(writer, name) for name in names])

    t0 = time.monotonic()
    told = t0
    writer.begin()
    record(0.0)
    next_rec = INDEX_STEP_S
    for _ in sim.run():
        writer.after_tick()
        if sim.t + 1e-9 >= next_rec:
            record(sim.t)
            next_rec += INDEX_STEP_S
        if time.monotonic() - told > 15:
            told = time.monotonic()
            say(f"simulated {sim.t / 3600:.2f} of {args.hours:g} log-hours")
    writer.close()
    record(sim.t)
    np.asarray(rows, dtype=np.int64).tofile(tmp / "index.bin")
    meta = {"files": names, "topology": topology, "cc": args.cc, "hours": args.hours, "start": start.isoformat(),
            "crashes": [{"endpoint": c.endpoint, "rank": c.rank, "at": c.at} for c in crashes],
            "index_cols": 1 + len(names), "simulated_s": round(time.monotonic() - t0, 1)}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
    shutil.rmtree(stage, ignore_errors=True)
    tmp.rename(stage)
    say(f"simulated {topology} ({args.prefill + args.decode} engines), {args.hours:g} log-hours, "
        f"in {meta['simulated_s']} s -> {stage}")


def log_size(writer, name: str) -> int:
    for log in list(writer.logs.values()) + ([writer.frontend] if writer.frontend is not None else []):
        if log.path.name == name:
            return os.fstat(log.fh.fileno()).st_size if not log.closed else log.path.stat().st_size
    raise KeyError(name)


# --- measuring processes ------------------------------------------------------------------------

def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as fh:
                    out += [int(x) for x in fh.read().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        todo += _children(p)
    return pids


def rss_mb(pid: int) -> float:
    """VmRSS of ``pid`` and its children, MiB."""
    total = 0
    for p in tree(pid):
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total / 1024.0


def cpu_s(pid: int) -> float:
    """utime + stime of ``pid``, its live children and its waited-for children, seconds."""
    total = 0
    for i, p in enumerate(tree(pid)):
        try:
            with open(f"/proc/{p}/stat") as fh:
                f = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if i == 0 else 0)
    return total / CLK_TCK


# --- the watchers -----------------------------------------------------------------------------

_ESCAPE = re.compile(rb"\x1b(?:\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()*+][0-9A-Za-z]|[@-Z\\-_])")


@dataclass
class Seen:
    """Wall times (monotonic) at which a watcher first showed each crashed endpoint's failure."""

    first: dict[str, float] = field(default_factory=dict)
    lines: int = 0
    findings: list[dict] = field(default_factory=list)


class Headless:
    def __init__(self, folder: Path, trace_dir: Path | None, nframes: int) -> None:
        if trace_dir is None:
            argv = [sys.executable, "-m", "pdwatch", "watch", "--headless", "--jsonl", str(folder)]
        else:
            argv = [sys.executable, str(Path(__file__).resolve()), "--trace-child", str(trace_dir), str(nframes),
                    str(folder)]
        self.err = open(folder.parent / "headless.stderr", "w")  # noqa: SIM115
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.err, cwd=str(folder.parent))
        self.seen = Seen()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            now = time.monotonic()
            self.seen.lines += 1
            try:
                x = json.loads(raw)
            except ValueError:
                continue
            self.seen.findings.append({"rule": x.get("rule"), "endpoint": x.get("endpoint"),
                                       "state": x.get("state"), "start": x.get("start"), "wall": now})
            if x.get("rule") == "engine_failure" and x.get("state") in ("firing", "escalated"):
                self.seen.first.setdefault(str(x.get("endpoint")), now)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.thread.join(5)
        self.err.close()


_NAMED = re.compile(r"\b([a-z]+)_w(\d+)((?:,\s*w\d+)*)")


def died_on_screen(lines: list[str]) -> set[str]:
    """The endpoints the dashboard shows as dead: in an ``engine_failure`` row of the findings
    table or in the verdict's "engine died", alone (``decode_w3``) or grouped (``decode_w1, w2``)."""
    out: set[str] = set()
    for line in lines:
        if "engine_failure" not in line and "engine died" not in line:
            continue
        for m in _NAMED.finditer(line):
            out.add(f"{m.group(1)}_w{m.group(2)}")
            out.update(f"{m.group(1)}_w{n}" for n in re.findall(r"w(\d+)", m.group(3)))
    return out


class Dashboard:
    """``pdwatch watch`` on a pseudo-terminal of rows x cols; its output read as it comes (so it
    never blocks on a full terminal) and searched for each crashed endpoint's failure."""

    def __init__(self, folder: Path, rows: int, cols: int, endpoints: list[str]) -> None:
        argv = [sys.executable, "-m", "pdwatch", "watch", str(folder)]
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
        env["TERM"] = "xterm-256color"
        self.patterns = {ep: re.compile(rf"engine_failure\s+{ep}\b|{ep}\S* engine \d+ died".encode())
                         for ep in endpoints}
        self.screen_patterns = {ep: re.compile(rf"engine_failure\s+{ep}\b|{ep}\S* engine \d+ died")
                                for ep in endpoints}
        try:  # a terminal emulator: the screen as drawn (Textual redraws only what changed)
            import pyte
            self.screen = pyte.Screen(cols, rows)
            self.stream = pyte.ByteStream(self.screen)
        except ImportError:  # then the bytes written are searched, which can miss a redrawn row
            self.screen = self.stream = None
        self.seen = Seen()
        self.bytes = 0
        self.eof = False
        pid, fd = pty.fork()
        if pid == 0:
            try:
                import fcntl
                import termios
                fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
                os.chdir(folder.parent)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.status: int | None = None
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        carry = b""
        while not self._stop.is_set() and not self.eof:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(self.fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                break
            now = time.monotonic()
            self.bytes += len(chunk)
            if self.stream is not None:
                self.stream.feed(chunk)
                if any(ep not in self.seen.first for ep in self.screen_patterns):
                    shown = died_on_screen(self.screen.display)
                    for ep in self.screen_patterns:
                        if ep not in self.seen.first and ep in shown:
                            self.seen.first[ep] = now
                continue
            text = _ESCAPE.sub(b" ", carry + chunk)
            for ep, pat in self.patterns.items():
                if ep not in self.seen.first and pat.search(text):
                    self.seen.first[ep] = now
            carry = (carry + chunk)[-4096:]

    def stop(self) -> None:
        try:
            os.write(self.fd, b"q")
        except OSError:
            pass
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.1)
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -signal.SIGKILL
        self._stop.set()
        self.thread.join(5)
        os.close(self.fd)


# --- tracemalloc child --------------------------------------------------------------------------

def trace_child(dump_dir: str, nframes: int, folder: str) -> int:
    """``pdwatch watch --headless --jsonl FOLDER`` under tracemalloc; SIGUSR1 dumps a snapshot
    into DUMP_DIR/snap-N.pickle (then writes snap-N.done)."""
    import tracemalloc
    tracemalloc.start(nframes)
    count = [0]

    def dump(_signum, _frame) -> None:
        snap = tracemalloc.take_snapshot()
        snap = snap.filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        path = Path(dump_dir) / f"snap-{count[0]}.pickle"
        snap.dump(str(path))
        Path(str(path) + ".done").write_text(f"{tracemalloc.get_traced_memory()}\n")
        count[0] += 1

    signal.signal(signal.SIGUSR1, dump)
    from pdwatch.cli import main
    return main(["watch", "--headless", "--jsonl", folder])


def wait_caught_up(pid: int, timeout: float = 300.0) -> float:
    """Until ``pid`` has read what was written: its CPU under 40 % of a core over 3 s (a traced
    watch's idle evaluations every 2 s cost it a tenth of a core or more), at most ``timeout`` s;
    returns the seconds waited."""
    t0 = time.monotonic()
    last = cpu_s(pid)
    while time.monotonic() - t0 < timeout:
        time.sleep(3.0)
        now = cpu_s(pid)
        if now - last < 0.4 * 3.0:
            break
        last = now
    return time.monotonic() - t0


def request_snapshot(pid: int, dump_dir: Path, n: int, timeout: float = 300.0) -> Path | None:
    """A tracemalloc snapshot of the traced watch, once it has caught up with the files (so the
    snapshot holds what it keeps, not a backlog of lines it has yet to read)."""
    waited = wait_caught_up(pid)
    say(f"tracemalloc snapshot {n}: the traced watch caught up in {waited:.0f} s")
    os.kill(pid, signal.SIGUSR1)
    done = dump_dir / f"snap-{n}.pickle.done"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if done.exists():
            return dump_dir / f"snap-{n}.pickle"
        time.sleep(0.2)
    return None


def print_growth(first: Path, last: Path, top: int) -> None:
    import tracemalloc
    a = tracemalloc.Snapshot.load(str(first))
    b = tracemalloc.Snapshot.load(str(last))
    print(f"\ntracemalloc, headless watch: traced {sum(s.size for s in a.statistics('filename')) / 2**20:.1f} MiB "
          f"after the first log-hour -> {sum(s.size for s in b.statistics('filename')) / 2**20:.1f} MiB at the end")
    print(f"top {top} growth sites (by line):")
    for st in b.compare_to(a, "lineno")[:top]:
        frame = st.traceback[0]
        print(f"  {st.size_diff / 2**20:+8.2f} MiB {st.count_diff:+9d} blocks  {_short(frame.filename)}:{frame.lineno}")
    print(f"top {min(top, 8)} growth sites with their callers:")
    for st in b.compare_to(a, "traceback")[:min(top, 8)]:
        print(f"  {st.size_diff / 2**20:+8.2f} MiB {st.count_diff:+9d} blocks")
        for frame in list(st.traceback)[::-1][:6]:  # the allocating line first, then its callers
            print(f"      {_short(frame.filename)}:{frame.lineno}")


def _short(path: str) -> str:
    for marker in ("/pdwatch/", "/site-packages/", "/lib/python3"):
        i = path.rfind(marker)
        if i >= 0:
            return path[i + 1:]
    return path


# --- the run --------------------------------------------------------------------------------------

def uptime_line() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefill", type=int, default=8, help="prefill engines, one per log (default 8)")
    ap.add_argument("--decode", type=int, default=64, help="decode engines, one per log (default 64)")
    ap.add_argument("--hours", type=float, default=8.0, help="log-hours to grow (default 8; a week: 168)")
    ap.add_argument("--compression", type=float, default=100.0,
                    help="log seconds per wall second (default 100: 1 log-hour in 36 s; a week: 300)")
    ap.add_argument("--cc", type=int, default=None, help="client concurrency (default 32 per decode engine)")
    ap.add_argument("--style", default="vllm", choices=("vllm", "vllm-0.14", "dynamo"), help="log format (default vllm)")
    ap.add_argument("--noise", default="quiet", choices=("quiet", "full"),
                    help="quiet (default): no per-request access/router lines; full: with them")
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--no-dashboard", action="store_true", help="headless watch and tail -F only")
    ap.add_argument("--no-headless", action="store_true", help="dashboard and tail -F only")
    ap.add_argument("--pty-size", default="40x120", help="dashboard terminal ROWSxCOLS (default 40x120)")
    ap.add_argument("--trace", action="store_true",
                    help="headless watch under tracemalloc: top growth sites, first log-hour -> end")
    ap.add_argument("--trace-frames", type=int, default=8, help="tracemalloc frames kept (default 8)")
    ap.add_argument("--top", type=int, default=15, help="growth sites printed (default 15)")
    ap.add_argument("--settle", type=float, default=5.0, help="wall seconds the watchers get to start (default 5)")
    ap.add_argument("--out-dir", default=str(BENCH_DIR / "out"), help="where the files go (default bench/out)")
    ap.add_argument("--keep", action="store_true", help="keep the grown folder (the staged simulation is always kept)")
    ap.add_argument("--trace-child", nargs=3, metavar=("DUMP_DIR", "NFRAMES", "FOLDER"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.trace_child:
        return trace_child(args.trace_child[0], int(args.trace_child[1]), args.trace_child[2])
    if args.prefill < 1 or args.decode < 1 or not args.hours > 0 or not args.compression > 0:
        ap.error("--prefill, --decode, --hours and --compression must be positive")
    if args.decode < (2 if args.hours >= 2 else 1) + 1:
        ap.error("--decode: at least one more decode engine than the crashes (2 from 2 h on)")
    if args.cc is None:
        args.cc = 32 * args.decode
    rows_, cols_ = (int(x) for x in args.pty_size.lower().split("x"))

    out = Path(args.out_dir)
    stage = out / stage_key(args)
    if not (stage / "meta.json").exists():
        say(f"simulating {args.prefill + args.decode} engines for {args.hours:g} log-hours (once; kept in {stage})")
        simulate(args, stage)
        import gc
        gc.collect()  # the simulator's objects (cycles): the bench stays small beside what it measures
    import numpy as np
    meta = json.loads((stage / "meta.json").read_text())
    names: list[str] = meta["files"]
    index = np.fromfile(stage / "index.bin", dtype=np.int64).reshape(-1, meta["index_cols"])
    crashes = meta["crashes"]

    run_dir = out / f"soak-{os.getpid()}"
    folder = run_dir / "outputs" / JOB / "logs"
    folder.mkdir(parents=True)
    live = [os.open(folder / n, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644) for n in names]
    src = [os.open(stage / "logs" / n, os.O_RDONLY) for n in names]
    done = [0] * len(names)
    trace_dir = run_dir / "trace" if args.trace else None
    if trace_dir is not None:
        trace_dir.mkdir()

    load_start = uptime_line()
    procs: dict[str, int] = {}
    headless = dashboard = tail = None
    table: list[dict] = []
    written: dict[str, float] = {}  # crashed endpoint -> monotonic time its crash lines were written
    snaps: list[Path] = []
    try:
        if not args.no_headless:
            headless = Headless(folder, trace_dir, args.trace_frames)
            procs["headless"] = headless.pid
        if not args.no_dashboard:
            dashboard = Dashboard(folder, rows_, cols_, [c["endpoint"] for c in crashes])
            procs["dashboard"] = dashboard.pid
        tail = subprocess.Popen(["tail", "-F", "-q", "-n", "0", *[str(folder / n) for n in names]],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs["tail -F"] = tail.pid
        time.sleep(args.settle)
        for name, pid in procs.items():
            if not os.path.exists(f"/proc/{pid}"):
                say(f"{name} exited early")
                return 1

        def sample(log_h: float, wall: float) -> None:
            row = {"log_h": log_h, "wall": wall, "load1": os.getloadavg()[0]}
            for name, pid in procs.items():
                row[name] = (rss_mb(pid), cpu_s(pid))
            table.append(row)
            cells = "  ".join(f"{n} {row[n][0]:.1f} MB {row[n][1]:.1f} s" for n in procs)
            say(f"log-hour {log_h:.2f} (wall {wall:.0f} s): {cells}")

        total_h = float(index[-1, 0]) / 3.6e6
        marks = [float(h) for h in range(1, int(total_h + 1)) if h < total_h - 1e-6] + [total_h]
        snap_at = {marks[0], marks[-1]} if trace_dir is not None and headless is not None else set()
        if len(snap_at) == 1:  # a run of under a log-hour and a half: before the first line, and the end
            got = request_snapshot(headless.pid, trace_dir, 0)
            snaps += [got] if got is not None else []
        sample(0.0, 0.0)
        pending = sorted(crashes, key=lambda c: c["at"])
        w0 = time.monotonic()
        behind_max = 0.0
        for i in range(len(index)):
            t = index[i, 0] / 1000.0
            target = w0 + t / args.compression
            delay = target - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                behind_max = max(behind_max, -delay)
            for j in range(len(names)):
                size = int(index[i, j + 1])
                while done[j] < size:
                    chunk = os.pread(src[j], min(size - done[j], 1 << 20), done[j])
                    os.write(live[j], chunk)
                    done[j] += len(chunk)
            now = time.monotonic()
            while pending and pending[0]["at"] <= t:
                written[pending.pop(0)["endpoint"]] = now
            log_h = t / 3600.0
            while marks and (log_h + 1e-9 >= marks[0] or i == len(index) - 1):
                mark = marks.pop(0)
                if mark in snap_at:
                    paused = time.monotonic()
                    got = request_snapshot(headless.pid, trace_dir, len(snaps))
                    snaps += [got] if got is not None else []
                    w0 += time.monotonic() - paused  # the schedule resumes where it paused, no burst
                sample(round(mark, 3), time.monotonic() - w0)
        time.sleep(3.0)  # the last crash's report
    finally:
        for fd in live + src:
            os.close(fd)
        if tail is not None and tail.poll() is None:
            tail.terminate()
            tail.wait(10)
        if dashboard is not None:
            dashboard.stop()
        if headless is not None:
            headless.stop()
    load_end = uptime_line()

    # --- the figures ------------------------------------------------------------------------------
    print(f"pdwatch watch soak: {meta['topology']} ({args.prefill} prefill + {args.decode} decode engines, "
          f"{len(names)} files incl. the frontend), cc {meta['cc']}, {args.style} logs, noise {args.noise}, "
          f"a stats line per engine every 10 s of log time")
    print(f"{total_h:g} log-hours at {args.compression:g}x ({total_h * 3600 / args.compression:.0f} s of wall time; "
          f"feeder at most {behind_max:.2f} s behind its schedule); dashboard on a {rows_}x{cols_} pty"
          + ("; headless under tracemalloc" if args.trace else ""))
    print(f"{os.cpu_count()} CPUs; at the start: {load_start}")
    print(f"                    at the end:   {load_end}")
    heads = list(procs)
    print("\n log-h  wall s  " + "".join(f"{n + ' RSS MB':>20}{n + ' CPU s':>18}" for n in heads) + "  load1")
    for row in table:
        print(f"{row['log_h']:6.2f}  {row['wall']:6.0f}  "
              + "".join(f"{row[n][0]:20.1f}{row[n][1]:18.1f}" for n in heads) + f"  {row['load1']:5.2f}")

    print()
    first = next((r for r in table if r["log_h"] >= 1.0 - 1e-9), None)
    last = table[-1]
    for n in heads:
        if first is not None and last["log_h"] > first["log_h"]:
            growth = (last[n][0] - first[n][0]) / (last["log_h"] - first["log_h"])
            verdict = "" if n == "tail -F" else f" (target <= 2 MB: {'YES' if growth <= 2.0 else 'NO'})"
            print(f"RSS growth per log-hour after the first hour, {n}: {growth:+.2f} MB "
                  f"({first[n][0]:.1f} -> {last[n][0]:.1f} MB over log-hours {first['log_h']:g}-{last['log_h']:g})"
                  + verdict)
        else:
            print(f"RSS growth per log-hour after the first hour, {n}: n/a (run shorter than 2 log-hours; "
                  f"{table[0][n][0]:.1f} -> {last[n][0]:.1f} MB)")
    hour_rows = [r for r in table if r["log_h"] > 0]
    for n in heads:
        per_h = []
        prev = table[0]
        for r in hour_rows:
            per_h.append((r[n][1] - prev[n][1]) / (r["log_h"] - prev["log_h"]))
            prev = r
        if len(per_h) >= 3:
            k = len(per_h) // 3
            a, b = sum(per_h[:k]) / k, sum(per_h[-k:]) / k
            print(f"CPU per log-hour, {n}: first third {a:.2f} s, last third {b:.2f} s ({b / a if a else 0:.2f}x)")
        elif per_h:
            print(f"CPU per log-hour, {n}: {', '.join(f'{x:.2f}' for x in per_h)} s (fewer than 3 rows: no thirds)")

    print("\nfindings behind the logs (a decode engine's death written at a known log time; "
          "wall s from its lines written to shown, and that in log seconds):")
    for c in crashes:
        ep = c["endpoint"]
        w = written.get(ep)
        parts = []
        for label, obj in (("headless", headless), ("dashboard", dashboard)):
            if obj is None:
                continue
            got = obj.seen.first.get(ep)
            if w is None:
                parts.append(f"{label}: not written")
            elif got is None:
                parts.append(f"{label}: NOT SHOWN")
            else:
                lag = got - w
                parts.append(f"{label} {lag:.2f} s ({lag * args.compression:.0f} log-s)")
        print(f"  {ep} dies at log-hour {c['at'] / 3600:.2f}: " + "; ".join(parts))
    if headless is not None:
        rules: dict[str, int] = {}
        for f in headless.seen.findings:
            if f["state"] == "firing":
                rules[f["rule"]] = rules.get(f["rule"], 0) + 1
        print(f"headless: {headless.seen.lines} lines; findings fired: "
              + (", ".join(f"{r} x{k}" for r, k in sorted(rules.items())) or "none"))
    if dashboard is not None:
        if dashboard.screen is not None and any(c["endpoint"] not in dashboard.seen.first for c in crashes):
            print("the dashboard's last screen (a crash not found on it):")
            for line in dashboard.screen.display:
                print("  | " + line.rstrip())
        how = "a pyte screen" if dashboard.screen is not None else "the bytes written (pyte not installed)"
        print(f"dashboard: {dashboard.bytes / 2**20:.1f} MiB of terminal output, exit status {dashboard.status}; "
              f"findings looked for on {how}")
    if args.trace:
        if len(snaps) >= 2:
            print_growth(snaps[0], snaps[-1], args.top)
        else:
            print("tracemalloc: fewer than two snapshots were taken (run shorter than a log-hour?)")
            if len(snaps) == 1:
                print_growth(snaps[0], snaps[0], args.top)
    if args.keep:
        print(f"grown folder kept in {run_dir}")
    else:
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
