"""Derive ``promtool test rules`` files from pdwatch's own rule cases (tests/rules_builtin/cases).

For each built-in rule that exports, each of its cases whose inputs Prometheus can have
becomes a promtool test of the exported rule file (tests/data/prometheus/pdwatch-rules-<interval>.yml):

- the stats fields become the series vLLM serves (``vllm:num_requests_running{engine=...}``,
  ``vllm:kv_cache_usage_perc`` = % / 100, the token counters summed from the rates, a Dynamo
  frontend's histograms ...), labelled ``job="vllm"``, ``instance=<endpoint>``, ``role``; a
  counter's first value is one interval before the first stats line, so every line has its
  rate, and the times of the case are shifted by that interval. A line that is missing is a
  stale marker (the scrape failed), and so is the step after a series ends;
- the numeric facts become ``pdwatch_fact`` series; the other facts, log events and the
  fields no /metrics series gives (prefix_hit_pct, ...) are not in Prometheus: they are
  left out, and an expectation is kept only if pdwatch itself, given only what Prometheus
  has (and keep_firing_for 0, as exported), still expects it;
- each kept expectation is an ``alert_rule_test``: the alerts pdwatch expects at that time,
  one per engine for an engine-scope rule, with the exported labels; the annotations are
  what promtool renders for them (captured once by running promtool: they are the
  templates' text, checked here to hold no template error).

``python -m tests.prometheus.promtool_cases`` rewrites tests/data/prometheus; the tests
check the shipped files are what it writes and that promtool passes them.
"""

from __future__ import annotations

import copy
import math
import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from pdwatch.rules import load_rules
from pdwatch.rules.casefile import _run, load_case_file
from pdwatch.rules.series import expand
from pdwatch.rules.span import ZERO, parse_span
from pdwatch.alerting import ExportOptions, NUMERIC_FACTS, export

REPO = Path(__file__).resolve().parents[2]
CASES = REPO / "tests" / "rules_builtin" / "cases"
OUT = REPO / "tests" / "data" / "prometheus"
JOB = "vllm"

# Expectations whose scenario reads differently in metrics than in a log, on purpose.
LOG_ONLY = {
    ("stats_missing", "near miss - an idle engine prints one all-zero line and goes quiet"):
        "an idle vLLM stops printing stats lines, but its /metrics stays: series that stop are a target gone",
}

