"""Command-line entry point: one sub-command per module in ``pdwatch.commands``."""

from __future__ import annotations

import argparse
import importlib
import sys

from pdwatch import __version__
from pdwatch.commands.stopping import ctrl_c_held, exit_status, forget_lost_stops, resurface_lost_stops
from pdwatch.errors import NOTHING_TO_JUDGE_STATUS, NothingToJudge, UsageError

# Sub-command -> module. Only the chosen one is imported: the others pull in pandas, Textual,
# the simulator (~0.6 s together), which `pdwatch parse` on a big file would wait for.
COMMANDS = {
    "parse": "pdwatch.commands.parse",
    "report": "pdwatch.commands.report",
    "rules": "pdwatch.commands.rules_cmd",
    "simulate": "pdwatch.commands.simulate",
    "sweep": "pdwatch.commands.sweep",
    "demo": "pdwatch.commands.demo",
    "capacity": "pdwatch.commands.capacity",
    "watch": "pdwatch.commands.watch",  # registers replay too
    "replay": "pdwatch.commands.watch",
    "record": "pdwatch.commands.record",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser with every sub-command, or only ``command``'s when it names one."""
    parser = argparse.ArgumentParser(
        prog="pdwatch",
        description="Find the bottleneck of a prefill/decode-disaggregated vLLM deployment from its logs and metrics.",
    )
    parser.add_argument("--version", action="version", version=f"pdwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    modules = [COMMANDS[command]] if command in COMMANDS else list(dict.fromkeys(COMMANDS.values()))
    for module in modules:
        importlib.import_module(module).register(sub)
    return parser


# Options whose value may be a negative offset ("--start -1m": a minute before the end), which
# argparse would otherwise take for an option of its own.
_OFFSET_OPTIONS = ("--start",)


def _join_negative_offsets(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in _OFFSET_OPTIONS and i + 1 < len(argv) and argv[i + 1][:1] == "-" and argv[i + 1][1:2].isdigit():
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
            continue
        out.append(argv[i])
        i += 1
    return out


FIRST_STEPS = """\
pdwatch finds the bottleneck of a vLLM / NVIDIA Dynamo deployment (prefill/decode or aggregated)
from its logs and /metrics. Three uses:

  pdwatch watch JOB_DIR          a running job, live: the dashboard (also FILES, globs, ssh://host/dir, URLs)
  pdwatch replay JOB_DIR         finished logs played back on their own clock, in the same dashboard
  pdwatch report JOB_DIR         the diagnosis as a report (-o report.html, --format md|html|json)

and for tuning, srt-slurm benchmark sweeps:
  pdwatch sweep JOBS_DIR         the Pareto frontier, with what limits each point (-o sweep.html)

First steps, in a clone of the repository (its samples/ folder):
  pdwatch report samples/kv-exhausted
  pdwatch replay samples/prefill-bound
  pdwatch demo --dir demo-job --logs-only &  pdwatch watch demo-job

Every command and option: pdwatch --help, pdwatch COMMAND --help
"""


def overview_parser() -> argparse.ArgumentParser:
    """The top-level parser for ``--help`` and ``--version``: the commands by name and summary, none
    imported (they pull in pandas, numpy, Textual: a second of start-up for a line of help)."""
    from pdwatch.commands import SUMMARIES

    parser = argparse.ArgumentParser(
        prog="pdwatch",
        description="Find the bottleneck of a prefill/decode-disaggregated vLLM deployment from its logs and metrics.",
    )
    parser.add_argument("--version", action="version", version=f"pdwatch {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in COMMANDS:
        sub.add_parser(name, help=SUMMARIES[name], add_help=False)
    return parser


def _unmark_interrupt_as_unhandled() -> None:
    """CPython marks a KeyboardInterrupt raised inside ``exec`` of a string as unhandled, caught or
    not, and then ends the process by SIGINT instead of with the status main returns (seen: Ctrl-C
    landing while a dataclass built its methods, which it does with ``exec``, at import: the
    process died of SIGINT, not 130). Every ``exec`` of a string clears the mark before it runs."""
    exec("")  # noqa: S102


def main(argv: list[str] | None = None) -> int:
    argv = _join_negative_offsets(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)  # top-level options take no value
    if not argv:
        print(FIRST_STEPS, end="")
        return 0
    resurface_lost_stops()
    try:
        with ctrl_c_held():
            if chosen not in COMMANDS:  # --help, --version, nothing or a typo: no command module is needed
                overview_parser().parse_args(argv)
            args = build_parser(chosen).parse_args(argv)
        return int(args.run(args) or 0)
    except UsageError as exc:
        print(f"pdwatch: error: {exc}", file=sys.stderr)
        return 2
    except NothingToJudge as exc:
        print(f"pdwatch: {exc}", file=sys.stderr)
        return NOTHING_TO_JUDGE_STATUS
    except KeyboardInterrupt as interrupt:  # Ctrl-C, or a stop signal a command turned into one (Stopped)
        forget_lost_stops()
        _unmark_interrupt_as_unhandled()
        return exit_status(interrupt)
    except BrokenPipeError:
        # The reader (head, less) went away: stop quietly, and keep Python from complaining at exit.
        try:
            sys.stdout = open("/dev/null", "w")  # noqa: SIM115
        except OSError:
            pass
        return 0
