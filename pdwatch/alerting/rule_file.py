"""The rule file: one Prometheus rule group of recording rules and alerts, as YAML.

``export(rules, options) -> Export``: the stats fields' recording rules, the ``--fact``
series and each fact's join per engine, then for each rule (``translate_rule``) the recording
rule of its condition (``pdwatch:condition:<finding>``) and its alert(s), one per variant; the
rules left out, with the reason. ``stats_missing`` reads the log's silence: its Prometheus
form is written by hand (``OVERRIDES``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from pdwatch.alerting.annotations import annotation
from pdwatch.alerting.facts import DEPLOYMENT_FACTS, FACT_SERIES, fact_join, facts_note
from pdwatch.alerting.fields import RANK, ExportOptions, field_rules, label_list, number
from pdwatch.alerting.translate import C, Ctx, Translator, Untranslatable, V, kleene, paren
from pdwatch.parsers.exposition import RUNNING
from pdwatch.rules import Rule
from pdwatch.rules.template import Template
from pdwatch.units import fmt_compact_duration

GROUP = "pdwatch"
CONDITION = "pdwatch:condition:"  # + finding: the instances where a rule's expr and when hold


# -- the rule file -------------------------------------------------------------------------------------------
@dataclass
class Export:
    """The rule file's text, the rules it exports, those left out (and why), the approximations."""

    text: str
    exported: list[str] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (rule, why)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (rule, what is approximate)


class _Literal(str):
    """A block scalar in the YAML (long PromQL reads better on its own lines)."""


def _literal(dumper: yaml.SafeDumper, data: _Literal) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|" if "\n" in data else None)


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Literal, _literal)


def translate_rule(rule: Rule, o: ExportOptions) -> tuple[list[dict[str, Any]], list[str], set[str]]:
    """The recording rule of its condition and the alerting rule(s) of one pdwatch rule, the notes
    on what is approximate, the facts read.

    Raises ``Untranslatable`` when it cannot be said in PromQL, or would never fire there."""
    if rule.finding in OVERRIDES:
        return OVERRIDES[rule.finding](rule, o), [], set()
    tr = Translator(o)
    fields = set(rule.expr.fields()) | set(rule.when.fields() if rule.when else [])
    if not fields:
        kinds = rule.expr.event_kinds() + (rule.when.event_kinds() if rule.when else [])
        reads = f"log events ({', '.join(dict.fromkeys(kinds))})" if kinds else "start-up facts from the logs"
        raise Untranslatable(f"it reads no metric, only {reads}")
    ctx = Ctx(rule.scope)
    cond = tr.cond(rule.expr.root, ctx)
    when = tr.cond(rule.when.root, ctx) if rule.when is not None else C(True)
    both = _and(tr, cond, when, ctx)
    if both.is_const:
        if both.const is True:
            raise Untranslatable("its condition is always true without the logs")
        kinds = rule.expr.event_kinds()
        why = f"log events ({', '.join(kinds)})" if kinds else "start-up facts only the logs have"
        raise Untranslatable(f"without {why} its condition never holds")
    level = both.level
    if RANK[level] < RANK[rule.scope if rule.scope != "deployment" else "deployment"]:
        both = tr.spread(both, rule.scope, ctx)
    # The condition is recorded (pdwatch:condition:<finding>); the alert's value is the rule's value.
    condition = f"{CONDITION}{rule.finding}"
    records = [{"record": condition, "expr": _Literal(both.q)}]
    value = tr.num(rule.value.root, ctx)
    if value.is_const:
        expr = condition if value.const is None or isinstance(value.const, str) else \
            f"{condition} * 0 + {number(float(value.const))}"
    else:
        if RANK[value.level] < RANK[both.level]:
            value = tr.lift(value, both.level, ctx)
        expr = f"({paren(value.q)} and {condition}) or {condition}"
    alerts: list[dict[str, Any]] = []
    variants = [(v, tr.cond(v.when.root, ctx)) for v in rule.variants]
    holding = [c for _, c in variants if not c.is_const or c.const is True]
    base_expr = expr
    for c in holding:  # the rule's own wording where no variant holds
        base_expr = f"({base_expr}) unless ({_spread_q(tr, c, both.level, ctx)})" if not c.is_const else ""
    if base_expr:
        alerts.append(_alert(rule, base_expr, rule.severity, rule.summary, rule.explanation, rule.recommendation,
                             o, tr))
    earlier: list[V] = []
    for variant, c in variants:
        if c.is_const and c.const is not True:
            continue  # never holds without the logs
        q = expr if c.is_const else f"({expr}) and ({_spread_q(tr, c, both.level, ctx)})"
        for e in earlier:
            q = f"({q}) unless ({_spread_q(tr, e, both.level, ctx)})"
        alerts.append(_alert(rule, q, variant.severity or rule.severity, variant.summary or rule.summary,
                             variant.explanation or rule.explanation, variant.recommendation or rule.recommendation,
                             o, tr))
        if not c.is_const:
            earlier.append(c)
    return records + alerts, list(dict.fromkeys(tr.notes)), tr.facts_used


def _spread_q(tr: Translator, c: V, level: str, ctx: Ctx) -> str:
    return tr.spread(c, level, ctx).q if RANK[c.level] < RANK[level] else c.q


def _and(tr: Translator, a: V, b: V, ctx: Ctx) -> V:
    if a.is_const and b.is_const:
        return C(kleene("and", a.const, b.const))
    if a.is_const or b.is_const:
        k, other = (a, b) if a.is_const else (b, a)
        return other if k.const is True else C(False if k.const is False else None)
    if a.level == b.level:
        return V(f"{paren(a.q)} and {paren(b.q)}", a.level)
    fine, coarse = (a, b) if RANK[a.level] > RANK[b.level] else (b, a)
    return V(f"{paren(fine.q)} and on({label_list(tr.o.labels(coarse.level))}) {paren(coarse.q)}", fine.level)


