"""``pdwatch report``: the post-mortem diagnosis of finished logs (Markdown, HTML or JSON)."""

from __future__ import annotations

import argparse
import os
import sys

from pdwatch.commands import SUMMARIES
from pdwatch.session.analysis import analyse, import_the_rest, start_reading
from pdwatch.commands.stopping import ctrl_c_held
from pdwatch.commands.common import add_deployment_arguments, add_prom_arguments, add_rules_argument, \
    add_time_arguments, check_year, deployment_specs, load_rule_set, prom_options, time_zone
from pdwatch.errors import UsageError
from pdwatch.rules.findings import severity_rank


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "report", help=SUMMARIES["report"],
        description="Read the logs of a run, find what limited it (rules) and write a report: deployment, "
                    "headline TPS/GPU over the steady state, per-endpoint summary, findings with evidence "
                    "and the fix, capacity. PATH is a file, a glob, a directory, - for stdin, or a Prometheus "
                    "server (prom+http://HOST:PORT[?match={job=\"vllm\"}] with --since).")
    parser.add_argument("paths", nargs="+", metavar="PATH")
    parser.add_argument("--format", choices=["md", "html", "json"],
                        help="report format (default: from -o's extension, .html or .json, else md)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (atomically) instead of stdout")
    parser.add_argument("--model-config", metavar="FILE",
                        help="the model's config.json: the capacity section (and the capacity rule) then use "
                             "pdwatch capacity's arithmetic next to what vLLM printed")
    parser.add_argument("--fail-on", choices=["warning", "critical"],
                        help="exit 1 when a finding of this severity or worse exists")
    add_deployment_arguments(parser)
    add_rules_argument(parser)
    add_time_arguments(parser)
    add_prom_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    check_year(args)
    tz = time_zone(args)
    # The logs are read on every core from here on, while this process loads the rest (the
    # rules, pandas, the report's writers: ~0.5 s of imports the reading now hides). Ctrl-C waits
    # for those imports and the rules' compiling (a stop inside them can be lost or crash Python);
    # the workers take it at once.
    with ctrl_c_held():
        reading = start_reading(args.paths, year=args.year, tz=tz)
        try:
            specs = deployment_specs(args)
            rules = load_rule_set(args)
            model = load_model(args.model_config) if args.model_config else None
            prom = prom_options(args)
            import_the_rest()
            from pdwatch.views.report import data  # noqa: F401
        except BaseException:
            reading.close()
            raise
    analysis = analyse(args.paths, specs=specs, rules=rules, year=args.year, tz=tz, model=model, prom=prom,
                       reading=reading)
    from pdwatch.views.report import data
    from pdwatch.views.report.output import write_atomically
    for notice in analysis.notices:
        if notice.kind not in ("opened", "metrics_file"):  # recorded scrapes are read by the report
            print(f"pdwatch: {notice.message}", file=sys.stderr)
    if analysis.failed_sources and not analysis.store.endpoints():
        return 2  # nothing could be read (e.g. every remote file): the lines above say why; no empty report
    if analysis.nothing_to_judge is not None:
        raise analysis.nothing_to_judge  # exit 3, one line, no report (and no file overwritten by one)
    report = data.build(analysis)
    text = render(report, output_format(args.format, args.output))
    if args.output:
        inputs = analysis.paths + [s for ep in analysis.store.endpoints() for s in ep.sources]
        write_atomically(args.output, text, inputs)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if analysis.failed_sources:
        return 2
    if args.fail_on and any(severity_rank(f["severity"]) <= severity_rank(args.fail_on) for f in report["findings"]):
        return 1
    return 0


def load_model(path: str):
    from pdwatch.capacity import ConfigError, load_model_config
    try:
        return load_model_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None


def render(report: dict, fmt: str) -> str:
    from pdwatch.views.report import json_writer, markdown
    if fmt == "json":
        return json_writer.render(report)
    if fmt == "html":
        from pdwatch.views.report import html  # imported only when asked for
        return html.render(report)
    return markdown.render(report)


def output_format(chosen: str | None, output: str | None) -> str:
    """--format when given; else what -o's name says (report.html is HTML, report.json JSON), else Markdown."""
    if chosen:
        return chosen
    suffix = os.path.splitext(output or "")[1].lower()
    return {".html": "html", ".htm": "html", ".json": "json"}.get(suffix, "md")
