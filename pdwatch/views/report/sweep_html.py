"""``pdwatch sweep --format html``: one self-contained page, the frontier chart inline (SVG).

Every point is drawn with its verdict's colour and its tooltip (concurrency, figures, verdict);
an invalid point is a hollow grey cross, never a dot on the frontier; each job's frontier is a
line. Text from the results and logs goes through ``esc``; the page's Content-Security-Policy
forbids scripts and any load from elsewhere, as the report's does.
"""

from __future__ import annotations

from typing import Any

from .html_base import coord, esc, nice_step

CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"
W, H, LEFT, RIGHT, TOP, BOTTOM = 760, 420, 70, 20, 20, 50
COLOURS = {"critical": "#c62828", "warning": "#ef6c00", "info": "#1565c0", None: "#2e7d32"}
JOB_LINES = ("#37474f", "#6a1b9a", "#00838f", "#9e9d24", "#5d4037")


def render(data: dict[str, Any]) -> str:
    ax = data["axes"]
    rows = "".join(_row(p) for p in data["points"])
    fronts = "".join(f"<li>job {esc(f['job'])} ({esc(f['configuration'])}): "
                     f"{esc(', '.join('C=' + str(q['concurrency']) for q in f['points']) or 'no valid point')}. "
                     f"{esc(f['limits'])}</li>" for f in data["frontiers"])
    notes = "".join(f"<p class='note'>{esc(n)}</p>" for n in data["notes"])
    compare = f"<p>{esc(data['comparison'])}</p>" if data["comparison"] else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pdwatch sweep</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 1.5rem auto; max-width: 1100px; padding: 0 1rem; }}
svg.frontier {{ width: 100%; height: auto; max-width: {W}px; }}
table {{ border-collapse: collapse; width: 100%; }} td, th {{ border-bottom: 1px solid #ddd; padding: 4px 6px;
  text-align: left; vertical-align: top; overflow-wrap: break-word; }} td.n {{ text-align: right; }}
