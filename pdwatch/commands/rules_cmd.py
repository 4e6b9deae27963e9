"""``pdwatch rules``: list the active rules (built-in plus ``--rules FILE``)."""

from __future__ import annotations

import argparse
import json
import sys

from pdwatch.commands import SUMMARIES
from pdwatch.commands.common import add_rules_argument, load_rule_set


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("rules", help=SUMMARIES["rules"],
                            description="List the rules pdwatch evaluates: the built-ins, extended or "
                                        "overridden by --rules FILE (checked, with file:line errors).")
    add_rules_argument(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    rules = sorted(load_rule_set(args), key=lambda r: r.finding)
    if args.format == "json":
        rows = [{"finding": r.finding, "severity": r.severity, "scope": r.scope, "group": r.group,
                 "origin": r.origin, "for": str(r.for_), "expr": r.expr.text,
                 "when": r.when.text if r.when is not None else None} for r in rules]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    print(f"{'FINDING':<28} {'SEVERITY':<9} {'SCOPE':<11} FROM")
    for r in rules:
        print(f"{r.finding:<28} {r.severity:<9} {r.scope:<11} {r.origin}")
    return 0
