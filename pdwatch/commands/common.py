"""Arguments and checks shared by the sub-commands that read logs."""

from __future__ import annotations

import argparse
from datetime import tzinfo

from parsers import zone
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
