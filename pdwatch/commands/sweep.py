"""``pdwatch sweep PATH...``: a sweep's points on the Pareto frontier, each with what limits it.

PATHs are srt-slurm job folders (``outputs/<job_id>/`` or the older ``<id>_<P>P_<D>D_<ts>/``) or
folders holding jobs. Each result file is a point; its window comes from benchmark.out; the
rules run over the job's logs and each point gets the verdict of what held in its window.
"""

from __future__ import annotations

import argparse
import os
import sys

from pdwatch.commands import SUMMARIES
from pdwatch.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "sweep", help=SUMMARIES["sweep"],
        description="Read srt-slurm benchmark jobs (one result file per concurrency), give each point its time "
                    "window and the verdict of the rules over it, flag invalid points, and draw the Pareto frontier "
                    "(x: tokens/s per user = 1000 / mean TPOT; y: output tokens/s per GPU, or total with --y total).")
    parser.add_argument("paths", nargs="+", metavar="PATH", help="srt-slurm job folders, or folders holding jobs")
    parser.add_argument("--format", choices=["text", "md", "html", "json"],
                        help="text (a terminal chart and the table; the default on a terminal), md (the default "
                             "otherwise), html (one page, the chart inline), json; with -o, from its extension")
    parser.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically) instead of stdout")
    parser.add_argument("--y", choices=["output", "total"], default="output",
                        help="y axis: output tokens/s per GPU (srt-slurm's, default) or total tokens/s per GPU "
                             "(the public dashboards')")
    parser.add_argument("--tz", default="UTC", metavar="TZ",
                        help="the time zone of benchmark.out's date lines (default UTC; an IANA name or +HH:MM)")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from pdwatch.session.sweep_verdicts import judge_sweep
    from pdwatch.sweep.windows import parse_timezone
    from pdwatch.views.report import sweep as view

    parse_timezone(args.tz)  # a wrong zone is a UsageError before anything is read
    missing = [p for p in args.paths if not os.path.exists(p)]
    if missing:
        raise UsageError(f"{missing[0]}: no such file or folder")
    judged = judge_sweep(args.paths, tz=args.tz)
    for note in judged.notes:
        print(f"pdwatch: {note}", file=sys.stderr)
    data = view.build(judged, args.y)
    fmt = args.format or _format_of(args.output)
    if fmt == "html":
        from pdwatch.views.report.sweep_html import render
        text = render(data)
    elif fmt == "json":
        text = view.to_json(data)
    elif fmt == "text":
        size = os.get_terminal_size(sys.stdout.fileno()) if sys.stdout.isatty() else os.terminal_size((100, 24))
        text = view.terminal(data, min(size.columns, 120), max(12, min(size.lines - 4, 30)))
    else:
        text = view.markdown(data)
    if args.output:
        from pdwatch.views.report.output import write_atomically
        write_atomically(args.output, text, [str(p) for p in args.paths])
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0


def _format_of(output: str | None) -> str:
    if output:
        suffix = os.path.splitext(output)[1].lower()
        return {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "md")
    return "text" if sys.stdout.isatty() else "md"
