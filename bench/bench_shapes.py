#!/usr/bin/env python3
"""``pdwatch parse`` and ``pdwatch report`` on the shapes of real input, next to lnav and grep -c.

Why (issue 19): ``bench_parse.py`` measures one shape, a mixed log where ~9% of the lines are
events and the stats cover a short run. Real input has two more: event-dense logs (a Dynamo
frontend at INFO writes a router line per request: nearly every line is an event) and long
runs (a report evaluates its rules at every stats interval of the run). Here, in one run:

* ``dense``: the first 100 MiB of the frontend log of a simulated ``8xDEP2-1xDEP8`` run at
  full noise (``pdwatch simulate --noise full``): 475k lines, all router lines;
* ``mixed``: ``make_mixed_log.py --size 100M`` (the shape of ``bench_parse.py``, 6.7 h of stats);
* ``run-1h`` and ``run-8h``: the whole folder of that simulated run, 1 h and 8 h of load (same
  deployment, same seed: 163 MB and 1.3 GB, 10 files);
* with ``--big``: ``dense-1G`` (the 8 h run's frontend log, 970 MB) and ``mixed-1G``, for the
  peak-memory comparison (100 MB against ~1 GB);
* with ``--long`` (issue 34): ``nvl72-1h``, ``nvl72-8h`` and ``nvl72-24h``, a day-long NVL72 job
  (``8xDEP8-1xDEP8``: 64 prefill + 8 decode engines, a stats line each every 10 s, quiet noise:
  the workers' logs, no per-request lines) simulated for 1, 8 and 24 h, each also replayed
  (``pdwatch replay --headless --speed max``), for peak RSS against the run's length; and
  ``bench_replay_seek.py`` on them (RSS of a replay seeking back and forth).

For each, after a warm-up of every tool (page cache), ``--repeat`` timed runs round-robin of:
``grep -c 'Avg prompt throughput' FILES`` (the floor: one pass in C), ``pdwatch parse FILES
--format jsonl`` (to /dev/null), ``pdwatch report FILES --format json`` (to /dev/null) and
``lnav -n -c ';SELECT count(*) FROM all_logs' FILES`` (lnav indexing the files). Medians; CPU s
is user + system time of the child and its workers (on a shared machine it says more than wall
time); peak RSS is GNU time's ``%M`` (see ``bench_parse.py``). The load average is printed
before and after: compare figures within one run only. MB = 2^20 bytes.

    python bench/bench_shapes.py                # ~6 min on 2 cores once the logs exist (simulating 8 h: ~3 min)
    python bench/bench_shapes.py --shapes dense,mixed --repeat 5
    python bench/bench_shapes.py --big          # adds the ~1 GB dense and mixed logs (memory)
    python bench/bench_shapes.py --shapes mixed,mixed-1G --long   # issue 34's memory table (~25 min)
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))
sys.dont_write_bytecode = True

import bench_parse as bp  # noqa: E402  (how a child is run and measured)
import make_mixed_log as mml  # noqa: E402

MIB = 1 << 20
TOPOLOGY = "8xDEP2-1xDEP8"
SHAPES = ("dense", "mixed", "run-1h", "run-8h")
BIG = ("dense-1G", "mixed-1G")
NVL72 = "8xDEP8-1xDEP8"  # 8 prefill endpoints of 8 engines, 1 decode of 8: 72 engines
LONG = ("nvl72-1h", "nvl72-8h", "nvl72-24h")


def simulated_run(out: Path, duration: str, seed: int, topology: str = TOPOLOGY, noise: str = "full",
                  name: str = "run") -> Path:
    folder = out / f"{name}-{duration}-s{seed}"
    if (folder / "DONE").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    print(f"simulating {duration} of {topology} into {folder} ...", flush=True)
    t0 = time.perf_counter()
    subprocess.run([*bp.pdwatch_command(), "simulate", "--out", str(folder), "--topology", topology, "--noise", noise,
                    "--duration", duration, "--seed", str(seed)], check=True, stdout=subprocess.DEVNULL)
    (folder / "DONE").write_text("")
    print(f"  {time.perf_counter() - t0:.0f} s", flush=True)
    return folder


def head_of(src: Path, dst: Path, size: int | None) -> Path:
    """The first ``size`` bytes of ``src`` up to a line end (all of it with None)."""
    if dst.exists():
        return dst
    with open(src, "rb") as fh:
        data = fh.read(size) if size else fh.read()
    tmp = dst.with_suffix(".part")
    tmp.write_bytes(data[: data.rfind(b"\n") + 1])
    os.replace(tmp, dst)
    return dst


def mixed_log(out: Path, label: str) -> Path:
    path, _ = bp.file_for(label, out, 1)
    return path


def inputs(shape: str, out: Path, seed: int) -> list[Path]:
    frontend = "gb200-n001_frontend_0.out"
    if shape == "dense":
        return [head_of(simulated_run(out, "1h", seed) / frontend, out / "dense-100M.log", 100 * MIB)]
    if shape == "dense-1G":
        return [head_of(simulated_run(out, "8h", seed) / frontend, out / "dense-1G.log", None)]
    if shape in ("mixed", "mixed-1G"):
        return [mixed_log(out, "100M" if shape == "mixed" else "1G")]
    if shape in LONG:  # simulating 24 h of it: ~13 min on 2 cores
        folder = simulated_run(out, shape.split("-")[1], seed, topology=NVL72, noise="quiet", name="nvl72")
        return sorted(p for p in folder.iterdir() if p.suffix == ".out")
    folder = simulated_run(out, shape.split("-")[1], seed)
    return sorted(p for p in folder.iterdir() if p.suffix == ".out")


def compile_pdwatch() -> None:
    """Write pdwatch's bytecode cache (a first run after an install or with PYTHONDONTWRITEBYTECODE
    would compile ~80 modules, ~0.1 s of every run): figures are those of a normal run."""
    code = ("import importlib.util as u, compileall, sys; "
            "ok = all(compileall.compile_dir(p, quiet=1) for n in ('pdwatch', 'pdwatch.parsers', 'pdwatch.rules') "
            "for p in u.find_spec(n).submodule_search_locations); sys.exit(0 if ok else 1)")
    python = Path(bp.pdwatch_command()[0]).with_name("python")
    subprocess.run([str(python) if python.exists() else sys.executable, "-c", code], check=True)


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bench(shape: str, files: list[str], repeat: int, rss_file: str | None, use_lnav: bool,
          ref: str | None = None) -> dict:
    pdwatch = bp.pdwatch_command()
    # grep exits 1 when it counts nothing (the dense log has no stats line): that is no failure.
    tools = {"grep -c": ["sh", "-c", 'grep -c "$0" "$@"; test $? -le 1', bp.NEEDLE, *files],
             "parse": [*pdwatch, "parse", *files, "--format", "jsonl"],
             "report": [*pdwatch, "report", *files, "--format", "json"]}
    if ref:  # another build of pdwatch (e.g. main's), timed in the same run
        tools["ref parse"] = [ref, "parse", *files, "--format", "jsonl"]
        tools["ref report"] = [ref, "report", *files, "--format", "json"]
    if shape in LONG:  # a replay played to its end as fast as it goes: what the dashboard holds
        tools["replay"] = [*pdwatch, "replay", *files, "--headless", "--speed", "max"]
    if use_lnav:
        tools["lnav"] = ["lnav", "-n", "-c", bp.LNAV_QUERY, *files]
    print(f"[{shape}] warm-up", flush=True)
    greps = bp.run_once(tools["grep -c"], capture=True).stdout.split()
    grep_count = sum(int(x.rsplit(b":", 1)[-1]) for x in greps)
    stats, _ = bp.count_stats_events(tools["parse"], rss_file)  # also pdwatch's warm-up
    warm = {name: bp.run_once(cmd, capture=name == "lnav", rss_file=rss_file)
            for name, cmd in tools.items() if name != "parse"}
    runs: dict[str, list] = {name: [] for name in tools}
    cpu: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(repeat):
        for name, cmd in tools.items():
            before = children_cpu()
            runs[name].append(bp.run_once(cmd, rss_file=rss_file))
            cpu[name].append(children_cpu() - before)
    return {"runs": runs, "cpu": cpu, "warm": warm, "grep_count": grep_count, "stats": stats,
            "lnav_rows": bp.lnav_count(warm["lnav"]) if use_lnav else None}


def median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=",".join(SHAPES), help=f"comma-separated, of {', '.join(SHAPES + BIG)}")
    ap.add_argument("--big", action="store_true", help="add the ~1 GB dense and mixed logs (peak memory)")
    ap.add_argument("--long", action="store_true", help="add the NVL72 job simulated for 1, 8 and 24 h (report and "
                                                        "replay peak RSS against the run's length, replay seeks)")
    ap.add_argument("--no-seek", action="store_true", help="with --long: skip the replay seeks")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per tool (default 3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir", default=str(BENCH_DIR / "out" / "shapes"), help="where the logs go")
    ap.add_argument("--ref", metavar="PDWATCH", help="another pdwatch executable (e.g. main's, in its own venv) "
                                                      "timed in the same run: rows 'ref parse', 'ref report'")
    args = ap.parse_args(argv)
    shapes = [s for s in args.shapes.split(",") if s] + (list(BIG) if args.big else []) + (list(LONG) if args.long else [])
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    use_lnav = shutil.which("lnav") is not None
    if not use_lnav:
        print("note: lnav not found, skipped (apt-get install lnav)", file=sys.stderr)
    rss_file = tempfile.NamedTemporaryFile(prefix="rss-", delete=False).name if os.path.exists(bp.GNU_TIME) else None
    compile_pdwatch()
    files = {shape: [str(p) for p in inputs(shape, out, args.seed)] for shape in shapes}
    load_before = os.getloadavg()
    results = {shape: bench(shape, files[shape], args.repeat, rss_file, use_lnav, args.ref) for shape in shapes}
    load_after = os.getloadavg()
    if rss_file:
        os.unlink(rss_file)

    print(f"\n{os.cpu_count()} CPUs; load average (1/5/15 min) {'/'.join(f'{x:.2f}' for x in load_before)} before, "
          f"{'/'.join(f'{x:.2f}' for x in load_after)} after; medians of {args.repeat} runs")
    print(f"{'shape':<10}{'MB':>7}{'tool':>11}{'median s':>10}{'min s':>8}{'MB/s':>8}{'CPU s':>8}{'peak RSS MB':>13}"
          f"{'x grep':>8}{'x lnav':>8}")
    med: dict[tuple[str, str], float] = {}
    rss: dict[tuple[str, str], float] = {}
    for shape, r in results.items():
        mb = sum(os.path.getsize(f) for f in files[shape]) / MIB
        for name, runs in r["runs"].items():
            m = med[shape, name] = median([x.seconds for x in runs])
            rss[shape, name] = max(x.max_rss_mb for x in runs + ([r["warm"][name]] if name in r["warm"] else []))
            lnav = f"{m / median([x.seconds for x in r['runs']['lnav']]):8.2f}" if use_lnav else f"{'-':>8}"
            grep = m / median([x.seconds for x in r["runs"]["grep -c"]])
            print(f"{shape:<10}{mb:7.0f}{name:>11}{m:10.2f}{min(x.seconds for x in runs):8.2f}{mb / m:8.0f}"
                  f"{median(r['cpu'][name]):8.2f}{rss[shape, name]:13.1f}{grep:8.1f}{lnav}")
    print()
    for shape, r in results.items():
        ok = "==" if r["stats"] == r["grep_count"] else "!="
        print(f"[{shape}] stats events {r['stats']:,} {ok} grep -c {r['grep_count']:,}"
              + (f"; lnav all_logs rows {r['lnav_rows']:,}" if r["lnav_rows"] is not None else ""))
    if use_lnav:
        print("\ntargets (issue 19):")
        for shape in [s for s in ("dense", "mixed") if s in results]:
            for tool in ("parse", "report"):
                x = med[shape, tool] / med[shape, "lnav"]
                print(f"  {shape} {tool}: {x:.2f}x lnav ({'ok' if x <= 1 else 'SLOWER'}; goal 0.5x), "
                      f"{med[shape, tool] / med[shape, 'grep -c']:.0f}x grep -c (goal 10x)")
        if "run-1h" in results and "run-8h" in results:
            ratio = med["run-8h", "report"] / med["run-1h", "report"]
            x = med["run-8h", "report"] / med["run-8h", "lnav"]
            print(f"  report 8 h / 1 h: {ratio:.2f} ({'ok' if ratio < 2 else 'NOT under 2'}); "
                  f"report 8 h: {x:.2f}x lnav ({'ok' if x <= 1 else 'SLOWER'})")
    for small, big in (("dense", "dense-1G"), ("mixed", "mixed-1G"), ("nvl72-1h", "nvl72-8h"), ("nvl72-1h", "nvl72-24h")):
        if small in results and big in results:
            growth = {tool: f"{rss[small, tool]:.0f} -> {rss[big, tool]:.0f} MB ({rss[big, tool] / rss[small, tool] - 1:+.0%})"
                      for tool in ("parse", "report", "replay", "lnav") if (small, tool) in rss}
            print(f"  peak RSS {small} -> {big}: " + ", ".join(f"{tool} {text}" for tool, text in growth.items())
                  + ("  (issue 34's target for report: < +25%)" if "report" in growth else ""))
    if args.long and not args.no_seek:
        import bench_replay_seek
        print("\nreplay seeks (bench_replay_seek.py, 3 rounds of 6 seeks per run):")
        print(bench_replay_seek.table(bench_replay_seek.run([str(Path(files[s][0]).parent) for s in LONG], 3)))
    return 0 if all(r["stats"] == r["grep_count"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
