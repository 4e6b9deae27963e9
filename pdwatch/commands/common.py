"""Arguments and checks shared by the sub-commands that read logs."""

from __future__ import annotations

import argparse
from datetime import tzinfo

from pdwatch.parsers import zone
from pdwatch.errors import UsageError


def add_time_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--year", type=int, metavar="Y",
                        help="year of vLLM's year-less timestamps (default: a year seen in the file, else its mtime)")
    parser.add_argument("--tz", metavar="ZONE",
                        help="time zone of vLLM's local timestamps, e.g. Europe/Berlin (default: UTC)")


def time_zone(args: argparse.Namespace) -> tzinfo:
    try:
        return zone(args.tz)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_year(args: argparse.Namespace) -> None:
    if args.year is not None and not 1970 <= args.year <= 9999:
        raise UsageError(f"--year {args.year}: expected a four-digit year")


def add_scrape_interval_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scrape-interval", type=float, default=2.0, metavar="S",
                        help="seconds between two scrapes of each http(s):// /metrics URL given as a PATH "
                             "(follow mode only; default 2)")


def add_prom_arguments(parser: argparse.ArgumentParser, *, follow: bool = False) -> None:
    """``--since``/``--until``/``--step``: the time range read from a ``prom+http://`` PATH."""
    group = parser.add_argument_group("a Prometheus server as a PATH (prom+http://HOST:PORT[?match={...}])")
    if follow:
        group.add_argument("--since", metavar="TIME",
                           help="read this much of the past first (a duration like 30m, or a time; default 5m), "
                                "then ask every --scrape-interval seconds")
    else:
        group.add_argument("--since", metavar="TIME",
                           help="start of the range read from the server: a duration back from now (30m, 6h) "
                                "or a time (ISO 8601, UTC unless it says)")
        group.add_argument("--until", metavar="TIME", help="end of the range (default now)")
    group.add_argument("--step", metavar="DURATION",
                       help="query_range step (default: the targets' scrape interval, read from the server)")


def prom_options(args: argparse.Namespace):
    from pdwatch.sources import PromOptions
    return PromOptions(getattr(args, "since", None), getattr(args, "until", None), getattr(args, "step", None))


def add_deployment_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topology-file", metavar="FILE",
                        help="YAML naming each endpoint: name, role, globs, urls, prom, gpus (beats what pdwatch "
                             "infers)")
    parser.add_argument("--prefill", action="append", metavar="GLOB", help="files matching GLOB are prefill workers")
    parser.add_argument("--decode", action="append", metavar="GLOB", help="files matching GLOB are decode workers")


def deployment_specs(args: argparse.Namespace) -> list:
    from pdwatch.model.topology_file import load_topology, role_globs
    specs = load_topology(args.topology_file) if args.topology_file else []
    return specs + role_globs(args.prefill, args.decode)


def add_rules_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--rules", action="append", metavar="FILE",
                        help="a rules file (YAML) extending or overriding the built-in rules; may repeat")


def load_rule_set(args: argparse.Namespace) -> list:
    from pdwatch.rules import RuleFileError, load_rules
    for path in args.rules or []:
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise UsageError(f"{path}: cannot read the rules file: {exc.strerror or exc}") from None
    try:
        return load_rules(args.rules)
    except RuleFileError as exc:
        raise UsageError(str(exc)) from None

