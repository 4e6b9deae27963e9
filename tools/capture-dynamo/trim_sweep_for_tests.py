#!/usr/bin/env python3
"""Copy a captured sweep job (capture_sweep.py) into pdwatch's test data, small enough to keep.

    python3 tools/capture-dynamo/trim_sweep_for_tests.py OUT/outputs/<job_id> tests/data/real/sweeps/NAME

The job folder is copied as it is (``<job_id>.json``, ``config.yaml``, ``README.md``, ``sweep.json``,
``logs/*.out``, ``logs/benchmark.out``) into ``NAME/<job_id>/``, except:

- each ``logs/*.metrics.txt`` keeps every scrape and its header but only the series a diagnosis reads
  (``trim_for_tests.keep``, the same cut as the scenario captures);
- ``logs/raw_prometheus.jsonl`` (``--scrapes raw-jsonl``/``both``) keeps every record, each on its line
  and with every key as written, but its ``text`` only with the series a diagnosis reads (the same cut);
  ``--gzip`` writes it as ``raw_prometheus.jsonl.gz`` instead (as srt-slurm's post-processing may);
- each result file ``results_concurrency_*.json`` loses the per-request arrays ``vllm bench serve
  --save-detailed`` adds that are large (``itls``: every inter-token gap of every request, and
  ``generated_texts``) when the file is over ``--max-result-kb`` (default 64); every other key is kept
  as written, in its order, including the small per-request arrays (``input_lens``, ``output_lens``,
  ``ttfts``, ``errors``).

What was dropped is listed in ``NAME/TRIMMED.md``. An existing destination is never overwritten.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from trim_for_tests import keep  # noqa: E402

BIG_ARRAYS = ("itls", "generated_texts")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("job", help="OUT/outputs/<job_id>")
    parser.add_argument("dest", help="tests/data/real/sweeps/NAME")
    parser.add_argument("--max-result-kb", type=int, default=64)
    parser.add_argument("--gzip", action="store_true", help="write logs/raw_prometheus.jsonl gzipped (.jsonl.gz)")
    args = parser.parse_args(argv)
    job, dest = Path(args.job), Path(args.dest)
    target = dest / job.name
    if target.exists():
        parser.error(f"{target} exists; nothing is overwritten")
    notes = []
    shutil.copytree(job, target, ignore=shutil.ignore_patterns("*.metrics.txt", "raw_prometheus.jsonl"))
    for src in sorted((job / "logs").glob("*.metrics.txt")):
        kept = [line for line in src.read_text(encoding="utf-8", errors="replace").splitlines() if keep(line)]
        (target / "logs" / src.name).write_text("\n".join(kept) + "\n", encoding="utf-8")
        notes.append(f"- `logs/{src.name}`: {src.stat().st_size} bytes as scraped, "
                     f"{(target / 'logs' / src.name).stat().st_size} kept (the series a diagnosis reads, every scrape)")
    raw = job / "logs" / "raw_prometheus.jsonl"
    if raw.exists():
        out = target / "logs" / ("raw_prometheus.jsonl.gz" if args.gzip else "raw_prometheus.jsonl")
        opener = (lambda: gzip.open(out, "wt", encoding="utf-8", compresslevel=9)) if args.gzip else \
            (lambda: open(out, "w", encoding="utf-8"))
        records = 0
        with open(raw, encoding="utf-8", errors="replace") as src, opener() as dst:
            for line in src:
                record = json.loads(line)
                record["text"] = "".join(f"{kept}\n" for kept in record.get("text", "").splitlines() if keep(kept))
                dst.write(json.dumps(record) + "\n")
                records += 1
        notes.append(f"- `logs/raw_prometheus.jsonl`: {raw.stat().st_size} bytes as scraped, {records} records; "
                     f"`logs/{out.name}` {out.stat().st_size} bytes kept (every record and key, each `text` "
                     f"with the series a diagnosis reads{', gzipped' if args.gzip else ''})")
    for result in sorted(target.glob("logs/sa-bench_*/*.json")):
        size = result.stat().st_size
        if size <= args.max_result_kb * 1024:
            notes.append(f"- `{result.relative_to(target)}`: {size} bytes, unchanged")
            continue
        data = json.loads(result.read_text(encoding="utf-8"))
        dropped = [k for k in BIG_ARRAYS if k in data]
        for k in dropped:
            del data[k]
        result.write_text(json.dumps(data), encoding="utf-8")  # as vllm bench serve writes it: one line
        notes.append(f"- `{result.relative_to(target)}`: {size} bytes as written, {result.stat().st_size} kept; "
                     f"dropped the per-request arrays {', '.join(f'`{k}`' for k in dropped)}, every other key as written")
    (dest / "TRIMMED.md").write_text(f"# What trim_sweep_for_tests.py changed in `{job.name}/`\n\n"
                                     "Everything else is copied byte for byte.\n\n" + "\n".join(notes) + "\n",
                                     encoding="utf-8")
    print(f"copied {job} to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
