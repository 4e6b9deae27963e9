"""The report's overview: one chart of the whole run, drawn right under the verdict.

The time axis spans the run. The line is the most telling series the logs give: each endpoint's KV
cache usage (one 0-100% scale for every endpoint) when some endpoint's cache got at least a quarter
full, else its tokens/s (a near-empty cache tells nothing), else the frontend's requests answered
and failed per second: the first that is not flat at zero.
Each finding is a span from its start to its end (or the end of the logs), coloured by severity:
shaded over the plot, and a bar in its group's lane above the plot, labelled by rule and linked to
its card. Inline SVG only; every string from the report goes through ``esc``.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any

from pdwatch.rules.findings import severity_rank
from pdwatch.units import fmt_short
from pdwatch.views.report.format import endpoints_worst_first, fmt_time, severity_word
from pdwatch.views.report.html_base import (coord, epoch, esc, finite_values, nice_step, severity_of,
                                            time_ticks)

# viewBox units: the page scales the drawing to its width (about 1.35x at 1280 px, 0.85x at 800 px),
# so its 12-unit text reads 16 px wide and 10 px narrow
WIDTH = 880
PLOT_LEFT = 204  # the lane labels (rule names) and the y-axis labels share this column
PLOT_RIGHT = WIDTH - 34  # room for the "95%" label
LANE = 16
PLOT_HEIGHT = 140
LABEL_CHARS = 26  # a longer lane label is cut (its full text is the bar's tooltip)
ENDPOINT_COLOURS = 6  # more endpoints than this: one colour per role
KV_TELLING_PCT = 25.0  # a cache that never got this full says less than the tokens/s
QUIET_SHARE = 0.1  # a stretch this share of the run before the first value is labelled, not left blank


def overview(report: dict[str, Any]) -> str:
    """The overview section, or "" when no endpoint has a series over time to draw."""
    series = report.get("series") or {}
    names = [ep.get("name") for ep in endpoints_worst_first(report)]
    names += [n for n in series if n not in names]
    choice = _telling_series(series, names)
    if choice is None:
        return ""
    title, scale, lines = choice
    roles = {ep.get("name"): ep.get("role") or "?" for ep in (report.get("deployment") or {}).get("endpoints") or []}
    findings = report.get("findings") or []
    domain = _run_domain(report.get("summary") or {}, lines, findings)
    if domain is None:
        return ""
    keys, classes = _colours([name for name, _ in lines], roles)
    svg = _svg(lines, classes, scale, domain, findings, report.get("groups") or [])
    caption = (f'<figcaption><strong>{esc(title)}</strong> <span class="keys">{keys}</span></figcaption>')
    spans = sum(1 for f in findings if epoch(f.get("start")) is not None)
    note = ("Each finding is a span from its start to its end, coloured by severity; its lane is labelled by "
            "rule and links to its card." if spans else "No finding to mark on the run.")
    return ('<section id="overview" class="overview">'
            '<h2 class="sr">The run at a glance</h2>'
            f'<figure class="ovbox">{caption}{svg}'
            f'<p class="legend small">{note}</p></figure></section>')


# ------------------------------------------------------------------------------------------ the data


Line = tuple[str, list[tuple[float, float]]]  # a label (the endpoint) and its (epoch, value) points
KV_CHART = ("KV cache usage % per endpoint over the run", {"fixed": 100.0, "ref": 95.0})
TOKENS_CHART = ("tokens/s per endpoint (prompt + generated) over the run", {})
REQUESTS_CHART = ("requests/s at the frontend over the run (its log)", {})


def _summed(data: dict[str, Any], keys: tuple[str, ...]) -> list[tuple[float, float]]:
    """(epoch, the sum of ``keys``) at each time at least one of them has a value."""
    columns = [finite_values(data, key) for key in keys]
    out = []
    for i, t in enumerate(data.get("ts") or []):
        at = epoch(t)
        values = [c[i] for c in columns if i < len(c) and c[i] is not None]
        if at is not None and values:
            out.append((at, sum(values)))
    return out


def _telling_series(series: dict[str, Any], names: list[Any]) -> tuple[str, dict[str, Any], list[Line]] | None:
    """The title, y scale and lines of the most telling series the endpoints have: the first of KV %
    (some cache at least a quarter full), tokens/s, the frontend's requests/s that is not flat at zero;
    else the first that has any point."""
    def lines(keys: tuple[str, ...], suffix: str = "") -> list[Line]:
        found = [(f"{name}{suffix}", _summed(series[name], keys)) for name in names if isinstance(series.get(name), dict)]
        return [(label, points) for label, points in found if points]

    def peak(found: list[Line]) -> float:
        return max((v for _, points in found for _, v in points), default=0.0)

    kv, tokens = lines(("kv_usage_pct",)), lines(("prompt_tps", "gen_tps"))
    requests = lines(("requests_ok_per_s",), ": answered") + lines(("requests_failed_per_s",), ": failed")
    candidates = [(kv, KV_CHART, peak(kv) >= KV_TELLING_PCT), (tokens, TOKENS_CHART, peak(tokens) > 0),
                  (requests, REQUESTS_CHART, peak(requests) > 0),
                  (kv, KV_CHART, True), (tokens, TOKENS_CHART, True), (requests, REQUESTS_CHART, True)]
    for found, (title, scale), telling in candidates:
        if found and telling:
            return title, scale, found
    return None


def _run_domain(summary: dict[str, Any], lines: list[Line],
                findings: list[dict[str, Any]]) -> tuple[float, float, Any] | None:
    """The run's span (its first to last line), widened to the series and the findings' starts."""
    times = [t for _, points in lines for t, _ in points]
    run = summary.get("run") or {}
    times += [t for t in (epoch(run.get("start")), epoch(run.get("end"))) if t is not None]
    times += [t for f in findings for t in (epoch(f.get("start")), epoch(f.get("end"))) if t is not None]
    if not times:
        return None
    lo, hi = min(times), max(times)
    if hi - lo < 1:
        lo, hi = lo - 30, hi + 30
    first = run.get("start") if isinstance(run.get("start"), str) else None
    try:
        tz = datetime.fromisoformat(first).tzinfo if first else None
    except ValueError:
        tz = None
    return lo, hi, tz or timezone.utc


def _colours(names: list[Any], roles: dict[Any, str]) -> tuple[str, dict[Any, str]]:
    """The key (HTML) and each line's class: one colour per endpoint, or per role when there are many."""
    if len(names) <= ENDPOINT_COLOURS:
        classes = {name: f"ov{i}" for i, name in enumerate(names)}
        keys = "".join(f'<span class="lkey ov{i}"></span>{esc(name)} ' for i, name in enumerate(names))
        return keys, classes
    order: list[str] = []
    for name in names:
        if roles.get(name, "?") not in order:
            order.append(roles.get(name, "?"))
    colour = {role: f"ov{i % ENDPOINT_COLOURS}" for i, role in enumerate(order)}
    count = {role: sum(1 for n in names if roles.get(n, "?") == role) for role in order}
    keys = "".join(f'<span class="lkey {colour[role]}"></span>{esc(role)} '
                   f'({count[role]} endpoint{"s" if count[role] > 1 else ""}) '
                   for role in order)
    return keys, {name: colour[roles.get(name, "?")] for name in names}


