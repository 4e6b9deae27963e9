"""Rules files: YAML in the shape of Prometheus alerting rules, loaded into ``Rule`` objects.

    groups:
    - name: scheduler-limits
      labels: {team: serving}           # optional, added to every rule of the group
      rules:
      - finding: seq_cap_bound          # id, lower_snake_case, unique within a file
        scope: engine                   # engine | endpoint (default) | deployment
        when: has_fact("max_num_seqs")  # optional filter on instances
        expr: fraction(running >= fact("max_num_seqs") and waiting > 0, 4 samples) >= 0.75
        value: last(waiting)            # optional: the finding's key number
        for: 3 samples                  # 30s, 1m30s, 6 samples; default 0
        keep_firing_for: 2 samples      # optional
        severity: warning               # info | warning | critical
        labels: {bottleneck: scheduler}
        summary: "{{ endpoint }} engine {{ engines }} is capped at {{ fact.max_num_seqs }}"
        explanation: "..."              # templates, see rules.template
        recommendation: "..."
        variants:                       # optional: another severity and wording where `when` holds
        - when: has_fact("max_num_seqs") and fact.max_num_seqs > 1024
          severity: info
          summary: "..."                # severity, summary, explanation, recommendation: any of them
        evidence:                       # optional: which log lines to quote
          rows: running >= fact("max_num_seqs") and waiting > 0   # per-line filter
          rank: waiting                 # per-line number, larger = more telling
          events: [kv_expired]          # event kinds to quote
          fields: [running, waiting]    # stats fields shown in quoted stats lines
          limit: 3
      - finding: kv_exhausted
        enabled: false                  # switches off a rule of an earlier file

``evidence`` may also be a plain list of event kinds and stats fields. Every problem is
reported as ``file:line: problem``, all problems of all files at once.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

import yaml

from .errors import RuleFileError, RuleProblem, RuleSyntaxError
from .expr import SCOPES, Expr, compile_expr
from .findings import SEVERITIES
from .functions import uses_episode
from .model import STATS_FIELDS, STORED_EVENT_KINDS
from .nodes import BOOL, Binary, Lit, Node, Samples
from .span import ZERO, Span, parse_span
from .template import EMPTY, Template, parse_template
from .userregex import UserPattern
from .yamlnodes import YamlProblem, compose, kind, line_of, scalar

BUILTIN_DIR = Path(__file__).parent / "builtin"
_ID_RE = re.compile(r"[a-z][a-z0-9_]*")
_RULE_KEYS = ("finding", "enabled", "scope", "when", "expr", "value", "for", "keep_firing_for",
              "severity", "labels", "summary", "explanation", "recommendation", "evidence", "variants")
_VARIANT_KEYS = ("when", "severity", "summary", "explanation", "recommendation")
_GROUP_KEYS = ("name", "labels", "rules")
_EVIDENCE_KEYS = ("rows", "rank", "events", "fields", "limit")


@dataclass(frozen=True)
class EvidenceSpec:
    rows: Expr | None = None  # per-line condition selecting stats lines to quote
    rank: Expr | None = None  # per-line number; larger first (default: in time order)
    events: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()
    limit: int = 3


@dataclass(frozen=True)
class Variant:
    """Another severity and wording of a rule for the instances where ``when`` holds (None: the rule's)."""

    when: Expr
    severity: str | None = None
    summary: Template | None = None
    explanation: Template | None = None
    recommendation: Template | None = None


@dataclass(frozen=True)
class Reach:
    """How far back a rule reads: ``seconds`` and ``samples`` (its widest windows plus its ``for:``
    hold), and the event kinds it counts over the whole run (``Expr.so_far_kinds``)."""

    seconds: float
    samples: int
    so_far_kinds: frozenset[str]


@dataclass(frozen=True)
class Rule:
    finding: str
    scope: str
    expr: Expr
    value: Expr
    severity: str
    summary: Template
    when: Expr | None = None
    for_: Span = ZERO
    keep_firing_for: Span = ZERO
    labels: Mapping[str, str] = field(default_factory=dict)
    explanation: Template = EMPTY
    recommendation: Template = EMPTY
    evidence: EvidenceSpec = EvidenceSpec()
    group: str = ""
    origin: str = ""  # "file:line" of the rule
    enabled: bool = True
    variants: tuple[Variant, ...] = ()  # the first whose ``when`` holds words the finding

    def quoted_fields(self) -> tuple[str, ...]:
        """Stats fields shown in quoted stats lines: as declared, else those the rule reads."""
        if self.evidence.fields:
            return self.evidence.fields
        seen: dict[str, None] = {}
        for e in [self.expr, self.when, self.evidence.rows, self.evidence.rank]:
            for f in (e.fields() if e is not None else []):
                seen.setdefault(f)
        return tuple(f for f in STATS_FIELDS if f in seen)

    def _exprs(self) -> list:
        exprs = [self.expr, self.when, self.value, self.evidence.rows, self.evidence.rank]
        exprs += [e for t in (self.summary, self.explanation, self.recommendation) for e in t.exprs]
        for v in self.variants:
            exprs += [v.when] + [e for t in (v.summary, v.explanation, v.recommendation) if t for e in t.exprs]
        return exprs

    def searched_kinds(self) -> set[str]:
        """Event kinds whose line text the rule searches (``count_matching``)."""
        return {k for e in self._exprs() if e is not None for k in e.searched_kinds()}

    def reach(self) -> "Reach":
        """How far back in the rows the rule reads: what a long watch must keep at full resolution."""
        seconds, samples = self.for_.seconds or 0.0, self.for_.samples or 0
        widest_s, widest_n = 0.0, 3  # last(x) without a window reads 3 samples
        kinds: set[str] = set()
        for e in self._exprs():
            if e is None:
                continue
            kinds.update(e.so_far_kinds())
            for w in e.windows():
                if isinstance(w, Lit):
                    widest_s = max(widest_s, float(w.value))
                elif isinstance(w, Samples):
                    widest_n = max(widest_n, w.count)
        return Reach(widest_s + seconds, widest_n + samples, frozenset(kinds))

    def patterns(self) -> list[UserPattern]:
        """The user regular expressions of the rule (``rules.userregex``), in order."""
        seen: dict[int, UserPattern] = {}
        for e in self._exprs():
            for lit in (e.patterns() if e is not None else []):
                seen.setdefault(id(lit.pattern), lit.pattern)  # type: ignore[attr-defined]
        return list(seen.values())

    @property
    def reads_episode(self) -> bool:
        """Whether the value or a text reads ``episode()`` (set while they are rendered)."""
        got = self.__dict__.get("_reads_episode")
        if got is None:
            exprs = [self.value] + [e for t in (self.summary, self.explanation, self.recommendation) for e in t.exprs]
            exprs += [e for v in self.variants for t in (v.summary, v.explanation, v.recommendation) if t
                      for e in t.exprs]
            got = any(uses_episode(e.root) for e in exprs if e is not None)
            object.__setattr__(self, "_reads_episode", got)
        return got

    def quoted_events(self) -> tuple[str, ...]:
        if self.evidence.events:
            return self.evidence.events
        seen: dict[str, None] = {}
        for e in [self.expr, self.when]:
            for k in (e.event_kinds() if e is not None else []):
                seen.setdefault(k)
        return tuple(seen)


class _File:
    """Collects the problems of one file while walking its nodes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.problems: list[RuleProblem] = []

    def problem(self, line: int | None, message: str) -> None:
        self.problems.append(RuleProblem(self.path, line, message))

    def mapping(self, node: yaml.Node, what: str, allowed: Sequence[str]) -> dict[str, tuple[yaml.Node, yaml.Node]] | None:
        if not isinstance(node, yaml.MappingNode):
            self.problem(line_of(node), f"{what} must be a mapping, got {kind(node)}")
            return None
        out: dict[str, tuple[yaml.Node, yaml.Node]] = {}
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else None
            if name not in allowed:
                close = difflib.get_close_matches(str(name), list(allowed), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else f" (allowed: {', '.join(allowed)})"
                self.problem(line_of(k), f"unknown key '{name}' in {what}{hint}")
                continue
            out[name] = (k, v)
        return out

    def text(self, node: yaml.Node, what: str) -> str | None:
        if not isinstance(node, yaml.ScalarNode) or scalar(node) is None:
            self.problem(line_of(node), f"{what} must be text, got {kind(node)}")
            return None
        return node.value  # as written, so `expr: true` is the expression "true"

    def expr(self, node: yaml.Node, what: str, scope: str, want: str | None = None,
             rows: bool = False) -> Expr | None:
        text = self.text(node, what)
        if text is None:
            return None
        try:
            expr = compile_expr(text, scope, want=want, rows=rows)
        except RuleSyntaxError as e:
            line, col = _position(node, text, e.column)
            self.problem(line, f"{what}: {e.message} (column {col})")
            return None
        if what != "value" and uses_episode(expr.root):
            self.problem(line_of(node), f"{what}: episode() is only known in a finding's value and texts "
                                        "(the episode is the one the finding is in)")
            return None
        for lit in expr.patterns():  # a slow pattern's notice names its line
            lit.pattern.origin = f"{self.path}:{_position(node, text, lit.col)[0]}"  # type: ignore[attr-defined]
        return expr

    def template(self, node: yaml.Node, what: str, scope: str, value: Expr | None) -> Template | None:
        text = self.text(node, what)
        if text is None:
            return None
        try:
            return parse_template(text, scope, value)
        except RuleSyntaxError as e:
            line, col = _position(node, text, e.column)
            self.problem(line, f"{what}: {e.message} (column {col})")
            return None

    def span(self, node: yaml.Node, what: str) -> Span | None:
        text = self.text(node, what)
        if text is None:
            return None
        try:
            return parse_span(text)
        except ValueError as e:
            self.problem(line_of(node), f"{what}: {e}")
            return None

    def labels(self, node: yaml.Node, what: str) -> dict[str, str] | None:
        if not isinstance(node, yaml.MappingNode):
            self.problem(line_of(node), f"{what} must be a mapping of names to text, got {kind(node)}")
            return None
        out: dict[str, str] = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode) or not isinstance(v, yaml.ScalarNode) or scalar(v) is None:
                self.problem(line_of(k), f"{what}: '{getattr(k, 'value', '?')}' must map a name to text")
                continue
            out[k.value] = v.value
        return out


def _position(node: yaml.Node, text: str, column: int) -> tuple[int, int]:
    """File line of an expression column: exact for one-line and ``|`` block values."""
    line = line_of(node)
    style = getattr(node, "style", None)
    if style == "|" and "\n" in text:
        before = text[:column - 1]
        return line + 1 + before.count("\n"), column - (before.rfind("\n") + 1)
    if style in ("|", ">"):
        return line + 1, column
    return line, column


def _derived_value(expr: Expr) -> Expr:
    """Prometheus-like: the value of ``a > b and ...`` is ``a`` (the leftmost comparison)."""
    node: Node = expr.root
    while isinstance(node, Binary) and node.op in ("and", "or"):
        node = node.a
    if isinstance(node, Binary) and node.op in ("<", "<=", ">", ">=", "==", "!="):
        return Expr(node.a.key, expr.scope, node.a)
    return expr


def parse_rules_text(text: str, path: str) -> list[Rule]:
    """Rules of one file's text; RuleFileError lists every problem as ``path:line: ...``."""
    f = _File(path)
    rules = _parse(f, text)
    if f.problems:
        raise RuleFileError(f.problems)
    return rules


def _parse(f: _File, text: str) -> list[Rule]:
    try:
        root = compose(text)
    except YamlProblem as e:
        f.problem(e.line, e.message)
        return []
    if root is None:
        f.problem(1, "empty rules file: expected 'groups:'")
        return []
    top = f.mapping(root, "the rules file", ("groups",))
    if top is None:
        return []
    if "groups" not in top:
        f.problem(line_of(root), "missing key 'groups'")
        return []
    groups = top["groups"][1]
    if not isinstance(groups, yaml.SequenceNode):
        f.problem(line_of(groups), f"'groups' must be a list, got {kind(groups)}")
        return []
    rules: list[Rule] = []
    seen_ids: dict[str, int] = {}
    seen_groups: dict[str, int] = {}
    for g in groups.value:
        rules += _group(f, g, seen_ids, seen_groups)
    return rules


def _group(f: _File, node: yaml.Node, seen_ids: dict[str, int], seen_groups: dict[str, int]) -> list[Rule]:
    m = f.mapping(node, "a group", _GROUP_KEYS)
    if m is None:
        return []
    name = f.text(m["name"][1], "group name") if "name" in m else None
    if "name" not in m:
        f.problem(line_of(node), "group without 'name'")
    elif name is not None:
        if name in seen_groups:
            f.problem(line_of(m["name"][1]), f"duplicate group name '{name}' (first on line {seen_groups[name]})")
        seen_groups[name] = line_of(m["name"][1])
    labels = f.labels(m["labels"][1], "group labels") if "labels" in m else {}
    if "rules" not in m:
        f.problem(line_of(node), f"group '{name}' has no 'rules'")
        return []
    rules_node = m["rules"][1]
    if not isinstance(rules_node, yaml.SequenceNode):
        f.problem(line_of(rules_node), f"'rules' must be a list, got {kind(rules_node)}")
        return []
    out = []
    for r in rules_node.value:
        rule = _rule(f, r, name or "", labels or {}, seen_ids)
        if rule is not None:
            out.append(rule)
    return out


def _rule(f: _File, node: yaml.Node, group: str, group_labels: dict[str, str],
          seen_ids: dict[str, int]) -> Rule | None:
    m = f.mapping(node, "a rule", _RULE_KEYS)
    if m is None:
        return None
    before = len(f.problems)
    line = line_of(node)
    if "finding" not in m:
        f.problem(line, "rule without 'finding' (its id)")
        return None
    fid = f.text(m["finding"][1], "finding")
    if fid is None:
        return None
    if not _ID_RE.fullmatch(fid):
        f.problem(line_of(m["finding"][1]), f"finding id must be lower_snake_case, got '{fid}'")
    if fid in seen_ids:
        f.problem(line_of(m["finding"][1]), f"duplicate finding '{fid}' (first on line {seen_ids[fid]})")
    seen_ids.setdefault(fid, line_of(m["finding"][1]))

    enabled = True
    if "enabled" in m:
        v = m["enabled"][1]
        enabled = scalar(v) if isinstance(v, yaml.ScalarNode) else None  # type: ignore[assignment]
        if not isinstance(enabled, bool):
            f.problem(line_of(v), f"enabled must be true or false, got {kind(v)}")
            return None
    if not enabled:
        return _disabled(fid, group, f.path, line)

    scope = "endpoint"
    if "scope" in m:
        s = f.text(m["scope"][1], "scope")
        if s is not None and s not in SCOPES:
            f.problem(line_of(m["scope"][1]), f"scope must be one of {', '.join(SCOPES)}, got '{s}'")
            return None
        scope = s or scope
    for key in ("expr", "severity", "summary"):
        if key not in m:
            f.problem(line, f"rule '{fid}' has no '{key}'")
    expr = f.expr(m["expr"][1], "expr", scope, want=BOOL) if "expr" in m else None
    when = f.expr(m["when"][1], "when", scope, want=BOOL) if "when" in m else None
    value = f.expr(m["value"][1], "value", scope) if "value" in m else None
    severity = _severity(f, m["severity"][1]) if "severity" in m else None
    for_ = f.span(m["for"][1], "for") if "for" in m else ZERO
    keep = f.span(m["keep_firing_for"][1], "keep_firing_for") if "keep_firing_for" in m else ZERO
    labels = dict(group_labels)
    if "labels" in m:
        labels.update(f.labels(m["labels"][1], "labels") or {})
    if value is None and expr is not None:
        value = _derived_value(expr)
    texts = {k: f.template(m[k][1], k, scope, value) if k in m else EMPTY
             for k in ("summary", "explanation", "recommendation")}
    evidence = _evidence(f, m["evidence"][1], scope) if "evidence" in m else EvidenceSpec()
    variants = _variants(f, m["variants"][1], scope, value) if "variants" in m else ()
    if len(f.problems) > before or expr is None or value is None:
        return None
    rule = Rule(finding=fid, scope=scope, expr=expr, value=value,
                severity=severity, summary=texts["summary"], when=when, for_=for_,  # type: ignore[arg-type]
                keep_firing_for=keep, labels=labels,  # type: ignore[arg-type]
                explanation=texts["explanation"], recommendation=texts["recommendation"],  # type: ignore[arg-type]
                evidence=evidence, group=group, origin=f"{f.path}:{line}",  # type: ignore[arg-type]
                variants=variants)
    for pattern in rule.patterns():
        pattern.located(pattern.origin or rule.origin, fid)
    return rule


def _severity(f: _File, node: yaml.Node) -> str | None:
    severity = f.text(node, "severity")
    if severity is not None and severity not in SEVERITIES:
        f.problem(line_of(node), f"severity must be one of {', '.join(SEVERITIES)}, got '{severity}'")
        return None
    return severity


def _variants(f: _File, node: yaml.Node, scope: str, value: Expr | None) -> tuple[Variant, ...]:
    if not isinstance(node, yaml.SequenceNode):
        f.problem(line_of(node), f"variants must be a list, got {kind(node)}")
        return ()
    out = []
    for item in node.value:
        m = f.mapping(item, "a variant", _VARIANT_KEYS)
        if m is None:
            continue
        if "when" not in m:
            f.problem(line_of(item), "variant without 'when'")
            continue
        when = f.expr(m["when"][1], "variant when", scope, want=BOOL)
        severity = _severity(f, m["severity"][1]) if "severity" in m else None
        texts = {k: f.template(m[k][1], f"variant {k}", scope, value) if k in m else None
                 for k in ("summary", "explanation", "recommendation")}
        if when is not None:
            out.append(Variant(when, severity, **texts))
    return tuple(out)


def _disabled(fid: str, group: str, path: str, line: int) -> Rule:
    false = compile_expr("false")
    return Rule(finding=fid, scope="endpoint", expr=false, value=false, severity="info",
                summary=EMPTY, group=group, origin=f"{path}:{line}", enabled=False)


def _evidence(f: _File, node: yaml.Node, scope: str) -> EvidenceSpec | None:
    if isinstance(node, yaml.SequenceNode):
        events, fields = [], []
        for item in node.value:
            name = f.text(item, "evidence item")
            if name in STORED_EVENT_KINDS:
                events.append(name)
            elif name in STATS_FIELDS:
                fields.append(name)
            elif name is not None:
                close = difflib.get_close_matches(name, list(STORED_EVENT_KINDS) + list(STATS_FIELDS), n=1)
                hint = f" (did you mean '{close[0]}'?)" if close else ""
                f.problem(line_of(item), f"evidence: '{name}' is neither an event kind nor a stats field{hint}")
        return EvidenceSpec(events=tuple(events), fields=tuple(fields))
    m = f.mapping(node, "evidence", _EVIDENCE_KEYS)
    if m is None:
        return None
    rows = f.expr(m["rows"][1], "evidence rows", scope, want=BOOL, rows=True) if "rows" in m else None
    rank = f.expr(m["rank"][1], "evidence rank", scope, want="number", rows=True) if "rank" in m else None
    events = _names(f, m["events"][1], "evidence events", STORED_EVENT_KINDS, "kept event kind") if "events" in m else ()
    fields = _names(f, m["fields"][1], "evidence fields", STATS_FIELDS, "stats field") if "fields" in m else ()
    limit = 3
    if "limit" in m:
        v = m["limit"][1]
        limit = scalar(v) if isinstance(v, yaml.ScalarNode) else None  # type: ignore[assignment]
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 50:
            f.problem(line_of(v), "evidence limit must be a whole number from 1 to 50")
            limit = 3
    return EvidenceSpec(rows, rank, tuple(events), tuple(fields), limit)


def _names(f: _File, node: yaml.Node, what: str, known: Sequence[str], noun: str) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode):
        f.problem(line_of(node), f"{what} must be a list, got {kind(node)}")
        return ()
    out = []
    for item in node.value:
        name = f.text(item, what)
        if name is None:
            continue
        if name not in known:
            close = difflib.get_close_matches(name, list(known), n=1)
            f.problem(line_of(item), f"{what}: unknown {noun} '{name}'" + (f" (did you mean '{close[0]}'?)" if close else ""))
            continue
        out.append(name)
    return tuple(out)


