#!/usr/bin/env python3
"""Capture real NVIDIA Dynamo runs for pdwatch's tests: one command from nothing to logs.

    python3 tools/capture-dynamo/capture.py --out DIR [SCENARIO ...]   # default: every scenario
    python3 tools/capture-dynamo/capture.py --list

Installs Dynamo 1.6.1 on vLLM for CPU with NIXL into its own venv when needed
(install-dynamo.sh), then for each scenario starts a frontend and vLLM workers on 127.0.0.1
(file discovery, no etcd or NATS), loads it, scrapes every process's /metrics, does what the
scenario does mid-run (kill a worker, restart the frontend), stops it gracefully and writes
DIR/SCENARIO/. An existing DIR/SCENARIO is never overwritten.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parent
sys.path[:0] = [str(KIT), str(KIT.parent / "capture-vllm")]  # the load client and server are shared

from capture_dynamo.run import DynamoCapture  # noqa: E402
from capture_dynamo.scenarios import SCENARIOS, by_name  # noqa: E402
from capture_vllm.run import say  # noqa: E402


def ensure_venv(venv: str | None) -> Path:
    """The venv's path, installing Dynamo into it first when it lacks it."""
    cmd = ["bash", str(KIT / "install-dynamo.sh")] + ([venv] if venv else [])
    out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        sys.exit(f"capture: installing Dynamo failed (exit {out.returncode}); see the lines above")
    return Path(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="default: all")
    parser.add_argument("--out", help="folder for the captures (one subfolder per scenario)")
    parser.add_argument("--venv", help="Dynamo venv (default $PDWATCH_DYNAMO_VENV or ~/.cache/pdwatch/dynamo-1.6.1)")
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
    venv = ensure_venv(args.venv or os.environ.get("PDWATCH_DYNAMO_VENV"))
    failed = []
    for sc in chosen:
        try:
            DynamoCapture(sc, venv, out / sc.name).run()
        except Exception as exc:  # one scenario's failure does not stop the others
            say(f"{sc.name} FAILED: {exc}")
            failed.append(sc.name)
    if failed:
        say(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
