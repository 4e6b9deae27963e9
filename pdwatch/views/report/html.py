"""The report as one self-contained HTML file: inline CSS and inline SVG charts, no script, no loads.

Log text is data. Everything taken from the report dict (log lines, file and endpoint names, rule
text, fact values) goes through ``_esc``: control characters become visible Unicode control
pictures, bidi controls a visible code point, then ``html.escape(..., quote=True)``. Attributes are
built only from fixed class names, counters and formatted numbers. A Content-Security-Policy meta
forbids scripts and every external load, so even a missed escape could not run or phone home.
"""

from __future__ import annotations

import html
import math
import re
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from pdwatch.rules.findings import SEVERITIES, severity_rank
from pdwatch.rules.verdict import endpoint_label
from pdwatch.units import engine_ranges, fmt_duration, fmt_short
from pdwatch.views.report.format import (FLAG, prose_parts, FRONTEND_NOTE, NOT_SCRAPED, by_error_type_text, by_status_text,
                                         endpoints_worst_first, fmt_num, fmt_period, fmt_time, fmt_window,
                                         frontend_cells, severity_short, severity_word)
_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

# C0/C1 controls (not tab or newline), lone surrogates, bidi overrides and isolates, line/paragraph separators.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u200e\u200f\u2028-\u202e\u2066-\u2069]")


# ---------------------------------------------------------------------------------------------- text


def _visible(match: re.Match) -> str:
    code = ord(match.group())
    if code < 0x20:
        return chr(0x2400 + code)  # ␛ for ESC, ␍ for CR, ...
    if code == 0x7F:
        return "\u2421"
    if 0xD800 <= code <= 0xDFFF or 0x80 <= code <= 0x9F:
        return "\ufffd"
    return f"<U+{code:04X}>"  # bidi/separator: shown, not obeyed (escaped below like the rest)


def _esc(value: Any) -> str:
    """Any value as HTML text: controls made visible, then escaped (quotes too)."""
    return html.escape(_CONTROL.sub(_visible, str(value)), quote=True)


def _prose(value: Any) -> str:
    """Rule text (summary, explanation, fix): escaped, then each command-line flag as code that
    does not break at its hyphens (a flag is letters, digits and hyphens only: nothing to escape)."""
    return "".join(f'<code>{_esc(piece)}</code>' if code else
                   FLAG.sub(lambda m: f'<code class="cli">{m.group()}</code>', _esc(piece))
                   for piece, code in prose_parts(str(value)))


def _marked(text: str, marks: Any) -> str:
    """A quoted log line, escaped, with the values the rule read in <strong class="used">."""
    spans = sorted((int(a), int(b)) for a, b in (marks or ()) if 0 <= int(a) < int(b) <= len(text))
    out, at = [], 0
    for a, b in spans:
        if a < at:
            continue
        out.append(_esc(text[at:a]))
        out.append(f'<strong class="used">{_esc(text[a:b])}</strong>')
        at = b
    out.append(_esc(text[at:]))
    return "".join(out)


def _num(value: Any) -> str:
    return _esc(fmt_num(value))


def _time(iso: Any) -> str:
    return _esc(fmt_time(iso if isinstance(iso, str) else None))


def _or_q(value: Any) -> Any:
    return "?" if value is None else value


def _epoch(iso: Any) -> float | None:
    if not isinstance(iso, str) or not iso:
        return None
    try:
        dt = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


def _severity(finding: dict[str, Any]) -> str:
    sev = str(finding.get("severity") or "info")
    return sev if sev in SEVERITIES else "info"  # a class name: one of the scale's words, never the input


def _badge(severity: str) -> str:
    return f'<span class="badge b-{severity}">{severity_word(severity)}</span>'


# ---------------------------------------------------------------------------------------------- page


def render(report: dict[str, Any]) -> str:
    findings = report.get("findings") or []  # most severe first: the order the diagnosis' groups index
    summary = report.get("summary") or {}
    deployment = report.get("deployment") or {"endpoints": []}
    sources = report.get("sources") or []
    notices = report.get("notices") or []
    title = "pdwatch report" + (f": {', '.join(map(str, sources))}" if sources else "")
    groups = report.get("groups") or []
    endpoints = endpoints_worst_first(report)
    body = [
        _header(report, summary, sources, findings, notices),
        _headline(summary),
        _findings(findings, groups, report.get("rules") or []),
        _endpoints(endpoints, deployment, findings, report.get("series") or {}, summary, groups),
        _frontends(endpoints),
        _kv_transfers(endpoints),
        _deployment(deployment),
        _capacity(report.get("capacity") or []),
        _notices(notices),
        f'<footer>Generated by pdwatch {_esc(report.get("pdwatch_version", "?"))} at '
        f'{_esc(report.get("generated_at", "?"))}. Self-contained file: no scripts, no external resources.</footer>',
    ]
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>{_esc(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        '<main class="page">',
        *[part for part in body if part],
        "</main>",
        "</body>",
        "</html>",
        "",
    ])


def _header(report: dict[str, Any], summary: dict[str, Any], sources: list[Any],
            findings: list[dict[str, Any]], notices: list[Any]) -> str:
    nav = [("findings", f"Findings ({len(findings)})"), ("endpoints", "Endpoints")]
    if any(ep.get("frontend") for ep in report.get("endpoints") or []):
        nav.append(("frontend", "Frontend"))
    nav.append(("deployment", "Deployment"))
    if report.get("capacity"):
        nav.append(("capacity", "Capacity"))
    if notices:
        nav.append(("notices", f"Input notices ({len(notices)})"))
    links = " ".join(f'<a href="#{anchor}">{label}</a>' for anchor, label in nav)
    return (
        '<header class="top">'
        '<h1>pdwatch report</h1>'
        f'{_verdict(report.get("verdict"))}'
        '<dl class="meta">'
        f'<div><dt>Sources</dt><dd>{", ".join(f"<code>{_esc(s)}</code>" for s in sources) or "?"}</dd></div>'
        f'<div><dt>Run</dt><dd>{_esc(fmt_window(summary.get("run")))}</dd></div>'
        '</dl>'
        f'<nav>{links}</nav>'
        '</header>')


def _verdict(verdict: dict[str, Any] | None) -> str:
    """The diagnosis' one line: what is wrong, first."""
    if not verdict:
        return ""
    sev = verdict.get("severity")
    sev = sev if sev in SEVERITIES else None
    badge = _badge(sev) + " " if sev else '<span class="badge b-ok">OK</span> '
    detail = f' <span class="vdetail">— {_prose(verdict.get("detail"))}</span>' if verdict.get("detail") else ""
    return (f'<p class="verdict v-{sev or "ok"}" id="verdict">{badge}<strong>{_esc(verdict.get("title", ""))}</strong>'
            f'{detail}</p>')