def _read(path: str, problems: list[RuleProblem]) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as e:
        problems.append(RuleProblem(path, None, f"cannot read rules file: {getattr(e, 'strerror', None) or e}"))
        return None


def builtin_paths() -> list[str]:
    return sorted(str(p) for p in BUILTIN_DIR.glob("*.yaml"))


def load_rules(paths: Sequence[str | os.PathLike[str]] | None = None, include_builtin: bool = True) -> list[Rule]:
    """Built-in rules, then each file of ``paths`` in order.

    A rule whose ``finding`` id an earlier file already defined replaces it (in place);
    ``enabled: false`` removes it. Problems of all files are raised together.

    Raises:
        RuleFileError: ``file:line: problem`` for each problem.
    """
    problems: list[RuleProblem] = []
    merged: dict[str, Rule] = {}
    files = (builtin_paths() if include_builtin else []) + [os.fspath(p) for p in (paths or [])]
    for path in files:
        text = _read(path, problems)
        if text is None:
            continue
        f = _File(path)
        for rule in _parse(f, text):
            if not rule.enabled:
                if rule.finding not in merged:
                    f.problem(int(rule.origin.rsplit(":", 1)[1]),
                              f"finding '{rule.finding}' is disabled, but no earlier rules file defines it")
                merged.pop(rule.finding, None)
            else:
                merged[rule.finding] = rule
        problems += f.problems
    if problems:
        raise RuleFileError(problems)
    return list(merged.values())


def load_rule_file(path: str | os.PathLike[str]) -> list[Rule]:
    """One file on its own (disabled entries included, with ``enabled=False``)."""
    problems: list[RuleProblem] = []
    text = _read(os.fspath(path), problems)
    if text is None:
        raise RuleFileError(problems)
    return parse_rules_text(text, os.fspath(path))

