#!/usr/bin/env python3
"""Copy a captured sweep job (capture_sweep.py) into pdwatch's test data, small enough to keep.

    python3 tools/capture-dynamo/trim_sweep_for_tests.py OUT/outputs/<job_id> tests/data/real/sweeps/NAME

The job folder is copied as it is (``<job_id>.json``, ``config.yaml``, ``README.md``, ``sweep.json``,
``logs/*.out``, ``logs/benchmark.out``) into ``NAME/<job_id>/``, except:

- each ``logs/*.metrics.txt`` keeps every scrape and its header but only the series a diagnosis reads
  (``trim_for_tests.keep``, the same cut as the scenario captures);
- each result file ``results_concurrency_*.json`` loses the per-request arrays ``vllm bench serve
  --save-detailed`` adds that are large (``itls``: every inter-token gap of every request, and
  ``generated_texts``) when the file is over ``--max-result-kb`` (default 64); every other key is kept
  as written, in its order, including the small per-request arrays (``input_lens``, ``output_lens``,
  ``ttfts``, ``errors``).

What was dropped is listed in ``NAME/TRIMMED.md``. An existing destination is never overwritten.
"""

from __future__ import annotations

import argparse
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
    args = parser.parse_args(argv)
    job, dest = Path(args.job), Path(args.dest)
    target = dest / job.name
    if target.exists():
        parser.error(f"{target} exists; nothing is overwritten")
    notes = []
    shutil.copytree(job, target, ignore=shutil.ignore_patterns("*.metrics.txt"))
    for src in sorted((job / "logs").glob("*.metrics.txt")):
        kept = [line for line in src.read_text(encoding="utf-8", errors="replace").splitlines() if keep(line)]
        (target / "logs" / src.name).write_text("\n".join(kept) + "\n", encoding="utf-8")
        notes.append(f"- `logs/{src.name}`: {src.stat().st_size} bytes as scraped, "
                     f"{(target / 'logs' / src.name).stat().st_size} kept (the series a diagnosis reads, every scrape)")
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
