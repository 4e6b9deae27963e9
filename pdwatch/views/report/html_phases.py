"""The HTML report's phases table: a sweep job's measured points, or a run's loads between idle gaps,
each its own steady state and verdict."""

from __future__ import annotations

from typing import Any

from .html_base import esc


def phases_table(phases: list[dict[str, Any]]) -> str:
    if not phases:
        return ""
    cpu = any(p.get("device") == "CPU" for p in phases)
    rows = []
    for p in phases:
        v = p["verdict"]
        verdict = "not judged" if v is None else esc(v["title"]) + (f" (<code>{esc(v['rule'])}</code>)" if v["rule"] else "")
        value = p["tps_per_worker"] if cpu else p["tps_per_gpu"]
        valid = "yes" if p["valid"] else "no: " + esc("; ".join(p["invalid_reasons"]))
        rows.append(f"<tr><td>{esc(p['label'])}</td>"
                    f"<td>{esc(p['window']['start'][11:19])}–{esc(p['window']['end'][11:19])}</td>"
                    f"<td class='n'>{_whole(value)}</td><td class='n'>{_whole(p['total_tps'])}</td>"
                    f"<td>{verdict}</td><td>{valid}</td></tr>")
    per = "tok/s per worker" if cpu else "TPS/GPU"
    sweep = any(p["concurrency"] is not None for p in phases)
    what = ("the sweep's measured points", "its window from benchmark.out") if sweep else \
        ("the run's loads between idle gaps", "its window from the requests in flight")
    return (f"<section id='phases'><h2>Phases: {what[0]}</h2>"
            f"<p>Each phase is its own steady state and verdict ({what[1]}).</p>"
            f"<div class='scroll'><table><thead><tr><th>phase</th><th>window (UTC)</th><th>{per}</th><th>total tok/s</th>"
            f"<th>verdict</th><th>valid</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>")


def _whole(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}"
