"""``pdwatch sweep``'s output: the judged points and the frontier as one dict (the JSON contract,
docs/sweep.md), and that dict as Markdown or as text for a terminal (with a plotext chart).

The dict is built once (``build``); every format renders it, so they cannot disagree.
"""

from __future__ import annotations

import json
from typing import Any

from pdwatch.session.sweep_verdicts import JudgedPoint, JudgedSweep
from pdwatch.sweep import AXES
from pdwatch.sweep.frontier import frontier, limit_changes

Y_AXES = {"output": "output_tokens_per_s_per_gpu", "total": "total_tokens_per_s_per_gpu"}
X_AXIS = "tokens_per_s_per_user"


def build(sweep: JudgedSweep, y: str = "output") -> dict[str, Any]:
    y_key = Y_AXES[y]
    points = [_point(p, y_key) for p in sweep.points]
    jobs: dict[str, list[dict[str, Any]]] = {}
    for p in points:
        jobs.setdefault(p["job"], []).append(p)
    fronts = []
    for job, members in jobs.items():
        drawable = [(i, p["tps_per_user"], p["tps_per_gpu"]) for i, p in enumerate(members)
                    if p["valid"] and p["tps_per_user"] is not None and p["tps_per_gpu"] is not None]
        keys = frontier(drawable)
        on = sorted((members[i] for i in keys), key=lambda p: p["concurrency"] or 0)
        for p in on:
            p["on_frontier"] = True
        limits = limit_changes([(p["concurrency"], _limit(p)) for p in on if p["concurrency"] is not None])
        fronts.append({"job": job, "configuration": members[0]["configuration"],
                       "points": [{"job": job, "concurrency": p["concurrency"]} for p in on], "limits": limits})
    return {
        "axes": {"x": _axis(X_AXIS), "y": _axis(y_key)},
        "timezone": sweep.timezone,
        "notes": list(sweep.notes),
        "points": points,
        "frontier": [q for f in fronts for q in f["points"]],
        "frontiers": fronts,
        "comparison": _compare(fronts, points) if len(fronts) > 1 else "",
    }


def _axis(key: str) -> dict[str, str]:
    axis = AXES[key]
    return {"key": key, "label": axis.label, "unit": axis.unit, "definition": axis.definition}


def _point(j: JudgedPoint, y_key: str) -> dict[str, Any]:
    p, r, w, v = j.point, j.point.result, j.point.window, j.verdict
    return {
        "job": p.job_id, "configuration": j.configuration, "result_file": str(r.path),
        "concurrency": p.concurrency, "gpus": r.gpus.total if r.gpus else None,
        "output_throughput": r.output_throughput, "total_token_throughput": r.total_token_throughput,
        "tps_per_gpu": getattr(p, y_key), "output_tps_per_gpu": p.output_tokens_per_s_per_gpu,
        "total_tps_per_gpu": p.total_tokens_per_s_per_gpu, "tps_per_user": p.tokens_per_s_per_user,
        "mean_ttft_ms": r.ttft.mean_ms if r.ttft else None, "mean_tpot_ms": r.tpot.mean_ms if r.tpot else None,
        "window": None if w is None else {"start": _utc(w.start), "end": _utc(w.end), "source": w.source,
                                          "timezone_assumed": str(w.timezone)},
        "valid": j.valid, "invalid_reasons": list(j.invalid_reasons), "on_frontier": False,
        "verdict": None if v is None else {
            "text": v.text, "title": v.title, "rule": v.rule, "severity": v.severity, "endpoint": v.endpoint,
            "summary": v.summary, "evidence": [{"source": s, "line": n} for s, n in v.evidence]},
    }


def _utc(when: Any) -> str:
    import pandas as pd
    return pd.Timestamp(when).tz_convert("UTC").isoformat()


def _limit(p: dict[str, Any]) -> str:
    v = p["verdict"]
    if v is None:
        return "not judged"
    if v["rule"] is None:
        return "no bottleneck found"
    what = v["title"].split(": ", 1)[-1]
    if what[1:2].islower():  # "Near capacity" -> "near capacity"; "KV cache" stays
        what = what[:1].lower() + what[1:]
    return f"{what} ({v['rule']})"


def _compare(fronts: list[dict[str, Any]], points: list[dict[str, Any]]) -> str:
    """Where the jobs' frontiers differ most, at a tokens/s per user they can both serve ("job B is
    18% ahead of job A at 30 tokens/s per user"), each frontier read between its points (linearly)."""
    curves = {}
    for f in fronts:
        on = sorted(((p["tps_per_user"], p["tps_per_gpu"]) for p in points if p["job"] == f["job"] and p["on_frontier"]))
        if on:
            curves[f["job"]] = on
    said = []
    jobs = sorted(curves)
    for i, a in enumerate(jobs):
        for b in jobs[i + 1:]:
            lo = max(curves[a][0][0], curves[b][0][0])
            hi = min(curves[a][-1][0], curves[b][-1][0])
            if lo > hi:
                said.append(f"jobs {a} and {b} serve no common tokens/s per user (their frontiers do not overlap)")
                continue
            xs = sorted({x for x, _ in curves[a] + curves[b] if lo <= x <= hi})
            best = None
            for x in xs:
                ya, yb = _at(curves[a], x), _at(curves[b], x)
                if min(ya, yb) <= 0:
                    continue
                gap = abs(ya - yb) / min(ya, yb)
                if best is None or gap > best[0]:
                    best = (gap, x, a if ya > yb else b, b if ya > yb else a)
            if best is not None:
                gap, x, ahead, behind = best
                said.append(f"job {ahead} is {100 * gap:.0f}% ahead of job {behind} at {x:,.1f} tokens/s per user")
    return "; ".join(said)


