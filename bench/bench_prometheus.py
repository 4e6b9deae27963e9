#!/usr/bin/env python3
"""``pdwatch report prom+http://... --since 6h`` over a real Prometheus holding 72 engines' series.

Why: issue 18 asks that a long range of a large deployment be read from Prometheus in
bounded memory, with progress shown. This fills a real Prometheus (Debian's 2.42) by
backfill and times the report through it:

1. The simulator (``pdwatch.sim``) runs ``8xDEP8-1xDEP8`` (8 prefill endpoints of DP 8, one
   decode endpoint of DP 8: 72 engines) for ``--hours`` of simulated time; every
   ``--scrape`` seconds each engine's vLLM series are sampled as its ``/metrics`` would
   serve them (running, waiting, KV usage, the prompt, prompt-by-source, generation and
   preemption counters), with each target's ``up``, labelled ``job="vllm"``,
   ``instance="<endpoint>:8000"``, ``role``, ``engine``, ``model_name``.
2. They are written as OpenMetrics with timestamps, ending now, and turned into TSDB blocks
   with ``promtool tsdb create-blocks-from openmetrics``.
3. ``prometheus`` starts on those blocks (127.0.0.1, a free port, scraping nothing).
4. ``pdwatch report prom+http://127.0.0.1:PORT --since <hours>h --format json`` runs under
   GNU time: wall time, peak RSS (``%M``), CPU; its stderr (the progress lines) is shown.

Everything goes to a temporary folder (``--keep DIR`` keeps it). Quick check:
``python bench/bench_prometheus.py --hours 0.5``; the issue's figures: the defaults (6 h, 10 s).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pdwatch.sim.model import SimConfig, Simulation  # noqa: E402

TOPOLOGY = "8xDEP8-1xDEP8"
FAMILIES = [  # (family, type, sample name, per engine -> value)
    ("vllm:num_requests_running", "gauge", "vllm:num_requests_running", lambda e: float(e.running_count())),
    ("vllm:num_requests_waiting", "gauge", "vllm:num_requests_waiting", lambda e: float(e.waiting_count())),
    ("vllm:kv_cache_usage_perc", "gauge", "vllm:kv_cache_usage_perc", lambda e: e.kv_fraction()),
    ("vllm:num_preemptions", "counter", "vllm:num_preemptions_total", lambda e: float(e.preemptions)),
    ("vllm:prompt_tokens", "counter", "vllm:prompt_tokens_total",
     lambda e: float(int(e.prompt_local + e.prompt_external))),
    ("vllm:generation_tokens", "counter", "vllm:generation_tokens_total", lambda e: float(int(e.gen_tokens))),
]
BY_SOURCE = ("vllm:prompt_tokens_by_source", "vllm:prompt_tokens_by_source_total")


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def simulate(hours: float, scrape: float, seed: int):
    """(sample times relative to the start, per endpoint: per engine: per family: values)."""
    cfg = SimConfig(topology=TOPOLOGY, cc=4096, duration=hours * 3600, seed=seed, dt=0.25)
    sim = Simulation(cfg)
    times: list[float] = []
    values: dict[tuple[int, int, str], list[float]] = {}
    next_sample, told = 0.0, time.monotonic()
    for _ in sim.run():
        if sim.t + 1e-9 < next_sample:
            continue
        times.append(next_sample)
        for i, ep in enumerate(sim.endpoints):
            for e in ep.engines:
                for family, _, _, get in FAMILIES:
                    values.setdefault((i, e.rank, family), []).append(get(e))
                values.setdefault((i, e.rank, BY_SOURCE[0]), []).append(float(int(e.prompt_local)))
        next_sample += scrape
        if time.monotonic() - told > 10:
            told = time.monotonic()
            say(f"simulated {sim.t / 3600:.2f} of {hours:g} h")
    return sim, times, values


def write_openmetrics(path: Path, sim, times: list[float], values, end: float) -> int:
    """The samples as OpenMetrics (families together, each series in time order); returns samples."""
    start = end - times[-1]
    stamps = [f"{start + t:.3f}" for t in times]
    count = 0
    with open(path, "w") as out:
        def series(sample: str, labels: str, points: list[float]) -> None:
            nonlocal count
            out.writelines(f"{sample}{{{labels}}} {_num(v)} {ts}\n" for v, ts in zip(points, stamps))
            count += len(points)

        for family, kind, sample, _ in FAMILIES:
            out.write(f"# TYPE {family} {kind}\n")
            for i, ep in enumerate(sim.endpoints):
                for e in ep.engines:
                    series(sample, _labels(ep, e), values[(i, e.rank, family)])
        out.write(f"# TYPE {BY_SOURCE[0]} counter\n")
        for i, ep in enumerate(sim.endpoints):
            for e in ep.engines:
                series(BY_SOURCE[1], _labels(ep, e, source="local_compute"), values[(i, e.rank, BY_SOURCE[0])])
        out.write("# TYPE up gauge\n")
        for ep in sim.endpoints:
            series("up", f'instance="{ep.name}:8000",job="vllm",role="{ep.role}"', [1.0] * len(times))
        out.write("# EOF\n")
    return count


def _labels(ep, e, **extra: str) -> str:
    pairs = {"engine": str(e.rank), "instance": f"{ep.name}:8000", "job": "vllm", "model_name": "m", "role": ep.role,
             **extra}
    return ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))


def _num(v: float) -> str:
    return str(int(v)) if v == int(v) else repr(v)


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"prometheus exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit("prometheus did not get ready")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hours", type=float, default=6.0, help="range read (default 6)")
    parser.add_argument("--scrape", type=float, default=10.0, help="seconds between samples (default 10)")
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--keep", metavar="DIR", help="keep the OpenMetrics file, the blocks and the report here")
    args = parser.parse_args(argv)
    for tool in ("prometheus", "promtool"):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is needed: apt-get install prometheus")
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="pdwatch-bench-prom-"))
    work.mkdir(parents=True, exist_ok=True)
    prom = None
    try:
        began = time.monotonic()
        sim, times, values = simulate(args.hours, args.scrape, args.seed)
        engines = sum(len(ep.engines) for ep in sim.endpoints)
        say(f"simulated {args.hours:g} h of {TOPOLOGY} ({engines} engines) in {time.monotonic() - began:.0f} s")
        end = math.floor(time.time() / args.scrape) * args.scrape - 60  # ends a minute ago
        om = work / "series.om"
        samples = write_openmetrics(om, sim, times, values, end)
        series = samples // len(times)
        say(f"{series} series x {len(times)} samples = {samples:,} samples, {om.stat().st_size / 2**20:.0f} MiB "
            f"of OpenMetrics")
        data = work / "data"
        began = time.monotonic()
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(om), str(data)], check=True,
                       stdout=subprocess.DEVNULL)
        say(f"backfilled with promtool in {time.monotonic() - began:.0f} s")
        if not args.keep:
            om.unlink()
        port = free_port()
        (work / "prometheus.yml").write_text("global: {scrape_interval: 1m}\nscrape_configs: []\n")
        log = open(work / "prometheus.log", "w")  # noqa: SIM115
        prom = subprocess.Popen(["prometheus", f"--config.file={work / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={data}", f"--web.listen-address=127.0.0.1:{port}",
                                 "--storage.tsdb.retention.time=30d", "--log.level=warn"],
                                stdout=log, stderr=subprocess.STDOUT)
        wait_ready(f"http://127.0.0.1:{port}", prom)
        report = work / "report.json"
        since = f"{int(args.hours * 3600 + 120)}s"  # the whole range, from now
        command = [sys.executable, "-m", "pdwatch", "report", f"prom+http://127.0.0.1:{port}", "--since", since,
                   "--format", "json", "-o", str(report)]
        say(f"running: pdwatch report prom+http://127.0.0.1:{port} --since {since} --format json")
        timed = subprocess.run(["/usr/bin/time", "-f", "TIME %e %M %U %S", *command], capture_output=True, text=True)
        lines = timed.stderr.strip().splitlines()
        for line in lines[:-1]:
            print(f"  | {line}", file=sys.stderr)
        if timed.returncode != 0:
            raise SystemExit(f"pdwatch report failed ({timed.returncode})")
        wall, rss_kib, user, system = lines[-1].split()[1:]
        doc = json.loads(report.read_text())
        rows = sum(ep.get("stats_lines") or 0 for ep in doc["endpoints"])
        findings = sorted({f["rule"] for f in doc["findings"]})
        print(json.dumps({
            "range_h": args.hours, "scrape_s": args.scrape, "engines": engines, "endpoints": len(sim.endpoints),
            "series": series, "samples": samples, "wall_s": float(wall), "peak_rss_mib": round(int(rss_kib) / 1024),
            "cpu_s": round(float(user) + float(system), 1), "stats_rows": rows, "findings": findings,
        }, indent=2))
        return 0
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(30)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