def _headline(summary: dict[str, Any]) -> str:
    gpus = summary.get("gpus")
    gpu_text = "?" if gpus is None else _num(gpus) + (' <span class="muted">(partly guessed)</span>'
                                                      if summary.get("gpus_inferred") else "")
    on_cpu = summary.get("device") == "CPU"  # vLLM's CPU backend: no GPU to divide by, never an invented one
    tiles = [("total tokens/s", _num(summary.get("total_tps"))),
             ("prompt tokens/s", _num(summary.get("prompt_tps"))),
             ("generated tokens/s", _num(summary.get("gen_tps"))),
             ("workers (CPU)", _num(summary.get("workers"))) if on_cpu else ("GPUs", gpu_text)]
    tile_html = "".join(f'<div class="tile"><dt>{label}</dt><dd>{value}</dd></div>' for label, value in tiles)
    per_role = summary.get("per_role") or {}
    roles = ""
    if per_role:  # in the headline's row: what each role adds
        rows = "".join(f'<tr><td>{_esc(role)}</td><td class="n">{_num((vals or {}).get("prompt_tps"))}</td>'
                       f'<td class="n">{_num((vals or {}).get("gen_tps"))}</td></tr>'
                       for role, vals in per_role.items())
        roles = ('<table class="roles"><thead><tr><th>role</th><th class="n">prompt tokens/s</th>'
                 f'<th class="n">generated tokens/s</th></tr></thead><tbody>{rows}</tbody></table>')
    per_what = (("tokens/s per worker (CPU)", "tps_per_worker", "tokens/s per worker") if on_cpu
                else ("total TPS per GPU", "tps_per_gpu", "tokens/s per GPU"))
    out = ['<section id="headline" class="headline">',
           '<h2 class="sr">Headline <span class="muted">(steady state)</span></h2>',
           '<div class="hl">',
           f'<div class="big"><div class="big-label">Headline: {per_what[0]}</div>'
           f'<div class="big-value">{_num(summary.get(per_what[1]))}</div>'
           f'<div class="big-unit">{per_what[2]}, prompt + generated, over the steady state: '
           f'{_esc(fmt_window(summary.get("window")))}</div></div>',
           f'<dl class="tiles">{tile_html}</dl>', roles, '</div>']
    numbers = (per_what[1], "total_tps", "prompt_tps", "gen_tps")
    if summary.get("note"):
        out.append(f'<p class="note"><strong>Note:</strong> {_esc(summary["note"])}</p>')
    elif any(summary.get(k) is None for k in numbers):
        out.append('<p class="note"><strong>Note:</strong> "?" marks a number the logs do not give.</p>')
    out.append("</section>")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ findings


def _where(finding: dict[str, Any]) -> str:
    where = f'<strong>{_esc(finding.get("endpoint") or "the deployment")}</strong>'
    engines = finding.get("engines") or []
    if engines:
        where += f' <span class="muted">(engine{"s" if len(engines) > 1 else ""} {_esc(engine_ranges(engines, shortest_run=3))})</span>'
    return where


def _when(finding: dict[str, Any], short: bool = False) -> str:
    """The finding's period; ``short`` (the at-a-glance table) drops the dates, the cards keep them."""
    start, end = finding.get("start"), finding.get("end")
    until = fmt_time(end) if end else "the end of the logs"
    start_text = fmt_time(start)
    if short:
        start_text = _clock(start_text)
        until = _clock(until) if end else "end of logs"
    text = f"{start_text} to {until}"
    a, b = _epoch(start), _epoch(end)
    if a is not None and b is not None:
        text += f" ({fmt_duration(b - a)})"
    return _esc(text)


def _clock(text: str) -> str:
    """'2026-05-29 14:01:01 UTC' as '14:01:01'; anything else unchanged."""
    return text[11:19] if re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d.*", text) else text