.wrap {{ overflow-x: auto; }} .invalid {{ color: #777; }} .note {{ background: #fff8e1; padding: 4px 8px; }}
.axis {{ font-size: 12px; fill: #333; }} .grid {{ stroke: #e0e0e0; }}
</style></head><body>
<h1>pdwatch sweep</h1>
<p>x: <b>{esc(ax['x']['label'])}</b> ({esc(ax['x']['definition'])}); y: <b>{esc(ax['y']['label'])}</b>
({esc(ax['y']['definition'])}). benchmark.out's times taken as {esc(data['timezone'])}.</p>
{notes}
<section id="chart">{_chart(data)}</section>
<h2>Frontier</h2><ul id="frontiers">{fronts}</ul>{compare}
<h2>Points</h2>
<div class="wrap"><table id="points"><thead><tr><th>job</th><th>configuration</th><th>C</th><th>TPS/GPU</th>
<th>TPS/user</th><th>TTFT ms</th><th>TPOT ms</th><th>verdict</th><th>valid</th></tr></thead>
<tbody>{rows}</tbody></table></div>
</body></html>
"""


def _num(value: Any, digits: int = 1) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def _row(p: dict[str, Any]) -> str:
    v = p["verdict"]
    verdict = "not judged" if v is None else esc(v["title"]) + (f" (<code>{esc(v['rule'])}</code>)" if v["rule"] else "")
    if v and v["evidence"]:
        verdict += f"<br><small>{esc(v['evidence'][0]['source'])}:{int(v['evidence'][0]['line'])}</small>"
    valid = "yes" + (", frontier" if p["on_frontier"] else "") if p["valid"] else \
        "no: " + esc("; ".join(p["invalid_reasons"]))
    return (f"<tr class='{'valid' if p['valid'] else 'invalid'}'><td>{esc(p['job'])}</td>"
            f"<td>{esc(p['configuration'])}</td><td class='n'>{esc(p['concurrency'] or '?')}</td>"
            f"<td class='n'>{_num(p['tps_per_gpu'])}</td><td class='n'>{_num(p['tps_per_user'])}</td>"
            f"<td class='n'>{_num(p['mean_ttft_ms'], 0)}</td><td class='n'>{_num(p['mean_tpot_ms'])}</td>"
            f"<td>{verdict}</td><td>{valid}</td></tr>")


def _chart(data: dict[str, Any]) -> str:
    pts = [p for p in data["points"] if p["tps_per_user"] is not None and p["tps_per_gpu"] is not None]
    if not pts:
        return "<p>No point has both figures: nothing to draw.</p>"
    xs, ys = [p["tps_per_user"] for p in pts], [p["tps_per_gpu"] for p in pts]
    x_step, y_step = nice_step(max(xs) - 0.0 or 1.0), nice_step(max(ys) - 0.0 or 1.0)
    x_hi, y_hi = x_step * (int(max(xs) / x_step) + 1), y_step * (int(max(ys) / y_step) + 1)

    def sx(x: float) -> float:
        return LEFT + (W - LEFT - RIGHT) * x / x_hi

    def sy(y: float) -> float:
        return H - BOTTOM - (H - TOP - BOTTOM) * y / y_hi

    out = [f'<svg class="frontier" viewBox="0 0 {W} {H}" role="img" aria-label="the Pareto frontier">']
    tick = 0.0
    while tick <= x_hi + 1e-9:
        out.append(f'<line class="grid" x1="{coord(sx(tick))}" y1="{TOP}" x2="{coord(sx(tick))}" y2="{H - BOTTOM}"/>'
                   f'<text class="axis" x="{coord(sx(tick))}" y="{H - BOTTOM + 16}" text-anchor="middle">{tick:g}</text>')
        tick += x_step
    tick = 0.0
    while tick <= y_hi + 1e-9:
        out.append(f'<line class="grid" x1="{LEFT}" y1="{coord(sy(tick))}" x2="{W - RIGHT}" y2="{coord(sy(tick))}"/>'
                   f'<text class="axis" x="{LEFT - 6}" y="{coord(sy(tick) + 4)}" text-anchor="end">{tick:,.0f}</text>')
        tick += y_step
    out.append(f'<text class="axis" x="{(LEFT + W - RIGHT) / 2}" y="{H - 8}" text-anchor="middle">'
               f'{esc(data["axes"]["x"]["label"])}</text>'
               f'<text class="axis" transform="translate(14 {(TOP + H - BOTTOM) / 2}) rotate(-90)" '
               f'text-anchor="middle">{esc(data["axes"]["y"]["label"])}</text>')
    for i, f in enumerate(data["frontiers"]):
        on = sorted((p for p in pts if p["job"] == f["job"] and p["on_frontier"]), key=lambda p: p["tps_per_user"])
        if len(on) > 1:
            path = " ".join(f"{coord(sx(p['tps_per_user']))},{coord(sy(p['tps_per_gpu']))}" for p in on)
            out.append(f'<polyline class="frontier-line" data-job="{esc(f["job"])}" fill="none" '
                       f'stroke="{JOB_LINES[i % len(JOB_LINES)]}" stroke-width="2" points="{path}"/>')
    for p in pts:
        x, y = coord(sx(p["tps_per_user"])), coord(sy(p["tps_per_gpu"]))
        v = p["verdict"]
        tip = esc(f"job {p['job']} C={p['concurrency']}: {p['tps_per_gpu']:,.1f} tok/s/GPU, "
                  f"{p['tps_per_user']:,.1f} tok/s/user; " +
                  (v["text"] if v else "not judged") +
                  ("" if p["valid"] else "; INVALID: " + "; ".join(p["invalid_reasons"])))
        if p["valid"]:
            colour = COLOURS.get(v["severity"] if v else None, COLOURS[None])
            out.append(f'<circle class="point" data-concurrency="{esc(p["concurrency"])}" '
                       f'data-rule="{esc(v["rule"] if v and v["rule"] else "")}" cx="{x}" cy="{y}" r="6" '
                       f'fill="{colour}"><title>{tip}</title></circle>'
                       f'<text class="axis" x="{x}" y="{coord(sy(p["tps_per_gpu"]) - 9)}" text-anchor="middle">'
                       f'C={esc(p["concurrency"])}</text>')
        else:
            out.append(f'<g class="point invalid" data-concurrency="{esc(p["concurrency"])}"><title>{tip}</title>'
                       f'<path d="M{x} {y} m-5 -5 l10 10 m0 -10 l-10 10" stroke="#9e9e9e" stroke-width="2"/></g>')
    out.append("</svg>")
    return "".join(out)