def _at(curve: list[tuple[float, float]], x: float) -> float:
    """A frontier's y at ``x``, read linearly between its points (``x`` within its range)."""
    for (x0, y0), (x1, y1) in zip(curve, curve[1:]):
        if x0 <= x <= x1:
            return y0 if x1 == x0 else y0 + (y1 - y0) * (x - x0) / (x1 - x0)
    return curve[0][1] if x <= curve[0][0] else curve[-1][1]


# -- Markdown ------------------------------------------------------------------------------------

def _fmt(value: Any, digits: int = 1) -> str:
    return "?" if value is None else f"{value:,.{digits}f}"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown(data: dict[str, Any]) -> str:
    ax = data["axes"]
    out = ["# pdwatch sweep", "",
           f"Axes: x = {ax['x']['label']} ({ax['x']['definition']}); y = {ax['y']['label']} ({ax['y']['definition']}). "
           f"benchmark.out's times taken as {data['timezone']}.", ""]
    for note in data["notes"]:
        out.append(f"> {_cell(note)}")
    out += ["| job | configuration | C | TPS/GPU | TPS/user | TTFT ms | TPOT ms | verdict | valid |",
            "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for p in data["points"]:
        v = p["verdict"]
        verdict = "not judged" if v is None else (v["title"] + (f" (`{v['rule']}`)" if v["rule"] else ""))
        if v and v["evidence"]:
            verdict += f" — {_cell(v['evidence'][0]['source'])}:{v['evidence'][0]['line']}"
        valid = ("yes" + (", frontier" if p["on_frontier"] else "")) if p["valid"] else \
            "no: " + "; ".join(p["invalid_reasons"])
        out.append(f"| {_cell(p['job'])} | {_cell(p['configuration'])} | {p['concurrency'] or '?'} | "
                   f"{_fmt(p['tps_per_gpu'])} | {_fmt(p['tps_per_user'])} | {_fmt(p['mean_ttft_ms'], 0)} | "
                   f"{_fmt(p['mean_tpot_ms'])} | {_cell(verdict)} | {_cell(valid)} |")
    out += ["", "## Frontier", ""]
    for f in data["frontiers"]:
        cs = ", ".join(f"C={q['concurrency']}" for q in f["points"]) or "no valid point"
        out.append(f"- job {_cell(f['job'])} ({_cell(f['configuration'])}): {cs}. {_cell(f['limits'])}")
    if data["comparison"]:
        out += ["", data["comparison"]]
    return "\n".join(out) + "\n"


def to_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


# -- a terminal ----------------------------------------------------------------------------------

TERM_COLOURS = {"critical": "red", "warning": "orange", "info": "blue", None: "green"}


def terminal(data: dict[str, Any], width: int = 100, height: int = 24) -> str:
    """The frontier as a plotext chart (each job's frontier a line; each valid point marked in its
    verdict's colour and labelled with its concurrency; invalid points left out), then the Markdown
    table: what a terminal shows."""
    import plotext as plt
    plt.clear_figure()
    plt.plotsize(width, height)
    plt.theme("clear")
    drawn = [p for p in data["points"] if p["valid"] and p["tps_per_user"] is not None and p["tps_per_gpu"] is not None]
    if not drawn:
        return "no valid point to draw\n\n" + markdown(data)
    xs, ys = [p["tps_per_user"] for p in drawn], [p["tps_per_gpu"] for p in drawn]
    dx, dy = (max(xs) - min(xs)) or max(xs) or 1.0, (max(ys) - min(ys)) or max(ys) or 1.0
    plt.xlim(min(xs) - 0.08 * dx, max(xs) + 0.08 * dx)  # room for the labels at the edges
    plt.ylim(min(ys) - 0.08 * dy, max(ys) + 0.12 * dy)
    several = len(data["frontiers"]) > 1
    for f in data["frontiers"]:
        pts = sorted((p for p in data["points"] if p["job"] == f["job"] and p["valid"]
                      and p["tps_per_user"] is not None and p["tps_per_gpu"] is not None),
                     key=lambda p: p["tps_per_user"])
        on = [p for p in pts if p["on_frontier"]]
        if len(on) > 1:
            plt.plot([p["tps_per_user"] for p in on], [p["tps_per_gpu"] for p in on], marker="braille",
                     label=f"job {f['job']}" if several else None)
        for p in pts:
            v = p["verdict"]
            severity = v["severity"] if v else None
            plt.scatter([p["tps_per_user"]], [p["tps_per_gpu"]], marker="●", color=TERM_COLOURS.get(severity, "green"))
        for label, x, y in _labels(pts, dx, dy):
            plt.text(label, x, y + 0.06 * dy, alignment="center")
    plt.xlabel(data["axes"]["x"]["label"])
    plt.ylabel(data["axes"]["y"]["label"])
    plt.title("● green: no bottleneck, blue: info, orange: warning, red: critical")
    return plt.build() + "\n\n" + markdown(data)


def _labels(pts: list[dict[str, Any]], dx: float, dy: float) -> list[tuple[str, float, float]]:
    """One label per cluster of points closer than 6% of the axes' spans ("C=512/1024"), so that
    labels do not print over each other."""
    out: list[tuple[list[int], float, float]] = []
    for p in pts:
        x, y = p["tps_per_user"], p["tps_per_gpu"]
        near = next((c for c in out if abs(c[1] - x) < 0.06 * dx and abs(c[2] - y) < 0.06 * dy), None)
        if near is None:
            out.append(([p["concurrency"]], x, y))
        else:
            near[0].append(p["concurrency"])
    return [("C=" + "/".join(str(c) for c in sorted(cs)), x, y) for cs, x, y in out]