def _alert(rule: Rule, expr: str, severity: str, summary: Template, explanation: Template,
           recommendation: Template, o: ExportOptions, tr: Translator) -> dict[str, Any]:
    alert: dict[str, Any] = {"alert": rule.finding, "expr": _Literal(expr)}
    hold = rule.for_.hold_us(o.interval_s * 1e6) / 1e6
    if hold > 0:
        alert["for"] = fmt_compact_duration(hold)
    alert["labels"] = {"severity": severity, **{k: str(v) for k, v in sorted(rule.labels.items())}}
    description = annotation(explanation, rule, tr)
    fix = annotation(recommendation, rule, tr)
    alert["annotations"] = {"summary": annotation(summary, rule, tr),
                            "description": f"{description}\n\nFix: {fix}" if fix else description}
    if tr.facts_used:
        alert["annotations"]["facts"] = facts_note(sorted(tr.facts_used), o)
    return alert


# -- rules written by hand ------------------------------------------------------------------------------------
def _stats_missing(rule: Rule, o: ExportOptions) -> list[dict[str, Any]]:
    """stats_missing reads the log (silence, "disabling stats logging"); its Prometheus form: an
    endpoint that served vLLM series in the last hour serves none now (its target is down, or its
    page lost them), or (with --match naming the vLLM targets) a target that is up but serves no
    vllm: series at all (--disable-log-stats on vLLM 0.32), while another endpoint does."""
    p, d, target = label_list(o.endpoint_labels), label_list(o.deployment_labels), label_list(o.endpoint_labels[:-1])
    # silent for more than 3 stats intervals: no sample in the last 3 (a range includes its start)
    recent = f"group by ({p}) (present_over_time({RUNNING}[{fmt_compact_duration(3 * o.interval_s)}]))"
    clauses = [f"group by ({p}) (present_over_time({RUNNING}[1h])) unless on({target}) {recent}"]
    if o.match:
        up = "up{" + ",".join(m.promql() for m in o.match) + "}"
        clauses.append(f"group by ({p}) ({up} == 1) unless on({target}) {recent}")
    silent = " or ".join(f"({c})" for c in clauses)
    expr = f"({silent}) and on({d}) (count by ({d}) ({RUNNING}) > 0)"
    hold = rule.for_.hold_us(o.interval_s * 1e6) / 1e6
    checked = "its target is down or its page has no vllm: series" + (
        "" if o.match else " (after serving some in the last hour)")
    return [{
        "alert": rule.finding, "expr": _Literal(expr), "for": fmt_compact_duration(hold),
        "labels": {"severity": rule.severity, **{k: str(v) for k, v in sorted(rule.labels.items())}},
        "annotations": {
            "summary": "{{ $labels.instance }} ({{ with $labels.role }}{{ . }}{{ else }}unknown{{ end }}) serves "
                       "no vLLM stats series while other endpoints do: " + checked,
            "description": "Without vLLM's running, waiting, KV-usage and throughput series this endpoint is "
                           "invisible: no bottleneck rule can judge it and the deployment's TPS per GPU cannot "
                           "be computed. Its target is down (see up), or vLLM serves no vllm: series (vLLM 0.32 "
                           "started with --disable-log-stats serves none)."
                           "\n\nFix: Check that {{ $labels.instance }} is up and reachable from Prometheus; start "
                           "it without --disable-log-stats (and with --api-server-count 1 to keep its stats "
                           "lines in the log too).",
        },
    }]


OVERRIDES = {"stats_missing": _stats_missing}


def export(rules: list[Rule], options: ExportOptions) -> Export:
    """The rule file of these rules (one group, ``pdwatch``), what it exports and what it leaves out."""
    out = Export("")
    alerts: list[dict[str, Any]] = []
    facts: set[str] = set()
    for rule in sorted(rules, key=lambda r: r.finding):
        try:
            made, notes, used = translate_rule(rule, options)
        except Untranslatable as exc:
            out.left_out.append((rule.finding, str(exc)))
            continue
        alerts += made
        facts |= used
        out.exported.append(rule.finding)
        out.notes += [(rule.finding, n) for n in notes]
    # A group is evaluated in order: what a rule reads is recorded before it.
    records: list[dict[str, Any]] = [{"record": name, "expr": _Literal(q)} for name, q, _ in field_rules(options)]
    for given in options.facts:  # --fact: the facts as series
        labels = {"fact": given.name}
        if given.job is not None:
            labels["job"] = given.job
        if given.instance is not None:
            labels["instance"] = given.instance
        records.append({"record": FACT_SERIES, "expr": f"vector({number(given.value)})", "labels": labels})
    for fact in sorted(facts - DEPLOYMENT_FACTS):
        records.append({"record": f"pdwatch:fact:{fact}", "expr": _Literal(fact_join(fact, options))})
    group = {"name": GROUP, "interval": fmt_compact_duration(options.interval_s), "rules": records + alerts}
    head = ("# pdwatch's rules for Prometheus (pdwatch rules export --format prometheus).\n"
            f"# Evaluated every {fmt_compact_duration(options.interval_s)}: set it to the scrape interval of the vLLM "
            "targets (--interval), one stats line per scrape.\n"
            f"# Exported: {', '.join(out.exported) or 'none'}.\n"
            + "".join(f"# Left out: {r}: {why}.\n" for r, why in out.left_out)
            + f"# Facts (not metrics) are read from {FACT_SERIES}{{fact=\"NAME\", job=..., instance=...}}; "
              "--fact NAME=VALUE writes them.\n")
    body = yaml.dump({"groups": [group]}, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
    out.text = head + body
    return out