# ------------------------------------------------------------------------------------------ the SVG


def _svg(lines: list[Line], classes: dict[Any, str], scale: dict[str, Any], domain: tuple[float, float, Any],
         findings: list[dict[str, Any]], groups: list[dict[str, Any]]) -> str:
    lo, hi, tz = domain
    lanes = _lanes(findings, groups)
    top = 8 + LANE * len(lanes) + (6 if lanes else 0)  # the plot's top edge
    bottom = top + PLOT_HEIGHT
    height = bottom + 24
    x0, x1 = PLOT_LEFT, PLOT_RIGHT
    vmax = scale.get("fixed") or _nice_top(max(v for _, points in lines for _, v in points))
    step = 25.0 if scale.get("fixed") else nice_step(vmax)

    def sx(t: float) -> float:
        return x0 + (min(max(t, lo), hi) - lo) / (hi - lo) * (x1 - x0)

    def sy(v: float) -> float:
        return bottom - min(max(v, 0.0), vmax) / vmax * (bottom - top)

    out = [f'<svg class="overview" viewBox="0 0 {WIDTH} {height}" role="img" preserveAspectRatio="xMidYMid meet">',
           f'<rect x="{x0}" y="{top}" width="{x1 - x0}" height="{bottom - top}" class="plot"/>']
    bars = []
    for row, (card, rule, members) in enumerate(lanes):
        y = 8 + LANE * row
        label = rule if len(rule) <= LABEL_CHARS else rule[:LABEL_CHARS - 1] + "\u2026"
        bars.append(f'<a href="#finding-{card}"><text x="{x0 - 8}" y="{y + 10}" class="lanelab">{esc(label)}</text></a>')
        bars.append(f'<line x1="{x0}" y1="{y + 5.5}" x2="{x1}" y2="{y + 5.5}" class="lane"/>')
        # the least severe first, so the worst is drawn on top
        for f in sorted(members, key=lambda m: -severity_rank(severity_of(m))):
            start, end = epoch(f.get("start")), epoch(f.get("end"))
            xa, xb = sx(start), sx(hi if end is None else end)
            if xb - xa < 3:  # an instant: a mark you can see
                xa, xb = xa - 1.5, xa + 1.5
            sev = severity_of(f)
            tip = (f'{severity_word(sev)}: {esc(f.get("rule", "?"))} on {esc(f.get("endpoint") or "the deployment")}, '
                   f'{esc(fmt_time(f.get("start")))} to {esc(fmt_time(f.get("end")) if f.get("end") else "the end of the logs")}')
            out.append(f'<rect x="{coord(xa)}" y="{top}" width="{coord(xb - xa)}" height="{bottom - top}" '
                       f'class="shade sh-{sev}"/>')
            bars.append(f'<a href="#finding-{card}"><rect x="{coord(xa)}" y="{y}" width="{coord(xb - xa)}" height="11" '
                        f'class="span sp-{sev}"><title>{tip}</title></rect></a>')
    v = 0.0
    while v <= vmax + 1e-9:
        y = sy(v)
        out.append(f'<line x1="{x0}" y1="{coord(y)}" x2="{x1}" y2="{coord(y)}" class="grid"/>')
        out.append(f'<text x="{x0 - 4}" y="{coord(y + 3.5)}" class="ylab">{esc(fmt_short(v, "tick"))}</text>')
        v += step
    for t, label in time_ticks(lo, hi, tz, 10):
        x = sx(t)
        out.append(f'<line x1="{coord(x)}" y1="{bottom}" x2="{coord(x)}" y2="{bottom + 4}" class="axis"/>')
        out.append(f'<text x="{coord(x)}" y="{bottom + 16}" class="xlab">{esc(label)}</text>')
    out.append(f'<line x1="{x0}" y1="{bottom}" x2="{x1}" y2="{bottom}" class="axis"/>')
    first = min(t for _, points in lines for t, _ in points)
    if (first - lo) / (hi - lo) >= QUIET_SHARE:  # start-up, most often: say why the plot is empty there
        out.append(f'<text x="{coord((x0 + sx(first)) / 2)}" y="{coord((top + bottom) / 2)}" class="quiet">'
                   'no stats yet</text>')
    ref = scale.get("ref")
    if ref is not None:
        out.append(f'<line x1="{x0}" y1="{coord(sy(ref))}" x2="{x1}" y2="{coord(sy(ref))}" class="ref-kv"/>')
        out.append(f'<text x="{x1 + 3}" y="{coord(sy(ref) + 3.5)}" class="reflab">{fmt_short(ref, "tick")}%</text>')
    for name, points in reversed(lines):  # the worst endpoint (first) drawn last, on top
        cls = classes[name]
        path = " ".join(f'{"M" if i == 0 else "L"}{coord(sx(t))},{coord(sy(v))}' for i, (t, v) in enumerate(points))
        out.append(f'<path d="{path}" class="line {cls}"><title>{esc(name)}</title></path>')
        if len(points) <= 40:
            out += [f'<circle cx="{coord(sx(t))}" cy="{coord(sy(v))}" r="2.2" class="dot {cls}"/>' for t, v in points]
    out += bars
    out.append("</svg>")
    return "".join(out)


def _nice_top(peak: float) -> float:
    if not peak > 0:
        return 1.0
    step = nice_step(peak)
    return math.ceil(peak / step - 1e-9) * step


def _lanes(findings: list[dict[str, Any]], groups: list[dict[str, Any]]) -> list[tuple[int, str, list[dict[str, Any]]]]:
    """One lane per group of findings (identical findings across endpoints share one), in the
    diagnosis' order: (card number, label, the members that have a start). The label is the rule,
    and where two lanes have the same rule, where it fired too."""
    groups = groups or [{"rule": f.get("rule"), "findings": [i]} for i, f in enumerate(findings)]
    lanes = []
    for card, g in enumerate(groups, 1):
        members = [findings[i] for i in g.get("findings") or [] if 0 <= i < len(findings)]
        timed = [f for f in members if epoch(f.get("start")) is not None]
        if timed:
            lanes.append((card, g, timed))
    rules = [str(g.get("rule") or "?") for _, g, _ in lanes]
    return [(card, rule if rules.count(rule) == 1 else f'{rule} · {g.get("label") or timed[0].get("endpoint") or "deployment"}',
             timed) for (card, g, timed), rule in zip(lanes, rules)]
