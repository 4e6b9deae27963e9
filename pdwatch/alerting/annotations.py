"""pdwatch's templates (summary, explanation, recommendation) as Prometheus annotations.

An annotation is a Go text/template: ``{{ endpoint }}`` is ``$labels.instance``, ``{{ value }}``
the alert's ``$value``, and any other hole the same expression as an instant query for the
alert's own labels (Prometheus's ``query`` template function), or ``unknown``.
"""

from __future__ import annotations

from pdwatch.alerting.translate import Ctx, Translator, Untranslatable
from pdwatch.rules import Rule
from pdwatch.rules.nodes import BOOL, STR, Call, Lit
from pdwatch.rules.template import Hole, Template

_PRINTF_ARGS = "$labels.job $labels.instance $labels.engine"


def annotation(template: Template, rule: Rule, tr: Translator) -> str:
    """A pdwatch template as a Prometheus annotation (Go text/template)."""
    scope = rule.scope
    out = []
    for part in template.parts:
        if isinstance(part, str):
            out.append(part.replace("{{", "{{ `{{` }}"))
            continue
        assert isinstance(part, Hole)
        out.append(_hole(part, rule, tr, scope))
    return " ".join("".join(out).split())


def _hole(part: Hole, rule: Rule, tr: Translator, scope: str) -> str:
    if part.name == "endpoint":
        return "{{ $labels.instance }}"
    if part.name == "engines":
        return "{{ $labels.engine }}" if scope == "engine" else "(its engines)"
    if part.name == "role":
        return '{{ with $labels.role }}{{ . }}{{ else }}unknown{{ end }}'
    if part.name == "value":
        return "{{ $value | humanize }}"
    if part.name == "finding":
        return rule.finding
    if part.name == "severity":
        return rule.severity
    assert part.expr is not None
    root = part.expr.root
    fallback = "unknown"
    if isinstance(root, Call) and root.name == "coalesce" and isinstance(root.args[1], Lit) and \
            root.args[1].type == STR:
        root, fallback = root.args[0], str(root.args[1].value)
    try:
        v = tr.num(root, Ctx(scope, pin=True))
    except Untranslatable:
        return fallback
    if v.is_const:
        if v.const is None:
            return fallback
        if isinstance(v.const, str):
            return v.const
        return _fmt_const(float(v.const))
    fmt = v.q.replace("%", "%%").replace("%%[", "%[")  # the pins are printf verbs, nothing else is
    deployment_args = " ".join(f"$labels.{label}" for label in tr.o.deployment_labels)
    args = f"{_PRINTF_ARGS} {deployment_args}".strip()
    show = "{{ . | first | value | humanize }}"
    if root.type == BOOL:
        show = '{{ if eq (. | first | value) 1.0 }}true{{ else }}false{{ end }}'
    if "%[" not in v.q:  # nothing of the alert's own (a peer's value): the query as it is
        return f"{{{{ with query {_go_string(v.q)} }}}}{show}{{{{ else }}}}{fallback}{{{{ end }}}}"
    return (f"{{{{ with printf {_go_string(fmt)} {args} | query }}}}{show}"
            f"{{{{ else }}}}{fallback}{{{{ end }}}}")


def _go_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fmt_const(x: float) -> str:
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else f"{x:.3g}"
