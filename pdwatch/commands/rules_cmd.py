"""``pdwatch rules``: list the active rules, export them for Prometheus, run rule cases.

    pdwatch rules [list] [--rules FILE] [--format table|json]
    pdwatch rules export --format prometheus [-o FILE] [--rules FILE] [--interval 10s]
                         [--fact NAME[{job="...",instance="..."}]=VALUE]... [--match SELECTOR]
                         [--facts-from LOG... --topology-file FILE] [--deployment-label LABEL]...
    pdwatch rules test CASES.yaml... [--rules FILE]

``export`` writes the rule file (``pdwatch.alerting``) and lists on stderr the
rules it left out, with the reason. ``test`` runs rule cases (``rules.casefile``'s format,
with stats series or log lines as input: ``pdwatch.session.rule_cases``), prints a diff of
each failed expectation, and exits 1 when one failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from pdwatch.commands import SUMMARIES
from pdwatch.commands.common import add_rules_argument, load_rule_set
from pdwatch.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("rules", help=SUMMARIES["rules"],
                            description="List the rules pdwatch evaluates (the built-ins, extended or overridden "
                                        "by --rules FILE), export them as a Prometheus rule file, or run rule "
                                        "test cases.")
    add_rules_argument(parser)
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(run=run)
    actions = parser.add_subparsers(dest="action", metavar="ACTION")

    listing = actions.add_parser("list", help="list the active rules (the default)")
    _rules_argument(listing)
    listing.add_argument("--format", choices=["table", "json"], default=argparse.SUPPRESS)
    listing.set_defaults(run=run)

    export = actions.add_parser(
        "export", help="write the rules as a Prometheus rule file (recording and alerting rules)",
        description="Translate the rules into one Prometheus rule group: recording rules for the stats fields "
                    "(pdwatch:running, ...), one alert per rule, named by its id, with its severity and its "
                    "summary, explanation and fix as annotations. Rules PromQL cannot express are listed on "
                    "stderr with the reason. See docs/prometheus.md.")
    _rules_argument(export)
    export.add_argument("--format", dest="export_format", choices=["prometheus"], required=True,
                        help="prometheus: a rule file for Prometheus (promtool check rules passes it)")
    export.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (atomically) instead of stdout")
    export.add_argument("--interval", default="10s", metavar="DURATION",
                        help="the vLLM targets' scrape interval, the rules' evaluation interval: "
                             "'N samples' is N scrapes (default 10s)")
    export.add_argument("--fact", action="append", default=[], metavar='NAME[{job="J",instance="I"}]=VALUE',
                        help="a start-up fact the rules read (max_num_seqs, max_capture_size, "
                             "num_speculative_tokens, concurrency, ...) for every target, or one job or "
                             "instance: written as pdwatch_fact series; may repeat")
    export.add_argument("--facts-from", action="append", default=[], metavar="LOG",
                        help="read the facts from these logs' start-up lines (max_num_seqs, the CUDA-graph "
                             "capture size, ...), each endpoint's for the job/instance its topology entry's "
                             "prom: selector names (needs --topology-file); may repeat")
    export.add_argument("--topology-file", metavar="FILE",
                        help="with --facts-from: the endpoints, their logs (globs) and their targets (prom:)")
    export.add_argument("--match", metavar="SELECTOR",
                        help='the vLLM targets, e.g. {job=~"vllm.*"}: stats_missing then also fires for a '
                             "target that is up but serves no vllm: series")
    export.add_argument("--deployment-label", action="append", default=[], metavar="LABEL",
                        help="peers (peer_max(\"decode\", ...)) are the endpoints sharing this label "
                             "(default: every endpoint of the server); may repeat")
    export.set_defaults(run=run_export)

    test = actions.add_parser(
        "test", help="run rule test cases (like promtool test rules); exit 1 if one fails",
        description="Run the tests of each CASES.yaml (see rules/casefile.py; the built-in rules' cases are in "
                    "tests/rules_builtin/cases): stats series or log lines per endpoint, and the findings "
                    "expected to fire at given times (an empty list: nothing may fire). Each failed expectation "
                    "is printed as a diff.")
    test.add_argument("cases", nargs="+", metavar="CASES.yaml")
    _rules_argument(test, help_text="test these rules (with the built-ins) instead of the files' rule_files; "
                                    "may repeat")
    test.set_defaults(run=run_test)


def _rules_argument(parser: argparse.ArgumentParser, help_text: str | None = None) -> None:
    # SUPPRESS: `pdwatch rules --rules X export` keeps the X given before the action.
    parser.add_argument("--rules", action="append", metavar="FILE", default=argparse.SUPPRESS,
                        help=help_text or "a rules file (YAML) extending or overriding the built-in rules; may repeat")


# -- list ---------------------------------------------------------------------------------------------------
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


# -- export -------------------------------------------------------------------------------------------------
def run_export(args: argparse.Namespace) -> int:
    from pdwatch.units import parse_duration
    from pdwatch.sources.promql import SelectorError, parse_selector
    import pdwatch.alerting as pr

    interval = parse_duration(args.interval)
    if interval is None or not interval >= 0.001:
        raise UsageError(f"--interval {args.interval}: expected a duration such as 10s")
    try:
        facts = tuple(pr.parse_fact(f) for f in args.fact)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        match = parse_selector(args.match) if args.match else ()
    except SelectorError as exc:
        raise UsageError(f"--match: {exc}") from None
    for label in args.deployment_label:
        if not label.isidentifier() or label.startswith("__") or label in ("job", "instance", "role", "engine"):
            raise UsageError(f"--deployment-label {label!r}: expected a label name other than job, instance, "
                             f"role and engine")
    rules = load_rule_set(args)
    if args.facts_from:
        facts = facts + facts_from_logs(args)
    elif args.topology_file:
        raise UsageError("--topology-file is read with --facts-from LOG (whose facts go to which targets)")
    options = pr.ExportOptions(interval_s=interval, facts=facts, match=match,
                               deployment_labels=tuple(dict.fromkeys(args.deployment_label)))
    result = pr.export(rules, options)
    for finding, why in result.left_out:
        print(f"pdwatch: not exported: {finding}: {why}", file=sys.stderr)
    for finding, note in result.notes:
        print(f"pdwatch: note: {finding}: {note}", file=sys.stderr)
    if any(not r.keep_firing_for.is_zero for r in rules if r.finding in result.exported):
        print("pdwatch: note: keep_firing_for is left out (Prometheus 2.42 has none; 2.47 added it): the "
              "exported alerts resolve as soon as their condition stops holding", file=sys.stderr)
    if args.output:
        from pdwatch.views.report.output import write_atomically
        write_atomically(args.output, result.text, list(getattr(args, "rules", None) or []))
        print(f"pdwatch: wrote {args.output}: {len(result.exported)} rules exported, {len(result.left_out)} "
              f"left out", file=sys.stderr)
    else:
        sys.stdout.write(result.text)
    return 0


def facts_from_logs(args: argparse.Namespace) -> tuple:
    """The numeric start-up facts of each endpoint of the logs, as ``--fact`` values for the
    job (and instance) its topology entry's ``prom:`` selector names with ``=``."""
    from pdwatch.model.topology_file import load_topology
    from pdwatch.session.analysis import analyse
    from pdwatch.sources.promql import parse_selector
    from pdwatch.alerting import NUMERIC_FACTS, FactValue

    if not args.topology_file:
        raise UsageError("--facts-from needs --topology-file: it says which targets (prom: {job=..., "
                         "instance=...}) each endpoint's logs are")
    specs = load_topology(args.topology_file)
    analysis = analyse(args.facts_from, specs=specs, rules=[])
    by_name = {spec.name: spec for spec in specs if spec.name}
    out: list = []
    for endpoint in analysis.store.endpoints():
        spec = by_name.get(endpoint.name)
        targets = []
        for selector in spec.prom if spec is not None else ():
            exact = {m.name: m.value for m in parse_selector(selector) if m.op == "="}
            if "job" in exact:
                targets.append((exact["job"], exact.get("instance")))
        if not targets:
            print(f"pdwatch: facts of {endpoint.name} not exported: its topology entry has no prom: selector "
                  f'with job="..." (and instance="...")', file=sys.stderr)
            continue
        facts = dict(endpoint.facts)
        if "max_capture_size" in facts and facts["max_capture_size"] is None:
            facts["max_capture_size"] = 0  # CUDA graphs off: no batch runs a graph
        numeric = {k: float(v) for k, v in facts.items() if k in NUMERIC_FACTS and k not in ("concurrency", "isl",
                   "osl") and isinstance(v, (int, float)) and not isinstance(v, bool)}
        for job, instance in targets:
            out += [FactValue(name, value, job, instance) for name, value in sorted(numeric.items())]
        shown = ", ".join(f"{k}={v:g}" for k, v in sorted(numeric.items())) or "none"
        print(f"pdwatch: facts of {endpoint.name} from its logs: {shown}", file=sys.stderr)
    return tuple(out)


