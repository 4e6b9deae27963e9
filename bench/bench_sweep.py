#!/usr/bin/env python3
"""``pdwatch sweep`` at the scale of a tuning campaign (issue 33): many srt-slurm jobs of 8 points,
result files of hundreds of MB (their per-request arrays) and about 1 GB of logs per job.

The data: one simulated sweep job (``pdwatch.sim.sweep``, 8 concurrencies, its result files and
logs agreeing) whose result files are each padded to ``--result-mb`` with per-request arrays
(``ttfts``, ``itls``, ``generated_texts``: what real files carry), plus a ``--log-mb`` log of
another node (``make_mixed_log.py``, a vLLM/Dynamo mix two months before the sweep, so it adds
reading, not findings in the sweep's windows). ``--jobs`` job folders hold hard links to those
files (no disk per job; the page cache is shared, as on a login node that reads the same NFS files
again). Built once under ``--dir`` and reused.

Printed, in one run: wall and CPU seconds and peak RSS (GNU time's %M) of
``pdwatch sweep DIR --format json`` and, as baselines on the same files in the same run,
``grep -c`` over every log (one pass in C: the floor of reading the logs), ``pdwatch report`` on
one job's logs (times ``--jobs``: what judging the logs alone costs) and the reading of every
result file alone (``pdwatch.sweep.read_sweep``).

    python bench/bench_sweep.py                       # 50 jobs x 8 points, 300 MB results, 1 GB logs
    python bench/bench_sweep.py --jobs 5 --result-mb 50 --log-mb 200   # a quick look
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONCURRENCIES = (16, 32, 64, 128, 256, 512, 768, 1024)


def pad_result(path: Path, target_mb: int) -> None:
    """Rewrite a result file with per-request arrays making it ``target_mb`` MB (written streaming)."""
    data = json.loads(path.read_text())
    scalars = {k: v for k, v in data.items() if not isinstance(v, list)}
    target = target_mb << 20
    text = "the quick brown fox jumps over the lazy dog " * 20  # ~900 bytes a generated text
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as out:
        out.write(json.dumps(scalars)[:-1])
        written = out.tell()
        for key, item in (("ttfts", "0.0123456789"), ("itls", "[0.01, 0.011, 0.012, 0.013]"),
                          ("generated_texts", json.dumps(text))):
            out.write(f', "{key}": [')
            share = (target - written) // 3
            n = max(1, share // (len(item) + 2))
            chunk = ", ".join([item] * 1000)
            for i in range(0, n, 1000):
                out.write(("" if i == 0 else ", ") + (chunk if n - i >= 1000 else ", ".join([item] * (n - i))))
            out.write("]")
        out.write("}\n")
    os.replace(tmp, path)


def build(base: Path, jobs: int, result_mb: int, log_mb: int) -> Path:
    sys.path.insert(0, str(REPO))
    from pdwatch.sim.sweep import SweepPlan, write_sweep_job
    template = base / f"template-{result_mb}M-{log_mb}M"
    if not (template / "done").exists():
        shutil.rmtree(template, ignore_errors=True)
        job = write_sweep_job(template, plan=SweepPlan(concurrencies=CONCURRENCIES))
        for result in job.logs.rglob("results_concurrency_*.json"):
            pad_result(result, result_mb)
        subprocess.run([sys.executable, str(REPO / "bench" / "make_mixed_log.py"), "--size", f"{log_mb}M",
                        "--out", str(job.logs / "gb300-n009_decode_w7.out")], check=True, stdout=subprocess.DEVNULL)
        (template / "done").write_text(job.job_id)
    job_id = (template / "done").read_text()
    source = template / "outputs" / job_id
    campaign = base / f"campaign-{jobs}x-{result_mb}M-{log_mb}M"
    if not campaign.exists():
        for i in range(jobs):
            target = campaign / "outputs" / str(5000 + i)
            for path in source.rglob("*"):
                dest = target / path.relative_to(source)
                if path.is_dir():
                    dest.mkdir(parents=True, exist_ok=True)
                else:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    os.link(path, dest)
    return campaign


def timed(argv: list[str], stdout=subprocess.DEVNULL) -> dict:
    """Wall and CPU seconds and peak RSS (MB) of a command, by GNU time."""
    out = Path("/tmp/pdwatch-bench-time.txt")
    start = time.monotonic()
    subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", str(out), *argv], check=True, stdout=stdout,
                   stderr=subprocess.DEVNULL)
    wall = time.monotonic() - start
    user, system, rss_kb = out.read_text().split()[-3:]
    return {"wall": wall, "cpu": float(user) + float(system), "rss": int(rss_kb) / 1024}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=50)
    ap.add_argument("--result-mb", type=int, default=300)
    ap.add_argument("--log-mb", type=int, default=1024)
    ap.add_argument("--dir", type=Path, default=Path.home() / ".cache" / "pdwatch" / "bench-sweep")
    args = ap.parse_args()
    campaign = build(args.dir, args.jobs, args.result_mb, args.log_mb)
    logs = sorted(str(p) for p in campaign.rglob("*.out") if p.name != "benchmark.out")
    results = list(campaign.rglob("results_concurrency_*.json"))
    log_gb = sum(os.path.getsize(p) for p in logs) / 2**30
    result_gb = sum(os.path.getsize(p) for p in results) / 2**30
    print(f"{args.jobs} jobs, {len(results)} result files ({result_gb:.1f} GiB), {len(logs)} logs ({log_gb:.1f} GiB); "
          f"load {os.getloadavg()[0]:.2f}")
    one_job = sorted((campaign / "outputs").iterdir())[0] / "logs"
    python = sys.executable
    rows = [
        # (grep's output to a file: to /dev/null, GNU grep stops at the first match)
        ("grep -c over every log (the floor)", timed(["grep", "-c", "Avg prompt throughput", *logs],
                                                     stdout=open("/tmp/pdwatch-bench-grep.txt", "w"))),
        ("results read alone (read_sweep)", timed([python, "-c", "import sys; from pdwatch.sweep import read_sweep; "
                                                  "read_sweep(sys.argv[1:])", str(campaign)])),
        ("pdwatch report, one job's logs", timed([python, "-m", "pdwatch", "report", str(one_job), "--format", "json"])),
        ("pdwatch sweep, every job", timed([python, "-m", "pdwatch", "sweep", str(campaign), "--format", "json"])),
    ]
    print(f"{'':38} {'wall s':>8} {'CPU s':>8} {'peak RSS MB':>12}")
    for name, r in rows:
        print(f"{name:38} {r['wall']:8.1f} {r['cpu']:8.1f} {r['rss']:12.0f}")
    report = rows[2][1]
    print(f"{'report x jobs (the logs judged alone)':38} {report['wall'] * args.jobs:8.1f} {report['cpu'] * args.jobs:8.1f}")
    print(f"load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
