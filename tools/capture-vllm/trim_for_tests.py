#!/usr/bin/env python3
"""Copy captures into pdwatch's test data, small enough to keep in the repository.

    python3 tools/capture-vllm/trim_for_tests.py CAPTURES_DIR tests/data/real/captures [SCENARIO ...]

The server logs, requests.csv and scenario.json are copied unchanged. ``metrics.txt`` keeps
every scrape and its header, minus the series pdwatch never reads (python_*, process_*,
http_*), the histograms' ``_bucket`` lines (their ``_sum`` and ``_count`` stay), ``# HELP``
lines and ``_created`` samples (a series' creation time): a scrape is ~50 KB as served,
mostly bucket lines with long label sets, ~8 KB kept, which matters for the captures that
scrape every 2 s. Every vllm: counter and gauge is kept as served. The README says what was
trimmed. An existing destination folder is never overwritten. (The copies made before
2026-12-04 kept ``# HELP`` lines and ``_created`` samples; each README says how it was trimmed.)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DROPPED_PREFIXES = ("python_", "process_", "http_")


def keep(line: str) -> bool:
    if line.startswith("# ====="):
        return True
    if line.startswith("# HELP "):
        return False
    if line.startswith("# TYPE "):
        name = line.split(" ", 3)[2]
        return not (name.startswith(DROPPED_PREFIXES) or name.endswith("_created"))
    name = line.split("{", 1)[0].split(" ", 1)[0]
    return not (name.startswith(DROPPED_PREFIXES) or name.endswith(("_bucket", "_created")))


def trim_scrapes(text: str) -> str:
    return "".join(line for line in text.splitlines(keepends=True) if keep(line))


NOTE = ("\n## Trimmed for the tests\n\nThis copy was made by `tools/capture-vllm/trim_for_tests.py`: the logs, "
        "`requests.csv` and `scenario.json` are as captured; `metrics.txt` keeps every scrape with its header and "
        "every `vllm:` counter and gauge as served, without the `python_*`, `process_*` and `http_*` series, "
        "without the histograms' `_bucket` lines (their `_sum` and `_count` are kept), without `# HELP` lines and "
        "without `_created` samples.\n")


def copy_capture(src: Path, dest: Path) -> None:
    if dest.exists():
        raise SystemExit(f"trim_for_tests: {dest} exists; nothing is overwritten")
    dest.mkdir(parents=True)
    for path in sorted(src.iterdir()):
        if path.name == "metrics.txt":
            (dest / path.name).write_text(trim_scrapes(path.read_text(encoding="utf-8")), encoding="utf-8")
        elif path.name == "README.md":
            (dest / path.name).write_text(path.read_text(encoding="utf-8").rstrip("\n") + "\n" + NOTE,
                                          encoding="utf-8")
        elif path.is_file():
            shutil.copy2(path, dest / path.name)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    src, dest, names = Path(argv[0]), Path(argv[1]), argv[2:]
    for capture in sorted(p for p in src.iterdir() if p.is_dir() and (not names or p.name in names)):
        copy_capture(capture, dest / capture.name)
        print(f"{capture} -> {dest / capture.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