GAUGES = {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting"}
COUNTERS = {"prompt_tps": "vllm:prompt_tokens_total", "gen_tps": "vllm:generation_tokens_total"}
FRONTEND_GAUGES = {"frontend_inflight": "dynamo_frontend_inflight_requests",
                   "frontend_queued": "dynamo_frontend_queued_requests"}
FRONTEND_HISTOGRAMS = {"ttft_s": "dynamo_frontend_time_to_first_token_seconds",
                       "itl_s": "dynamo_frontend_inter_token_latency_seconds",
                       "isl_tokens": "dynamo_frontend_input_sequence_tokens",
                       "osl_tokens": "dynamo_frontend_output_sequence_tokens"}
NOT_METRICS = ("deferred", "prefix_hit_pct", "external_prefix_hit_pct")


def seconds(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) else float(parse_span(str(value)).seconds)


def rules_file(interval: str) -> str:
    return f"pdwatch-rules-{interval}.yml"


MATCH = f'{{job="{JOB}"}}'  # the derived tests' export names the vLLM targets (stats_missing reads up then)


def export_options(interval: str) -> ExportOptions:
    from pdwatch.sources.promql import parse_selector
    return ExportOptions(interval_s=seconds(interval), match=parse_selector(MATCH))


def export_text(interval: str) -> str:
    return export(load_rules(), export_options(interval)).text


# -- series --------------------------------------------------------------------------------------
def _fmt(x: float) -> str:
    if math.isnan(x):
        return "stale"
    return str(int(x)) if x == int(x) and abs(x) < 1e15 else repr(round(x, 9))


def _values(points: list[float]) -> str:
    """promtool's notation: '_' for no sample, 'stale' for a marker; runs written as axN."""
    out: list[str] = []
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and _same(points[j + 1], points[i]):
            j += 1
        token = "_" if points[i] is None else _fmt(points[i])
        n = j - i
        if token == "stale" or n == 0:
            out += [token] * (n + 1)
        elif token == "_":
            out.append(f"_x{n + 1}")
        else:
            out.append(f"{token}x{n}")
        i = j + 1
    return " ".join(out)


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isnan(a) or math.isnan(b):
        return False  # a marker each time
    return a == b


def series_of(test: dict[str, Any]) -> tuple[list[dict[str, str]], float] | None:
    """The input series of a case (None: it needs what Prometheus has not), and the time shift."""
    step = seconds(test.get("interval", "10s"))
    length = 0
    for spec in test.get("endpoints") or []:
        for fields in (spec.get("engines") or {}).values():
            for text in (fields or {}).values():
                length = max(length, len(expand(text)))
    out: list[dict[str, str]] = []
    for spec in test.get("endpoints") or []:
        if spec.get("rows") or spec.get("log") or spec.get("log_file"):
            return None  # (events are left out: Prometheus has none; visible() checks pdwatch agrees)
        name, role = str(spec["name"]), spec.get("role", "unknown")
        target = {"job": JOB, "instance": name, **({"role": role} if role != "unknown" else {})}
        frontend = role == "frontend"
        # Prometheus's own series of the target: up while the endpoint prints (or, printing nothing, is
        # there at all: a page without vllm: series), down once its lines stop.
        last = -1
        for fields in (spec.get("engines") or {}).values():
            for text in (fields or {}).values():
                values = expand(text)
                last = max(last, max((k for k, x in enumerate(values) if not math.isnan(x)), default=-1))
        up = [1.0] * length if last < 0 else [1.0 if k <= last else 0.0 for k in range(length)]
        body = ",".join(f'{k}="{v}"' for k, v in target.items())
        out.append({"series": f"up{{{body}}}", "values": _values([None] + (up or [1.0]))})
        for engine, fields in (spec.get("engines") or {}).items():
            cols = {f: expand(v) for f, v in (fields or {}).items() if f not in NOT_METRICS}
            n = max((len(v) for v in cols.values()), default=0)
            present = [k < n and not all(math.isnan(v[k]) if k < len(v) else True for v in cols.values())
                       for k in range(length)]
            labels = target if frontend else {**target, "engine": str(engine), "model_name": "m"}

            def column(field: str) -> list[float]:
                v = cols.get(field, [])
                return [v[k] if k < len(v) else math.nan for k in range(length)]

            def emit(metric: str, points: list[float | None], extra: dict[str, str] | None = None) -> None:
                body = ",".join(f'{k}="{v}"' for k, v in {**labels, **(extra or {})}.items())
                out.append({"series": f"{metric}{{{body}}}", "values": _values(_trim(points))})

            def gauge(field: str, metric: str, scale: float = 1.0) -> None:
                if field in cols:
                    emit(metric, [None] + [x * scale if present[k] else math.nan
                                           for k, x in enumerate(column(field))])

            def counter(field: str, metric: str, per_line: bool = False) -> None:
                if field not in cols:
                    return
                total, points = 0.0, [0.0]
                for k, x in enumerate(column(field)):
                    if not present[k] or math.isnan(x):
                        points.append(math.nan)
                        continue
                    total += x if per_line else x * step
                    points.append(total)
                emit(metric, points)

            if frontend:
                for field, metric in FRONTEND_GAUGES.items():
                    gauge(field, metric)
                for field, metric in FRONTEND_HISTOGRAMS.items():
                    if field in cols:
                        sums, counts, s, c = [0.0], [0.0], 0.0, 0.0
                        for k, x in enumerate(column(field)):
                            if present[k] and not math.isnan(x):
                                s, c = s + x, c + 1
                            sums.append(s if present[k] else math.nan)
                            counts.append(c if present[k] else math.nan)
                        emit(metric + "_sum", sums)
                        emit(metric + "_count", counts)
                if "request_rate" in cols:
                    counter("request_rate", "dynamo_frontend_requests_total")
                continue
            for field, metric in GAUGES.items():
                gauge(field, metric)
            gauge("kv_usage_pct", "vllm:kv_cache_usage_perc", 0.01)
            for field, metric in COUNTERS.items():
                counter(field, metric)
            counter("preemptions", "vllm:num_preemptions_total", per_line=True)
        for fact, value in (spec.get("facts") or {}).items():
            if fact == "max_capture_size" and value is None:
                value = 0  # CUDA graphs off: no batch runs a graph
            if fact in NUMERIC_FACTS and isinstance(value, (int, float)) and not isinstance(value, bool):
                out.append({"series": f'pdwatch_fact{{fact="{fact}",job="{JOB}",instance="{name}"}}',
                            "values": f"{_fmt(float(value))}x{length + 1}"})
    for fact, value in (test.get("facts") or {}).items():
        if fact in NUMERIC_FACTS and isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append({"series": f'pdwatch_fact{{fact="{fact}"}}', "values": f"{_fmt(float(value))}x{length + 1}"})
    return out, step


def _trim(points: list[float | None]) -> list[float | None]:
    """A marker after the last value when a series stops (but not a run of them)."""
    last = max((i for i, p in enumerate(points) if p is not None and not math.isnan(p)), default=-1)
    return points[:last + 2] if last + 1 < len(points) else points


# -- expectations --------------------------------------------------------------------------------
def visible(test: dict[str, Any]) -> dict[str, Any]:
    """The case as Prometheus sees it: numeric facts only, no events."""
    t = copy.deepcopy(test)
    for spec in t.get("endpoints") or []:
        facts = {k: v for k, v in (spec.get("facts") or {}).items()
                 if k in NUMERIC_FACTS and (isinstance(v, (int, float)) and not isinstance(v, bool)
                                            or (k == "max_capture_size" and v is None))}
        spec["facts"] = facts
        spec.pop("events", None)
        for fields in (spec.get("engines") or {}).values():
            for f in NOT_METRICS:
                (fields or {}).pop(f, None)
    t["facts"] = {k: v for k, v in (t.get("facts") or {}).items() if k in NUMERIC_FACTS}
    return t


def derive(rule_id: str, path: Path, exported: set[str], rules: list
           ) -> tuple[list[dict[str, Any]], list[tuple[str | None, str]]]:
    """(promtool tests, notes on what was left out: (the test's interval, or None, note)) of one case file."""
    by_id = {r.finding: r for r in rules}
    as_exported = [replace(r, keep_firing_for=ZERO) for r in rules]
    doc = load_case_file(path)
    tests, notes = [], []
    for test in doc["tests"]:
        name = str(test.get("name", "?"))
        interval = f"{seconds(test.get('interval', '10s')):g}s"
        why = LOG_ONLY.get((rule_id, name))
        if why:
            notes.append((interval, f"{name}: left out: {why}"))
            continue
        made = series_of(test)
        if made is None:
            notes.append((interval, f"{name}: left out: its input is log events or fields Prometheus does not have"))
            continue
        series, step = made
        eval_every = seconds(test.get("eval_every", test.get("interval", "10s")))
        if eval_every != step:
            notes.append((interval, f"{name}: left out: evaluated every {eval_every:g} s, not every interval"))
            continue
        checks = []
        for e in test.get("expect") or []:
            at = seconds(e["at"])
            alertnames = {e["finding"]} if e.get("finding") else {rule_id} | {w["finding"] for w in e.get("firing") or []}
            alertnames &= exported
            if not alertnames:
                continue
            probe = {**visible(test), "expect": [e], "periods": None}
            probe.pop("periods")
            if _run(str(path), as_exported, probe).failures:
                notes.append((interval, f"{name}: at {e['at']}: left out: pdwatch expects it only with the logs' "
                                        f"events or facts, or with keep_firing_for"))
                continue
            for alertname in sorted(alertnames):
                rule = by_id[alertname]
                alerts = []
                for w in e.get("firing") or []:
                    if w["finding"] != alertname:
                        continue
                    role = next((s.get("role", "unknown") for s in test["endpoints"] if s["name"] == w["endpoint"]),
                                "unknown")
                    labels = {"severity": w.get("severity", rule.severity), **{k: str(v) for k, v in rule.labels.items()},
                              "job": JOB, "instance": w["endpoint"]}
                    if role != "unknown":
                        labels["role"] = role
                    if rule.scope == "engine":
                        alerts += [{"exp_labels": {**labels, "engine": str(g)}} for g in w.get("engines") or [0]]
                    else:
                        alerts.append({"exp_labels": labels})
                checks.append({"eval_time": f"{at + step:g}s", "alertname": alertname, "exp_alerts": alerts})
        if checks:
            tests.append({"name": name, "interval": f"{step:g}s", "input_series": series,
                          "alert_rule_test": checks})
    return tests, notes


# -- promtool ------------------------------------------------------------------------------------
_PAIR = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def _label_sets(text: str, key: str) -> list[tuple[int, dict[str, str]]]:
    """Each ``key:{a="..", b=".."}`` in promtool's output (position, pairs), strings read as Go writes them."""
    out = []
    start = 0
    while True:
        i = text.find(key + ":{", start)
        if i < 0:
            return out
        j = i + len(key) + 2
        pairs = {}
        while text[j] != "}":
            m = _PAIR.match(text, j)
            assert m, f"unexpected promtool output at {text[j:j + 80]!r}"
            pairs[m.group(1)] = _go_unquote(m.group(2))
            j = m.end()
            if text.startswith(", ", j):
                j += 2
        out.append((i, pairs))
        start = j


def _go_unquote(s: str) -> str:
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
    while i < len(s):
        ch = s[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = s[i + 1]
        if esc in simple:
            out.append(simple[esc])
            i += 2
        elif esc == "x":
            out.append(chr(int(s[i + 2:i + 4], 16)))
            i += 4
        elif esc in "uU":
            width = 4 if esc == "u" else 8
            out.append(chr(int(s[i + 2:i + 2 + width], 16)))
            i += 2 + width
        else:
            raise ValueError(f"unknown escape in promtool output: \\{esc}")
    return "".join(out)


def run_promtool(promtool: str, test_file: Path) -> subprocess.CompletedProcess:
    return subprocess.run([promtool, "test", "rules", str(test_file)], capture_output=True, text=True, timeout=120)


def fill_annotations(promtool: str, doc: dict[str, Any], folder: Path) -> None:
    """Run promtool without expected annotations and take the ones it rendered (for the same labels)."""
    path = folder / "probe.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    result = run_promtool(promtool, path)
    text = result.stdout + result.stderr
    got: dict[tuple, dict[str, str]] = {}
    for section in text.split("got:[")[1:]:  # what fired (promtool prints exp:[ first)
        section = section.split("exp:[")[0]
        labels = _label_sets(section, "Labels")
        annotations = _label_sets(section, "Annotations")
        for (_, lab), (_, ann) in zip(labels, annotations):
            got[tuple(sorted(lab.items()))] = ann
    for test in doc["tests"]:
        for check in test["alert_rule_test"]:
            for alert in check["exp_alerts"]:
                key = tuple(sorted({**alert["exp_labels"], "alertname": check["alertname"]}.items()))
                if key not in got:
                    raise AssertionError(f"promtool did not fire {key} at {check['eval_time']} "
                                         f"({test['name']}):\n{text[-6000:]}")
                annotations = got[key]
                bad = [v for v in annotations.values() if "error" in v.lower() and "<error" in v.lower()]
                assert not bad, f"a template failed: {bad}"
                alert["exp_annotations"] = annotations


def build(promtool: str) -> dict[str, str]:
    """Every file of tests/data/prometheus, by name -> text."""
    rules = load_rules()
    exported = set(export(rules, ExportOptions()).exported)
    files: dict[str, str] = {}
    intervals: set[str] = set()
    derived: dict[str, tuple[list, list]] = {}
    for rule_id in sorted(exported):
        path = CASES / f"{rule_id}.test.yaml"
        if path.is_file():
            derived[rule_id] = derive(rule_id, path, exported, rules)
            intervals |= {t["interval"] for t in derived[rule_id][0]}
    for interval in sorted(intervals):
        files[rules_file(interval)] = export_text(interval)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, text in files.items():
            (folder / name).write_text(text)
        for rule_id, (tests, notes) in derived.items():
            if not tests:
                continue
            by_interval: dict[str, list] = {}
            for t in tests:
                by_interval.setdefault(t["interval"], []).append(t)
            for interval, group in sorted(by_interval.items()):
                for test in group:  # one at a time: two tests may expect the same labels at the same time
                    fill_annotations(promtool, {"rule_files": [rules_file(interval)],
                                                "evaluation_interval": interval, "tests": [test]}, folder)
                doc = {"rule_files": [rules_file(interval)], "evaluation_interval": interval, "tests": group}
                suffix = "" if len(by_interval) == 1 else f"-{interval}"
                mine = [n for i, n in notes if i == interval or len(by_interval) == 1]
                head = (f"# Derived from tests/rules_builtin/cases/{rule_id}.test.yaml by "
                        f"tests/prometheus/promtool_cases.py: the same scenarios, as the series Prometheus\n"
                        f"# would scrape, against the exported rules (promtool test rules). Do not edit: "
                        f"regenerate with python -m tests.prometheus.promtool_cases.\n"
                        + "".join(f"# {n}\n" for n in mine))
                files[f"{rule_id}{suffix}.promtool.yaml"] = head + yaml.safe_dump(doc, sort_keys=False, width=120,
                                                                                  allow_unicode=True)
    return files


def main() -> int:
    import shutil
    promtool = shutil.which("promtool")
    if not promtool:
        print("promtool is needed (apt-get install prometheus)", file=sys.stderr)
        return 2
    files = build(promtool)
    OUT.mkdir(parents=True, exist_ok=True)
    for old in list(OUT.glob("*.promtool.yaml")) + list(OUT.glob("pdwatch-rules-*.yml")):
        if old.name not in files:
            old.unlink()
    for name, text in files.items():
        (OUT / name).write_text(text)
    print(f"wrote {len(files)} files to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