def _findings(findings: list[dict[str, Any]], groups: list[dict[str, Any]], rules: list[Any]) -> str:
    out = ['<section id="findings">', "<h2>Findings</h2>"]
    if not findings:
        checked = f" ({len(rules)} rule{'s' if len(rules) != 1 else ''} checked: {_esc(', '.join(map(str, rules)))})" \
            if rules else ""
        out += [f'<p class="allclear"><span class="badge b-ok">OK</span> No rule fired{checked}.</p>', "</section>"]
        return "\n".join(out)
    counts = {s: sum(1 for f in findings if _severity(f) == s) for s in SEVERITIES}
    out.append('<p class="counts">' + " ".join(
        f'{_badge(s)} <span class="count">{counts[s]}</span>' for s in SEVERITIES if counts[s])
        + (f' <span class="muted">in {len(groups)} group{"s" if len(groups) != 1 else ""} '
           '(identical findings across endpoints are one entry)</span>' if len(groups) < len(findings) else "")
        + "</p>")
    rows = []
    for i, g in enumerate(groups, 1):
        first = findings[g["findings"][0]]
        sev = _severity(first)
        more = (f' <span class="muted">(+{len(g["findings"]) - 1} alike)</span>' if len(g["findings"]) > 1 else "")
        rows.append(f'<tr class="r-{sev}"><td>{_badge(sev)}</td>'
                    f'<td><a href="#finding-{i}"><code>{_esc(g["rule"])}</code></a></td>'
                    f'<td>{_group_where(g, findings)}</td><td class="when">{_when(first, short=True)}</td>'
                    f'<td>{_prose(first.get("summary", ""))}{more}</td></tr>')
    out.append('<table class="glance"><thead><tr><th>severity</th><th>rule</th><th>where</th>'
               f'<th>when</th><th>summary</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    for i, g in enumerate(groups, 1):
        out.append(_finding(i, g, [findings[j] for j in g["findings"]]))
    out.append("</section>")
    return "\n".join(out)


def _group_where(g: dict[str, Any], findings: list[dict[str, Any]]) -> str:
    if len(g["findings"]) == 1:
        return _where(findings[g["findings"][0]])
    return f'<strong>{_esc(g["label"])}</strong> <span class="muted">({len(set(g["endpoints"]))} endpoints)</span>'


def _finding(index: int, g: dict[str, Any], members: list[dict[str, Any]]) -> str:
    """One card per group: the endpoints listed (each with its own summary and period), the
    explanation, the evidence and the fix once."""
    f = members[0]
    sev = _severity(f)
    where = _where(f) if len(members) == 1 else (
        f'<strong>{_esc(g["label"])}</strong> <span class="muted">({len(set(g["endpoints"]))} endpoints)</span>')
    out = [f'<article class="finding f-{sev}" id="finding-{index}">',
           f'<h3>{_badge(sev)} <code class="rule">{_esc(g["rule"])}</code> on {where}</h3>']
    out += [f'<p class="when">{_when(f)}</p>' if len(members) == 1 else "",
            f'<p class="summary">{_prose(f.get("summary", ""))}</p>']
    if len(members) > 1:  # each endpoint with its period; its own summary on hover (the numbers differ a little)
        items = ", ".join(f'<span class="member" title="{_esc(m.get("summary", ""))}"><strong>'
                          f'{_esc(m.get("endpoint") or "the deployment")}</strong> <span class="when">'
                          f'{_when(m, short=True)}</span></span>' for m in members)
        out.append(f'<p class="members"><span class="muted">On:</span> {items}</p>')
    alike = (f' <span class="muted">(as on {_esc(f.get("endpoint") or "the deployment")}; the others alike)</span>'
             if len(members) > 1 else "")
    if f.get("explanation"):
        out.append(f'<p class="explanation"><strong>Why</strong>{alike}: {_prose(f["explanation"])}</p>')
    # one endpoint: its quotes; a group: the first quote of each endpoint
    quotes = list(f.get("evidence") or []) if len(members) == 1 else [m["evidence"][0] for m in members if m.get("evidence")]
    if quotes:
        out.append('<div class="evidence"><h4>Evidence <span class="muted">(in bold: the values the rule read)'
                   '</span></h4>')
        for e in quotes:
            out.append(f'<div class="quote"><div class="loc"><code>{_esc(e.get("source") or "?")}:{_esc(_or_q(e.get("line_no")))}'
                       f'</code></div><pre>{_marked(str(e.get("text") or ""), e.get("highlight"))}</pre></div>')
        out.append("</div>")
    if f.get("recommendation"):
        out.append(f'<div class="fix"><strong>Fix</strong>{alike}: {_prose(f["recommendation"])}</div>')
    out.append("</article>")
    return "\n".join(out)


# ------------------------------------------------------------------------------------------ endpoints


def _endpoints(endpoints: list[dict[str, Any]], deployment: dict[str, Any], findings: list[dict[str, Any]],
               series: dict[str, Any], summary: dict[str, Any], groups: list[dict[str, Any]]) -> str:
    """The endpoints worst first: the table, then their charts (identical endpoints as one row)."""
    roles = {ep.get("name"): ep for ep in deployment.get("endpoints") or []}
    out = ['<section id="endpoints">', "<h2>Endpoints over the steady state <span class=\"muted\">(p50 / p95)</span></h2>"]
    rows = []
    for ep in endpoints:
        if ep.get("frontend"):
            cells = f'<td colspan="5">{_frontend_line(ep["frontend"])}</td>'
        else:
            cells = ("".join(_p50_p95(k, ep.get(k) or {}) for k in ("prompt_tps", "gen_tps", "running", "waiting",
                                                                      "kv_usage_pct"))
                     if not ep.get("no_stats") else f'<td colspan="5" class="muted">{_esc(ep["no_stats"])}</td>')
        role = (roles.get(ep.get("name")) or {}).get("role", "?")
        rows.append(f'<tr><td>{_esc(ep.get("name"))}</td><td>{_esc(role)}</td>{cells}'
                    f'<td class="n">{_num(ep.get("stats_lines"))}</td><td class="nowrap">{_time(ep.get("last_seen"))}</td></tr>')
    out.append('<p class="muted small">Worst first: endpoints with a critical finding, then warning, then the rest.</p>')
    out.append('<div class="scroll"><table class="summary-table"><thead><tr><th>endpoint</th><th>role</th>'
               '<th class="n">prompt tok/s</th><th class="n">gen tok/s</th><th class="n">running</th>'
               '<th class="n">waiting</th><th class="n">KV usage %</th><th class="n">stats lines</th>'
               f'<th>last line</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')
    out.append(_charts(endpoints, roles, findings, series, summary, groups))
    out.append("</section>")
    return "\n".join(out)


def _frontend_line(frontend: dict[str, Any]) -> str:
    """A frontend's row in the endpoints table: its requests over the steady state, else the run."""
    period = frontend.get("steady") or frontend.get("run") or {}
    over = "steady state" if frontend.get("steady") else "run"
    failed = period.get("failed_pct")
    parts = [f"{fmt_num(period.get('requests_per_s'))} requests/s",
             f"{'?' if failed is None else fmt_num(failed)}% failed"]
    if frontend.get("scraped"):
        parts.append(f"TTFT {fmt_num(period.get('ttft_mean_s'))} s (p99 {fmt_num(period.get('ttft_p99_s'))})")
    else:
        parts.append(f"latency {fmt_num(period.get('latency_s'))} s (its log), /metrics {NOT_SCRAPED}")
    return (f'{_esc(", ".join(parts))} <span class="muted">({over}; '
            '<a href="#frontend">frontend requests</a>)</span>')


def _frontends(endpoints: list[dict[str, Any]]) -> str:
    """Each frontend over the run and the steady state: requests, failures by status and error type,
    latency, TTFT and ITL, in flight and queued (the same figures as the Markdown report's)."""
    rows = [ep for ep in endpoints if ep.get("frontend")]
    if not rows:
        return ""
    body, outcomes = [], []
    for ep in rows:
        f = ep["frontend"]
        periods = [(label, p) for label, p in (("run", f.get("run")), ("steady state", f.get("steady"))) if p]
        for label, period in periods:
            cells = frontend_cells(period, bool(f.get("scraped")))
            failed = period.get("failed_pct")
            hot = isinstance(failed, (int, float)) and failed > 5  # harnesses reject a run above a few percent
            numbers = "".join(f'<td class="n{" hot" if i == 3 and hot else ""}">{_esc(c)}</td>'
                              for i, c in enumerate(cells))  # cell 3: the failed share, in red above 5%
            body.append(f'<tr><td>{_esc(ep.get("name"))}</td><td>{_esc(label)}<br><span class="muted small">'
                        f'{_esc(fmt_period(period))}</span></td>{numbers}</tr>')
        failing = [(label, p) for label, p in periods if p.get("requests_failed") or p.get("by_error_type")]
        if not failing:  # nothing failed: the table's zero says it
            continue
        items = "".join(f'<li><strong>{_esc(label)}</strong>: HTTP status '
                        f'{_esc(by_status_text(p.get("by_status") or []))}; Dynamo error type '
                        f'{_esc(by_error_type_text(p.get("by_error_type") or []))}</li>' for label, p in failing)
        outcomes.append(f'<h3>Failed requests of {_esc(ep.get("name"))}</h3><ul class="outcomes">{items}</ul>')
    return "\n".join([
        '<section id="frontend">',
        '<h2>Frontend requests <span class="muted">(its log; latency from its /metrics)</span></h2>',
        '<div class="scroll"><table class="frontend"><thead><tr><th>frontend</th><th>over</th>'
        '<th class="n">requests/s</th><th class="n">ok</th><th class="n">failed</th><th class="n">failed %</th>'
        '<th class="n">mean<br>latency s</th><th class="n">TTFT s<br>mean / p99</th>'
        '<th class="n">ITL ms<br>mean / p99</th>'
        '<th class="n">in flight<br>mean / max</th><th class="n">queued<br>mean / max</th></tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div>',
        *outcomes,
        f'<p class="muted small">{_esc(FRONTEND_NOTE)}</p>',
        "</section>"])


def _kv_transfers(endpoints: list[dict[str, Any]]) -> str:
    """Each worker's KV transfers, from its connector's "KV Transfer metrics" lines: one line each."""
    items = []
    for ep in endpoints:
        kv = ep.get("kv_transfers") or {}
        run, steady = kv.get("run"), kv.get("steady")
        if not run:
            continue
        text = (f'<strong>{_esc(ep.get("name"))}</strong>: {_num(run["transfers"])} over the run '
                f'({_num(run["failed"])} failed, mean {_num(run["avg_ms"])} ms)')
        if steady:
            text += f', {_num(steady["transfers"])} in the steady state (mean {_num(steady["avg_ms"])} ms)'
        items.append(f"<li>{text}</li>")
    if not items:
        return ""
    return ('<section id="kv-transfers"><h2>KV transfers <span class="muted">(each worker\'s connector lines)'
            f'</span></h2><ul class="outcomes">{"".join(items)}</ul></section>')


def _p50_p95(key: str, values: dict[str, Any]) -> str:
    p50, p95 = values.get("p50"), values.get("p95")
    text = f'{_num(p50)} <span class="muted">/</span> {_num(p95)}'
    if key == "kv_usage_pct" and isinstance(p95, (int, float)) and p95 >= 95:
        return f'<td class="n hot">{text} <span class="flag">full</span></td>'  # the 95% line of the KV chart
    return f'<td class="n">{text}</td>'


def _charts(endpoints: list[dict[str, Any]], roles: dict[Any, dict[str, Any]], findings: list[dict[str, Any]],
            series: dict[str, Any], summary: dict[str, Any], groups: list[dict[str, Any]]) -> str:
    names = [ep.get("name") for ep in endpoints]
    names += [n for n in series if n not in names]
    drawn = [n for n in names if _has_points(series.get(n))]
    out = ['<h2 id="charts">Endpoints over time</h2>']
    if not drawn:
        return "\n".join(out + ['<p class="muted">No endpoint printed stats lines: nothing to chart.</p>'])
    domain = _domain([series[n] for n in drawn], findings, summary)
    out.append(
        '<p class="legend">Engines summed per timestamp (KV usage: mean over engines). '
        '<span class="key k-steady"></span> steady window (headline) &nbsp; '
        + " &nbsp; ".join(f'<span class="key k-{s}"></span> {severity_word(s)} finding period' for s in SEVERITIES)
        + "</p>")
    group_of = {}  # finding index -> (card number, group)
    for n, g in enumerate(groups, 1):
        for i in g["findings"]:
            group_of[i] = (n, g)
    links_of: dict[Any, list[tuple[int, dict[str, Any]]]] = {}
    for i, f in enumerate(findings):
        links_of.setdefault(f.get("endpoint"), []).append((i, f))
    twins = _twins([n for n in names if n in drawn], roles, links_of, endpoints)
    counter = 0
    done: set[Any] = set()
    blank: list[Any] = []
    for name in names:
        if name in done:
            continue
        info = roles.get(name) or {}
        own = links_of.get(name, []) + links_of.get(None, [])
        cards = sorted({group_of[i][0]: group_of[i][1] for i, _ in own if i in group_of}.items())
        links = " ".join(f'<a class="flink fl-{_severity(g)}" href="#finding-{n}">'
                         f'{severity_short(_severity(g))}: {_esc(g["rule"])}</a>' for n, g in cards)
        cluster = twins.get(name)
        if cluster:
            done.update(cluster)
            counter += len(cluster)
            out.append(_multiples(counter, cluster, roles, series, domain, [f for _, f in own], summary, links))
            continue
        head = (f'<h3>{_esc(name)} <span class="role">{_esc(info.get("role", "?"))}</span>'
                f'{" " + links if links else ""}</h3>')
        if name not in drawn:  # said once, after the charts
            blank.append(name)
            continue
        data = series[name]
        bands = [f for _, f in own]
        cap = _running_cap(info)
        charts = []
        specs = _frontend_chart_specs(data) if "requests_ok_per_s" in data else _chart_specs(cap)
        for spec in specs:
            counter += 1
            charts.append(_chart(counter, spec, data, domain, bands, summary.get("window")))
        out.append(f'<div class="ep-charts">{head}<div class="charts">{"".join(charts)}</div></div>')
    if blank:
        out.append(f'<p class="muted">No stats lines, so no chart: {_esc(", ".join(map(str, blank)))}.</p>')
    return "\n".join(out)


_TWIN_BAND = 0.15  # endpoints whose counted throughput (p50) is within 15% of each other's are alike


def _twins(names: list[Any], roles: dict[Any, dict[str, Any]], links_of: dict[Any, list],
           endpoints: list[dict[str, Any]]) -> dict[Any, list[Any]]:
    """Endpoints alike enough to be drawn as one small-multiples row: same role and engine count,
    the same findings (rule and severity) on them, and throughput within 15%. Returns each
    cluster of two or more, keyed by its first member (in the page's order)."""
    summary = {ep.get("name"): ep for ep in endpoints}

    def counted(name: Any) -> float | None:
        role = (roles.get(name) or {}).get("role")
        keys = {"prefill": ("prompt_tps",), "decode": ("gen_tps",)}.get(role, ("prompt_tps", "gen_tps"))
        vals = [((summary.get(name) or {}).get(k) or {}).get("p50") for k in keys]
        vals = [v for v in vals if isinstance(v, (int, float))]
        return sum(vals) if vals else None

    keyed: dict[tuple, list[Any]] = {}
    for name in names:
        info = roles.get(name) or {}
        if info.get("role") == "frontend":
            continue
        sig = (info.get("role"), len(info.get("engines") or []),
               frozenset((f.get("rule"), f.get("severity")) for _, f in links_of.get(name, [])))
        keyed.setdefault(sig, []).append(name)
    out: dict[Any, list[Any]] = {}
    for members in keyed.values():
        while len(members) >= 2:
            base = counted(members[0])
            alike = [m for m in members if base is not None and (c := counted(m)) is not None
                     and abs(c - base) <= _TWIN_BAND * max(abs(base), 1.0)]
            if len(alike) >= 2:
                out[alike[0]] = alike
            members = [m for m in members if m not in alike] if len(alike) >= 2 else members[1:]
    return out


def _multiples(n: int, cluster: list[Any], roles: dict[Any, dict[str, Any]], series: dict[str, Any],
               domain: tuple[float, float, Any], bands: list[dict[str, Any]], summary: dict[str, Any],
               links: str) -> str:
    """Alike endpoints as one row: a small tokens/s chart each, on one zero-based scale."""
    role = (roles.get(cluster[0]) or {}).get("role", "?")
    keys = {"prefill": [("prompt_tps", "prompt", "l-prompt")], "decode": [("gen_tps", "generated", "l-gen")]}.get(
        role, [("prompt_tps", "prompt", "l-prompt"), ("gen_tps", "generated", "l-gen")])
    peak = max([v for name in cluster for k, _, _ in keys for v in _values(series[name], k) if v is not None] or [1.0])
    step = _nice_step(peak if peak > 0 else 1.0)
    top = math.ceil(peak / step - 1e-9) * step if peak > 0 else 1.0
    figs = []
    for j, name in enumerate(cluster):
        spec = {"title": "tokens/s", "lines": keys, "fixed": (0.0, top), "step": top / 2, "small": True}
        svg = _chart(n * 100 + j, spec, series[name], domain, bands, summary.get("window"), small=True)
        figs.append(f'<figure class="sm"><figcaption><strong>{_esc(name)}</strong></figcaption>{svg}</figure>')
    head = (f'<h3>{_esc(endpoint_label(cluster))} <span class="role">{_esc(role)}</span> '
            f'<span class="muted small">{len(cluster)} alike: tokens/s each, one scale (0 to {_esc(fmt_short(top, "tick"))})'
            f'</span>{" " + links if links else ""}</h3>')
    return f'<div class="ep-multiples">{head}<div class="multiples">{"".join(figs)}</div></div>'


def _has_points(data: Any) -> bool:
    return isinstance(data, dict) and any(_epoch(t) is not None for t in data.get("ts") or [])


def _running_cap(info: dict[str, Any]) -> tuple[float, str] | None:
    """max_num_seqs times the engines: the most requests the endpoint can run at once."""
    seqs = (info.get("key_args") or {}).get("max_num_seqs")
    engines = len(info.get("engines") or [])
    if isinstance(seqs, (int, float)) and not isinstance(seqs, bool) and seqs > 0 and engines:
        return float(seqs) * engines, "max_num_seqs" + (f" x {engines}" if engines > 1 else "")
    return None


def _chart_specs(cap: tuple[float, str] | None) -> list[dict[str, Any]]:
    return [
        {"title": "tokens/s", "lines": [("prompt_tps", "prompt", "l-prompt"), ("gen_tps", "generated", "l-gen")]},
        {"title": "KV cache usage %", "lines": [("kv_usage_pct", "KV usage", "l-kv")], "fixed": (0.0, 100.0),
         "ref": (95.0, "95%", "ref-kv")},
        {"title": "requests", "lines": [("running", "running", "l-run"), ("waiting", "waiting", "l-wait")],
         "ref": (cap[0], cap[1], "ref-cap") if cap else None, "ref_soft": True, "integer": True},
    ]


def _frontend_chart_specs(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A frontend's charts: its requests (its log), then from its /metrics, when scraped, TTFT, ITL
    and the requests in flight and queued; without them the mean latency its log gives."""
    requests = {"title": "requests/s (its log)", "lines": [("requests_ok_per_s", "ok", "l-ok"),
                                                         ("requests_failed_per_s", "failed", "l-fail")]}
    if not any(v is not None for key in ("ttft_s", "frontend_inflight") for v in data.get(key) or []):
        return [requests, {"title": "mean latency s (its log, successful requests)",
                           "lines": [("latency_s", "mean", "l-mean")]}]
    return [requests,
            {"title": "TTFT s", "lines": [("ttft_s", "mean", "l-mean"), ("ttft_p99_s", "p99", "l-p99")]},
            {"title": "ITL s", "lines": [("itl_s", "mean", "l-mean"), ("itl_p99_s", "p99", "l-p99")]},
            {"title": "requests at the frontend", "lines": [("frontend_inflight", "in flight", "l-run"),
                                                            ("frontend_queued", "queued", "l-wait")],
             "integer": True}]


def _domain(all_series: list[dict[str, Any]], findings: list[dict[str, Any]],
            summary: dict[str, Any]) -> tuple[float, float, timezone]:
    """One time axis for every chart: the stats lines, widened to the finding periods (within the run),
    so a finding after the last stats line (an engine that died) still shows."""
    times = [e for data in all_series for e in (_epoch(t) for t in data.get("ts") or []) if e is not None]
    lo, hi = min(times), max(times)
    run = summary.get("run") or {}
    run_lo, run_hi = _epoch(run.get("start")), _epoch(run.get("end"))
    for f in findings:
        for t in (_epoch(f.get("start")), _epoch(f.get("end"))):
            if t is not None and (run_lo is None or t >= run_lo) and (run_hi is None or t <= run_hi):
                lo, hi = min(lo, t), max(hi, t)
    if hi - lo < 1:
        lo, hi = lo - 30, hi + 30
    first = next(t for data in all_series for t in data.get("ts") or [] if _epoch(t) is not None)
    tz = datetime.fromisoformat(first).tzinfo or timezone.utc
    return lo, hi, tz


# ------------------------------------------------------------------------------------------------ SVG

_W, _H = 400, 178
_L, _R, _T, _B = 48, 30, 30, 22  # plot margins: the top holds the steady bracket and the severity lanes,
# the right the reference line's label, so no label is drawn over the plot's bands
_TIME_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
               172800, 604800)


def _f(x: float) -> str:
    return f"{x:.1f}"


def _nice_step(span: float, target: int = 4) -> float:
    raw = span / target
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _time_ticks(lo: float, hi: float, tz: Any, most: int = 6) -> list[tuple[float, str]]:
    span = hi - lo
    step = next((s for s in _TIME_STEPS if span / s <= most), _TIME_STEPS[-1])
    offset = datetime.fromtimestamp(lo, tz).utcoffset() or timedelta(0)
    off = offset.total_seconds()
    if span > 86400 * 2:
        fmt = "%m-%d %H:%M"
    elif step >= 60:
        fmt = "%H:%M"
    else:
        fmt = "%H:%M:%S"
    first = math.ceil((lo + off) / step) * step - off
    ticks, t = [], first
    while t <= hi + 1e-6:
        ticks.append((t, datetime.fromtimestamp(t, tz).strftime(fmt)))
        t += step
    return ticks


def _values(data: dict[str, Any], key: str) -> list[float | None]:
    out = []
    for v in data.get(key) or []:
        out.append(float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None)
    return out


def _chart(n: int, spec: dict[str, Any], data: dict[str, Any], domain: tuple[float, float, Any],
           bands: list[dict[str, Any]], window: dict[str, Any] | None, small: bool = False) -> str:
    """One chart in a <figure> with its key; ``small``: a small multiple, the bare SVG, lower."""
    lo, hi, tz = domain
    # a small multiple: a narrower drawing, so its labels stay readable when the browser scales it down
    width, height = (240, 120) if small else (_W, _H)
    x0, x1, y0, y1 = (34 if small else _L), width - (8 if small else _R), height - _B, _T  # y0 bottom, y1 top
    ts = [_epoch(t) for t in data.get("ts") or []]
    lines = [(key, label, cls, _values(data, key)) for key, label, cls in spec["lines"]]
    if "fixed" in spec:
        vmin, vmax = spec["fixed"]
        step = spec.get("step", 25.0)
    else:
        peak = max([v for *_, vals in lines for v in vals if v is not None] or [0.0])
        ref = spec.get("ref")
        if ref and ref[0] and (not spec.get("ref_soft") or ref[0] <= max(peak, 1.0) * 1.3):
            peak = max(peak, ref[0])
        peak = peak if peak > 0 else 1.0
        step = _nice_step(peak)
        if spec.get("integer"):
            step = max(1.0, step)  # requests: no 0.5-request ticks
        vmin, vmax = 0.0, math.ceil(peak / step - 1e-9) * step

    def sx(t: float) -> float:
        return x0 + (t - lo) / (hi - lo) * (x1 - x0)

    def sy(v: float) -> float:
        v = min(max(v, vmin), vmax)
        return y0 - (v - vmin) / (vmax - vmin) * (y0 - y1)

    pid = f"c{n}"
    svg = [f'<svg class="{"mchart" if small else "chart"}" viewBox="0 0 {width} {height}" role="img" '
           'preserveAspectRatio="xMidYMid meet">',
           "<defs>",
           f'<pattern id="{pid}-critical" width="5" height="5" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="5" height="5" class="pf-critical"/>'
           '<line x1="0" y1="0" x2="0" y2="5" class="ph-critical"/></pattern>',
           f'<pattern id="{pid}-warning" width="9" height="9" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="9" height="9" class="pf-warning"/>'
           '<line x1="0" y1="0" x2="0" y2="9" class="ph-warning"/></pattern>',
           f'<pattern id="{pid}-info" width="6" height="6" patternUnits="userSpaceOnUse">'
           '<rect width="6" height="6" class="pf-info"/><circle cx="3" cy="3" r="0.9" class="ph-info"/></pattern>',
           "</defs>",
           f'<rect x="{x0}" y="{y1}" width="{x1 - x0}" height="{y0 - y1}" class="plot"/>']
    # finding periods, least severe first so the worst is drawn on top; their labels go on top of everything
    labels = []
    for f in sorted(bands, key=lambda b: -severity_rank(_severity(b))):  # the worst drawn last, on top
        start = _epoch(f.get("start"))
        if start is None:
            continue
        end = _epoch(f.get("end"))
        end = hi if end is None else end
        a, b = max(lo, start), min(hi, end)
        if b < lo or a > hi:
            continue
        xa, xb = sx(a), sx(b)
        if xb - xa < 2:
            xa, xb = xa - 1, xa + 1
        sev = _severity(f)
        svg.append(f'<rect x="{_f(xa)}" y="{y1}" width="{_f(xb - xa)}" height="{y0 - y1}" fill="url(#{pid}-{sev})" '
                   f'class="band"><title>{severity_word(sev)}: {_esc(f.get("rule", "?"))}, {_when(f)}</title></rect>')
        lane = severity_rank(sev)  # one strip per severity, above the plot: overlapping periods stay visible
        labels.append(f'<rect x="{_f(xa)}" y="{y1 - 12 + 4 * lane}" width="{_f(xb - xa)}" height="3" '
                      f'class="bandtop-{sev}"/>')
    # y grid and labels
    v = vmin
    while v <= vmax + 1e-9:
        y = sy(v)
        svg.append(f'<line x1="{x0}" y1="{_f(y)}" x2="{x1}" y2="{_f(y)}" class="grid"/>')
        svg.append(f'<text x="{x0 - 4}" y="{_f(y + 3.5)}" class="ylab">{_esc(fmt_short(v, "tick"))}</text>')
        v += step
    # x ticks
    for t, label in _time_ticks(lo, hi, tz, 3 if small else 6):
        x = sx(t)
        svg.append(f'<line x1="{_f(x)}" y1="{y0}" x2="{_f(x)}" y2="{y0 + 4}" class="axis"/>')
        svg.append(f'<text x="{_f(x)}" y="{y0 + 15}" class="xlab">{_esc(label)}</text>')
    svg.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" class="axis"/>')
    # steady window: a bracket above the plot and dashed edges
    ws, we = _epoch((window or {}).get("start")), _epoch((window or {}).get("end"))
    if ws is not None and we is not None and we >= lo and ws <= hi:
        xa, xb = sx(max(ws, lo)), sx(min(we, hi))
        svg.append(f'<line x1="{_f(xa)}" y1="{y1}" x2="{_f(xa)}" y2="{y0}" class="steady-edge"/>')
        svg.append(f'<line x1="{_f(xb)}" y1="{y1}" x2="{_f(xb)}" y2="{y0}" class="steady-edge"/>')
        svg.append(f'<rect x="{_f(xa)}" y="{y1 - 18}" width="{_f(max(xb - xa, 1))}" height="4" class="steady"/>')
        if xb - xa >= 34:
            svg.append(f'<text x="{_f((xa + xb) / 2)}" y="{y1 - 20}" class="steadylab">steady</text>')
    # reference line (95% KV, max_num_seqs cap)
    ref = spec.get("ref")
    if ref and ref[0] is not None and vmin <= ref[0] <= vmax:
        y = sy(ref[0])
        svg.append(f'<line x1="{x0}" y1="{_f(y)}" x2="{x1}" y2="{_f(y)}" class="{ref[2]}"/>')
        if len(str(ref[1])) <= 4:  # "95%": in the right margin, off the plot (a longer one is in the key)
            svg.append(f'<text x="{x1 + 3}" y="{_f(y + 3.5)}" class="reflab">{_esc(ref[1])}</text>')
    # the lines
    for key, label, cls, vals in lines:
        points = [(sx(t), sy(v)) for t, v in zip(ts, vals) if t is not None and v is not None]
        path, pen = [], "M"
        for t, v in zip(ts, vals):
            if t is None or v is None:
                pen = "M"
                continue
            path.append(f"{pen}{_f(sx(t))},{_f(sy(v))}")
            pen = "L"
        if path:
            svg.append(f'<path d="{" ".join(path)}" class="line {cls}"/>')
        if len(points) <= 40:
            svg += [f'<circle cx="{_f(x)}" cy="{_f(y)}" r="1.8" class="dot {cls}"/>' for x, y in points]
    svg += labels
    svg.append("</svg>")
    if small:
        return "".join(svg)
    keys = "".join(f'<span class="lkey {cls}"></span>{_esc(label)} ' for _, label, cls, _ in lines)
    ref_key, note = "", ""
    if ref and ref[0] is not None:
        if vmin <= ref[0] <= vmax:
            ref_key = f'<span class="lkey {ref[2]}"></span>{_esc(ref[1])}' + (
                f" ({_num(ref[0])})" if ref[2] == "ref-cap" else "")
        else:
            note = f'<div class="chartnote">{_esc(ref[1])} = {_num(ref[0])}: above the scale</div>'
    return (f'<figure class="chartbox"><figcaption><strong>{_esc(spec["title"])}</strong> '
            f'<span class="keys">{keys}{ref_key}</span></figcaption>{"".join(svg)}{note}</figure>')


# ----------------------------------------------------------------------------------- other tables


def _deployment(deployment: dict[str, Any]) -> str:
    """One row per endpoint; endpoints alike in everything but their name and files share a row."""
    rows = []
    endpoints = deployment.get("endpoints") or []
    alike: dict[str, list[dict[str, Any]]] = {}
    for ep in endpoints:
        key = repr([ep.get(k) for k in ("role", "role_from", "engines", "gpus", "gpus_inferred", "version", "model",
                                         "key_args")])
        alike.setdefault(key, []).append(ep)
    for same in alike.values():
        ep = same[0]
        gpus = ("?" if ep.get("gpus") is None else _num(ep["gpus"]) + (
            '<abbr class="guess" title="guessed">*</abbr>' if ep.get("gpus_inferred") else ""))
        role, role_from = ep.get("role", "?"), ep.get("role_from", "unknown")
        role_text = _esc(role) + ("" if role_from in ("unknown", role) else f' <span class="muted">({_esc(role_from)})</span>')
        args = "".join(f'<li><code>{_esc(k)}={_esc(v)}</code></li>' for k, v in (ep.get("key_args") or {}).items())
        model = f'<div class="muted small">{_esc(ep["model"])}</div>' if ep.get("model") else ""
        sources = "<br>".join(f"<code>{_esc(s)}</code>" for e in same for s in e.get("sources") or [])
        name = _esc(ep.get("name")) if len(same) == 1 else (
            f'{_esc(endpoint_label([e.get("name") for e in same]))} <span class="muted">({len(same)} alike, each)</span>')
        rows.append(f'<tr><td>{name}{model}</td><td>{role_text}</td>'
                    f'<td>{_esc(engine_ranges(ep.get("engines"), shortest_run=3))}</td><td class="n">{gpus}</td>'
                    f'<td>{_esc(ep.get("version") or "?")}</td><td><ul class="args">{args}</ul></td>'
                    f'<td class="src">{sources}</td></tr>')
    out = ['<section id="deployment">', "<h2>Deployment</h2>",
           '<div class="scroll"><table class="deploy"><thead><tr><th>endpoint</th><th>role</th><th>engines</th>'
           '<th class="n">GPUs</th><th>vLLM</th><th>key args</th><th>sources</th></tr></thead>'
           f'<tbody>{"".join(rows)}</tbody></table></div>']
    if deployment.get("total_gpus") is not None:
        out.append(f'<p class="muted">Total GPUs (prefill + decode): {_num(deployment["total_gpus"])}</p>')
    guessed = [ep for ep in endpoints if ep.get("gpus_inferred") and ep.get("gpus") is not None]
    if guessed:  # the footnote only when a row above carries its star
        items = "".join(f"<li>{_esc(ep.get('name'))}: {_esc(ep.get('gpus_from'))}</li>" for ep in guessed)
        out.append(f'<p class="muted"><code>*</code> GPU count partly guessed (GPUs = DP x TP x PP):</p>'
                   f'<ul class="muted">{items}</ul>')
    out.append("</section>")
    return "\n".join(out)


def _capacity(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return ""
    body = []
    alike: dict[str, list[dict[str, Any]]] = {}  # endpoints with the same figures share a row
    for r in rows:
        alike.setdefault(repr(sorted((k, repr(v)) for k, v in r.items() if k not in ("endpoint", "computed"))),
                         []).append(r)
    for same in alike.values():
        r = same[0]
        conc = r.get("max_concurrency")
        conc_text = "?" if conc is None else f"{_num(conc)} x {_num(r.get('max_concurrency_tokens'))} tok"
        graph = r.get("max_capture_size", "?")
        graph = "none" if graph is None else graph
        name = _esc(r.get("endpoint")) if len(same) == 1 else (
            f'{_esc(endpoint_label([x.get("endpoint") for x in same]))} <span class="muted">(each)</span>')
        body.append(f'<tr><td>{name}</td><td class="n">{_num(r.get("weights_gib"))}</td>'
                    f'<td class="n">{_num(r.get("kv_memory_gib"))}</td><td class="n">{_num(r.get("kv_capacity_tokens"))}</td>'
                    f'<td class="n">{conc_text}</td><td class="n">{_num(r.get("max_num_seqs", "?"))}</td>'
                    f'<td class="n">{_num(r.get("block_size", "?"))}</td><td class="n">{_num(graph)}</td></tr>')
    return "\n".join([
        '<section id="capacity">', '<h2>Capacity <span class="muted">(from the start-up lines)</span></h2>',
        '<div class="scroll"><table><thead><tr><th>endpoint</th><th class="n">weights GiB</th>'
        '<th class="n">KV memory GiB</th><th class="n">KV tokens</th><th class="n">max concurrency</th>'
        '<th class="n">max_num_seqs</th><th class="n">block</th><th class="n">largest CUDA graph</th></tr></thead>'
        f'<tbody>{"".join(body)}</tbody></table></div>',
        *(_gap(r["endpoint"], r.get("gap")) for r in rows),
        *(_computed(r["endpoint"], r.get("computed")) for r in rows), "</section>"])


def _gap(endpoint: Any, gap: dict[str, Any] | None) -> str:
    """Why an endpoint's KV cache is far from what its memory holds (the override, ...)."""
    if not gap or not gap["large"]:
        return ""
    return f'<p>KV cache of {_esc(endpoint)}: {_esc(gap["summary"])}. Why: {_esc(gap["text"])}.</p>'


def _computed(endpoint: Any, computed: dict[str, Any] | None) -> str:
    """pdwatch capacity's arithmetic (report --model-config) next to what vLLM printed."""
    if not computed:
        return ""
    if "error" in computed:
        return f'<p class="muted">Capacity of {_esc(endpoint)} not computed: {_esc(computed["error"])}</p>'
    same = {True: "yes", False: "<strong>no</strong>", None: "?"}
    rows = "".join(
        f'<tr><td>{_esc(c["name"])}</td><td class="n">{_num(c["printed"])}</td><td class="n">{_num(c["computed"])}</td>'
        f'<td>{same[c["match"]]}</td><td>{_esc("; ".join(c["notes"]))}</td></tr>' for c in computed["comparisons"])
    mib = computed["kv_bytes_per_request"] / 2**20
    return (f'<h3>Computed for {_esc(endpoint)} from the model config</h3>'
            f'<p>Block {_num(computed["block_tokens"])} tokens, {_num(mib)} MiB of KV per '
            f'{_num(computed["request_tokens"])}-token request, maximum concurrency {_num(computed["max_concurrency"])}.</p>'
            + _estimate(computed.get("estimate")) +
            '<div class="scroll"><table><thead><tr><th>figure</th><th class="n">vLLM printed</th>'
            '<th class="n">computed</th><th>same</th><th>why</th></tr></thead>'
            f'<tbody>{rows}</tbody></table></div>')


def _estimate(est: dict[str, Any] | None) -> str:
    if not est:
        return ""
    return (f'<p>Estimate from the model\'s shape and {_num(est["kv_memory_gib"])} GiB of KV memory: '
            f'{_num(est["blocks"])} blocks, {_num(est["tokens"])} tokens, maximum concurrency '
            f'{_num(est["max_concurrency"])}.</p>')


def _notices(notices: list[Any]) -> str:
    if not notices:
        return ""
    items = "".join(f"<li>{_esc(n)}</li>" for n in notices)
    return f'<section id="notices"><h2>Input notices</h2><ul class="notices">{items}</ul></section>'


_CSS = """
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#5b6470;--line:#d6dae0;--bg:#fff;--soft:#f5f7f9;
--crit:#b42318;--crit-bg:#fdecea;--warn:#a15c07;--warn-bg:#fff4e0;--info:#1d5fc2;--info-bg:#eaf2fd;--ok:#1e7a3c;
--ok-bg:#eef7f0;--grid:#e6e9ed;--axis:#8a939e;--ink2:#4b5563;--c-prompt:#1d5fc2;--c-gen:#0f8a5f;--c-kv:#6d28d9;
--c-run:#1b1f24;--c-wait:#c2410c;--used:#fff2a8;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono","DejaVu Sans Mono",monospace}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,"Noto Sans","Liberation Sans",sans-serif;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.page{max-width:1240px;margin:0 auto;padding:20px 24px 40px}
h1{font-size:26px;margin:0 0 6px}
h2{font-size:20px;margin:28px 0 10px;padding-bottom:4px;border-bottom:2px solid var(--line)}
h3{font-size:16px;margin:16px 0 6px}
h4{font-size:13px;margin:10px 0 4px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
code,pre{font-family:var(--mono);font-size:12.5px}
a{color:var(--info)}
.muted{color:var(--muted);font-weight:normal}
.small{font-size:12px}
.nowrap{white-space:nowrap}
.top .meta{margin:0 0 8px;display:grid;gap:2px}
.top .meta div{display:flex;gap:8px}
.top .meta dt{font-weight:600;min-width:64px}
.top .meta dd{margin:0;overflow-wrap:anywhere}
nav{display:flex;flex-wrap:wrap;gap:4px 16px;padding:6px 0;border-top:1px solid var(--line);border-bottom:1px solid var(--line)}
nav a{text-decoration:none;font-weight:600}
.hl{display:flex;flex-wrap:wrap;gap:16px;align-items:stretch}
.big{background:var(--soft);border:1px solid var(--line);border-radius:8px;padding:6px 16px;min-width:240px;max-width:340px}
.big-label{font-weight:600;color:var(--muted);text-transform:uppercase;font-size:12px;letter-spacing:.05em}
.big-value{font-size:38px;font-weight:700;line-height:1.1;font-variant-numeric:tabular-nums}
.big-unit{color:var(--muted);font-size:13px}
.tiles{flex:1;display:grid;grid-template-columns:repeat(auto-fit,minmax(120px,1fr));gap:8px;margin:0;align-self:flex-start}
.tile{border:1px solid var(--line);border-radius:8px;padding:8px 12px}
.tile dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
.tile dd{margin:2px 0 0;font-size:20px;font-weight:600;font-variant-numeric:tabular-nums}

.note{border-left:4px solid var(--warn);background:var(--warn-bg);padding:6px 10px;margin:12px 0}
table{border-collapse:collapse;width:100%;font-size:13.5px;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid var(--line);padding:5px 8px;text-align:left;vertical-align:top}
th{background:var(--soft);font-weight:600;white-space:nowrap}
td.n,th.n{text-align:right}
td.n{white-space:nowrap}
table.roles{width:auto;margin:0;align-self:flex-start;font-size:12.5px}
.scroll{overflow-x:auto;max-width:100%}
.badge{display:inline-block;font:700 11px/1 system-ui,sans-serif;letter-spacing:.06em;padding:4px 7px;border-radius:4px;
border:2px solid;vertical-align:2px;white-space:nowrap}
.b-critical{background:var(--crit);border-color:var(--crit);color:#fff}
.b-warning{background:var(--warn-bg);border-color:var(--warn);color:var(--warn)}
.b-info{background:var(--bg);border-color:var(--info);color:var(--info);border-style:dotted}
.b-ok{background:var(--bg);border-color:var(--ok);color:var(--ok)}
.counts{font-size:15px;margin:6px 0 10px}
.counts .count{font-weight:700;margin-right:12px}
.allclear{font-size:15px}
table.glance td.when{white-space:nowrap;font-size:12.5px}
table.glance tr.r-critical td:first-child{box-shadow:inset 4px 0 var(--crit)}
table.glance tr.r-warning td:first-child{box-shadow:inset 4px 0 var(--warn)}
table.glance tr.r-info td:first-child{box-shadow:inset 4px 0 var(--info)}
.finding{border:1px solid var(--line);border-radius:8px;padding:4px 16px 12px;margin:14px 0;break-inside:avoid}
.f-critical{border-left:8px solid var(--crit)}
.f-warning{border-left:6px solid var(--warn)}
.f-info{border-left:4px dotted var(--info)}
.finding h3{margin:10px 0 2px;overflow-wrap:anywhere}
.finding h3 code.rule{font-size:15px}
.finding .when{margin:0 0 6px;color:var(--muted);font-size:13px}
.finding .summary{font-weight:600;margin:6px 0;overflow-wrap:anywhere}
.finding .explanation{margin:6px 0;overflow-wrap:anywhere}
.quote{margin:4px 0 8px}
.quote .loc{font-size:12px;color:var(--muted);overflow-wrap:anywhere}
pre{margin:2px 0 0;padding:6px 8px;background:var(--soft);border:1px solid var(--line);border-radius:4px;
white-space:pre-wrap;overflow-wrap:anywhere;max-height:24em;overflow:auto}
.fix{background:var(--ok-bg);border-left:4px solid var(--ok);padding:6px 10px;margin-top:8px;overflow-wrap:anywhere}
.legend{font-size:13px;color:var(--muted)}
.key{display:inline-block;width:22px;height:11px;vertical-align:-1px;border:1px solid var(--muted)}
.k-steady{border:0;border-top:4px solid var(--ink2);height:8px}
.k-critical{background:repeating-linear-gradient(45deg,var(--crit) 0 1.5px,var(--crit-bg) 1.5px 4px);border-color:var(--crit)}
.k-warning{background:repeating-linear-gradient(45deg,var(--warn) 0 1px,var(--warn-bg) 1px 7px);border-color:var(--warn)}
.k-info{background:radial-gradient(var(--info) 0.8px,var(--info-bg) 1px) 0 0/5px 5px;border-color:var(--info)}
.ep-charts{border-top:1px solid var(--line);padding-top:2px;break-inside:avoid}
.ep-charts h3{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 10px}
.role{font-size:12px;font-weight:600;color:var(--muted);border:1px solid var(--line);border-radius:10px;padding:0 8px}
.flink{font-size:12px;font-weight:600;text-decoration:none;border:1px solid currentColor;border-radius:4px;padding:0 5px}
.fl-critical{color:#fff;background:var(--crit);border-color:var(--crit)}.fl-warning{color:var(--warn);background:var(--warn-bg)}.fl-info{color:var(--info);border-style:dotted}
td.hot{font-weight:700;color:var(--crit)}
.flag{font-size:10.5px;border:1px solid;border-radius:3px;padding:0 3px;vertical-align:1px}
.chartnote{font-size:11.5px;color:var(--muted);text-align:right}
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:10px 16px}
.chartbox{margin:0}
.chartbox figcaption{font-size:13px;display:flex;flex-wrap:wrap;gap:2px 10px;align-items:baseline}
.keys{color:var(--muted);font-size:12px}
.lkey{display:inline-block;width:18px;height:0;border-top:2px solid;vertical-align:3px;margin:0 3px 0 6px}
svg.chart,svg.mchart{width:100%;height:auto;display:block;font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
svg .plot{fill:var(--bg);stroke:var(--line)}
svg .grid{stroke:var(--grid);stroke-width:1}
svg .axis{stroke:var(--axis);stroke-width:1}
svg .ylab{font-size:11px;fill:var(--muted);text-anchor:end}
svg .xlab{font-size:11px;fill:var(--muted);text-anchor:middle}
svg .line{fill:none;stroke-width:1.8;stroke-linejoin:round}
svg .dot{stroke:none}
.l-prompt{stroke:var(--c-prompt);fill:var(--c-prompt);border-color:var(--c-prompt)}
.l-gen{stroke:var(--c-gen);fill:var(--c-gen);stroke-dasharray:6 3;border-color:var(--c-gen);border-top-style:dashed!important}
.l-kv{stroke:var(--c-kv);fill:var(--c-kv);border-color:var(--c-kv)}
.l-run{stroke:var(--c-run);fill:var(--c-run);border-color:var(--c-run)}
.l-wait{stroke:var(--c-wait);fill:var(--c-wait);stroke-dasharray:6 3;border-color:var(--c-wait);border-top-style:dashed!important}
.l-ok{stroke:var(--c-gen);fill:var(--c-gen);border-color:var(--c-gen)}
.l-fail{stroke:var(--crit);fill:var(--crit);stroke-dasharray:6 3;border-color:var(--crit);border-top-style:dashed!important}
.l-mean{stroke:var(--c-prompt);fill:var(--c-prompt);border-color:var(--c-prompt)}
.l-p99{stroke:var(--c-wait);fill:var(--c-wait);stroke-dasharray:6 3;border-color:var(--c-wait);border-top-style:dashed!important}
ul.outcomes{margin:4px 0 8px;padding-left:20px}
ul.outcomes li{overflow-wrap:anywhere}
table.frontend td:first-child{overflow-wrap:anywhere;min-width:120px}
svg .ref-kv{stroke:var(--crit);stroke-width:1.2;stroke-dasharray:3 3}
.lkey.ref-kv{border-color:var(--crit);border-top-style:dotted}
svg .ref-cap{stroke:var(--ink2);stroke-width:1.2;stroke-dasharray:2 3}
.lkey.ref-cap{border-color:var(--ink2);border-top-style:dotted}
svg text{paint-order:stroke;stroke:var(--bg);stroke-width:3px;stroke-linejoin:round}
svg .reflab{font-size:10px;fill:var(--crit);text-anchor:start}
svg .steady{fill:var(--ink2)}
svg .steady-edge{stroke:var(--ink2);stroke-width:1;stroke-dasharray:2 2}
svg .steadylab{font-size:10px;fill:var(--ink2);text-anchor:middle}
svg .pf-critical{fill:var(--crit-bg);fill-opacity:.75} svg .ph-critical{stroke:var(--crit);stroke-width:1.6;stroke-opacity:.45}
svg .pf-warning{fill:var(--warn-bg);fill-opacity:.75} svg .ph-warning{stroke:var(--warn);stroke-width:1.2;stroke-opacity:.4}
svg .pf-info{fill:var(--info-bg);fill-opacity:.75} svg .ph-info{fill:var(--info);fill-opacity:.5}
svg .bandtop-critical{fill:var(--crit)} svg .bandtop-warning{fill:var(--warn)} svg .bandtop-info{fill:var(--info)}
ul.args{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:2px 6px}
ul.args code{font-size:11.5px;background:var(--soft);padding:0 4px;border-radius:3px;overflow-wrap:anywhere}
td.src code{font-size:11.5px;overflow-wrap:anywhere;word-break:break-all}
table.deploy td:nth-child(-n+5){white-space:nowrap}
table.deploy td:first-child{white-space:normal;overflow-wrap:anywhere;min-width:120px}
table.deploy td:nth-child(6){min-width:300px}
table.deploy td:nth-child(7){min-width:200px;max-width:300px}
.notices li{overflow-wrap:anywhere}
.verdict{font-size:18px;line-height:1.4;margin:6px 0 10px;padding:10px 14px;border-radius:8px;border:1px solid var(--line);
border-left:8px solid var(--ok);background:var(--ok-bg)}
.verdict.v-critical{border-left-color:var(--crit);background:var(--crit-bg)}
.verdict.v-warning{border-left-color:var(--warn);background:var(--warn-bg)}
.verdict.v-info{border-left-color:var(--info);background:var(--info-bg)}
.verdict .badge{vertical-align:3px}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;margin:0;padding:0;border:0}
code.cli{white-space:nowrap;font-size:.92em;background:var(--soft);border:1px solid var(--line);border-radius:3px;padding:0 3px}
pre strong.used{background:var(--used);color:inherit;font-weight:700;border-radius:2px}
p.members{margin:4px 0;overflow-wrap:anywhere}
p.members .when{color:var(--muted);font-size:12.5px;white-space:nowrap}
p.members .member{white-space:nowrap}
.ep-multiples{border-top:1px solid var(--line);padding-top:2px;break-inside:avoid}
.ep-multiples h3{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 10px}
.multiples{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:6px 12px}
figure.sm{margin:0}
figure.sm figcaption{font-size:12.5px}
.small{font-size:12px}
@media (min-width:900px){.tiles{grid-template-columns:repeat(4,minmax(0,1fr))}}
@media (max-width:640px){table.glance thead{display:none}table.glance,table.glance tbody,table.glance tr,table.glance td{display:block;width:100%}
table.glance tr{border-bottom:1px solid var(--line);padding:4px 0}table.glance td{border:0;padding:2px 8px}
table.glance td.when{white-space:normal}.verdict{font-size:16px}}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--muted:#a0a8b3;--line:#3a4049;--bg:#15181c;--soft:#1f242a;
--crit:#ff7b72;--crit-bg:#3b1d1d;--warn:#e3b341;--warn-bg:#33290f;--info:#6cb6ff;--info-bg:#13263d;--ok:#56d364;
--ok-bg:#14301d;--grid:#2a3038;--axis:#6e7681;--ink2:#b1bac4;--c-prompt:#6cb6ff;--c-gen:#56d364;--c-kv:#c297ff;
--c-run:#e6e8eb;--c-wait:#ff9b5a;--used:#5c4a00}
.b-critical{color:#15181c}}
footer{margin-top:32px;padding-top:8px;border-top:1px solid var(--line);color:var(--muted);font-size:12px}
@media (max-width:700px){.page{padding:12px}.big-value{font-size:40px}.tile:last-child{grid-column:auto}}
@media print{body{font-size:10.5pt}.page{max-width:none;padding:0}nav{display:none}
pre{max-height:none;overflow:visible}.finding,.ep-charts,tr,figure{break-inside:avoid}a{color:inherit;text-decoration:none}}
"""