# -- test ---------------------------------------------------------------------------------------------------
def run_test(args: argparse.Namespace) -> int:
    from pdwatch.rules import RuleFileError
    from pdwatch.rules.casefile import case_rules, load_case_file, run_case_file
    from pdwatch.session.rule_cases import CaseInputError, prepare

    given = getattr(args, "rules", None)
    rules = load_rule_set(args) if given else None
    passed = failed = 0
    for path in args.cases:
        if not os.path.isfile(path):
            raise UsageError(f"{path}: no such case file")
        try:
            doc = load_case_file(path)
            file_rules = rules if rules is not None else case_rules(path, doc)
            results = run_case_file(path, file_rules, prepare=lambda t, p=path: prepare(t, os.path.dirname(p)))
        except RuleFileError as exc:
            raise UsageError(str(exc)) from None
        except CaseInputError as exc:
            raise UsageError(f"{path}: {exc}") from None
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}: not a rule case file pdwatch can run: {exc}") from None
        for result in results:
            if result.ok:
                passed += 1
                print(f"PASS  {path}: {result.name}")
                continue
            failed += 1
            print(f"FAIL  {path}: {result.name}")
            for diff in result.diffs:
                print(f"  {diff.where}:")
                for want in diff.missing:
                    print(f"    - expected  {_show(want)}")
                for got in diff.unexpected:
                    print(f"    + fired     {_show(got, _BRIEF)}")
                if diff.missing and not diff.got:
                    print("      (nothing fired there)")
                elif diff.missing:
                    for got in (g for g in diff.got if g not in diff.unexpected):
                        print(f"      fired     {_show(got, _BRIEF)}  (as expected)")
    total = passed + failed
    print(f"{passed} of {total} case(s) passed" + (f", {failed} failed" if failed else ""))
    return 1 if failed else 0


_ORDER = ("finding", "endpoint", "engines", "severity", "start", "end", "state", "value", "labels", "summary",
          "evidence_lines")


_BRIEF = ("finding", "endpoint", "engines", "severity", "start", "end", "value")


def _show(item: dict[str, Any], keys: tuple[str, ...] | None = None) -> str:
    """One finding as a diff line: its id, where, and the other keys compared (or that fired)."""
    if keys is not None:
        item = {k: item[k] for k in keys if k in item}
    keys = [k for k in _ORDER if k in item] + [k for k in item if k not in _ORDER]
    parts = []
    for key in keys:
        value = item[key]
        if key in ("labels", "evidence_lines") and not value:
            continue
        if key == "value" and isinstance(value, float):
            value = round(value, 6)
        if key in ("start", "end") and isinstance(value, (int, float)):
            value = f"{value:g}s"
        parts.append(f"{key}={value}" if key != "finding" else str(value))
    return " ".join(parts)
