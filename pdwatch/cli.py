"""Command-line entry point: one sub-command per module in ``pdwatch.commands``."""

from __future__ import annotations

import argparse
import sys

from pdwatch import __version__
from pdwatch.commands import capacity as capacity_cmd, demo as demo_cmd, parse as parse_cmd, record as record_cmd, report as report_cmd, rules_cmd, simulate as simulate_cmd, watch as watch_cmd
from pdwatch.errors import UsageError

COMMANDS = [parse_cmd, report_cmd, rules_cmd, simulate_cmd, demo_cmd, capacity_cmd, watch_cmd, record_cmd]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pdwatch",
        description="Find the bottleneck of a prefill/decode-disaggregated vLLM deployment from its logs and metrics.",
    )
    parser.add_argument("--version", action="version", version=f"pdwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        command.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except UsageError as exc:
        print(f"pdwatch: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader (head, less) went away: stop quietly, and keep Python from complaining at exit.
        try:
            sys.stdout = open("/dev/null", "w")  # noqa: SIM115
        except OSError:
            pass
        return 0
