"""pdwatch's rules in Prometheus (promtool from Debian's prometheus package), and ``pdwatch rules test``.

The export must pass ``promtool check rules``; the promtool tests derived from pdwatch's own
rule cases (tests/data/prometheus, see promtool_cases.py) must pass against it, so a scenario
that fires a finding in pdwatch fires the same alert in Prometheus and a near miss stays
silent in both. ``pdwatch rules test`` runs pdwatch's cases like promtool runs its own.
"""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from pdwatch.cli import main

from . import promtool_cases
from .prom_helpers import NEEDS_PROMETHEUS, PROMTOOL

DATA = promtool_cases.OUT
needs_promtool = pytest.mark.skipif(not PROMTOOL, reason=NEEDS_PROMETHEUS)
REQUIRED = ("kv_exhausted", "prefill_bound", "decode_bound", "seq_cap_bound", "stats_missing", "dp_imbalance",
            "cudagraph_overflow")


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def promtool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120)


def _promtool_case(series: dict[str, str], **checks) -> str:
    """A promtool test file of the exported ``rules.yml`` at a 10 s interval: the input series, then ``checks``."""
    return yaml.safe_dump({"rule_files": ["rules.yml"], "evaluation_interval": "10s", "tests": [
        {"interval": "10s", "input_series": [{"series": k, "values": v} for k, v in series.items()], **checks}]},
        sort_keys=False)


# -- export ----------------------------------------------------------------------------------------------
@needs_promtool
@pytest.mark.parametrize("options", [
    [],
    ["--interval", "2s"],
    ["--interval", "1m", "--fact", "max_capture_size=512", "--fact", 'max_num_seqs{job="vllm-decode"}=256',
     "--fact", 'num_speculative_tokens{job="d",instance="n7:8000"}=3', "--fact", "concurrency=4096",
     "--match", '{job=~"vllm.*"}', "--deployment-label", "cluster"],
], ids=["default", "2s", "facts-match-deployment"])
def test_the_export_passes_promtool_check(tmp_path, capsys, options):
    target = tmp_path / "pdwatch.rules.yml"
    code, out, err = run(["rules", "export", "--format", "prometheus", "-o", str(target), *options], capsys)
    assert code == 0, err
    check = promtool("check", "rules", str(target))
    assert check.returncode == 0, check.stdout + check.stderr
    doc = yaml.safe_load(target.read_text())
    alerts = {r["alert"]: r for g in doc["groups"] for r in g["rules"] if "alert" in r}
    assert set(REQUIRED) <= set(alerts), sorted(alerts)
    for rule in alerts.values():  # the finding's id, its severity, and the words of the finding with the fix
        assert rule["labels"]["severity"] in ("info", "warning", "critical")
        assert rule["annotations"]["summary"] and "Fix: " in rule["annotations"]["description"]
    assert "pdwatch: not exported: engine_failure: it reads no metric, only log events" in err
    assert "pdwatch: not exported: lint_async_scheduling_off: it reads no metric, only start-up facts" in err


@needs_promtool
def test_the_prefix_cache_hit_rates_are_recorded_as_pdwatch_reads_them(tmp_path, capsys):
    """``pdwatch:prefix_hit_pct`` is the interval's hits over its queries, as a scrape pdwatch makes
    gives it (``parsers.exposition``); the older gpu_ names serve when the newer are missing; an
    interval in which nothing was looked up has no value."""
    code, _, err = run(["rules", "export", "--format", "prometheus", "-o", str(tmp_path / "rules.yml")], capsys)
    assert code == 0, err
    new = 'job="vllm",instance="p0:8000",role="prefill",engine="0",model_name="m"'
    old = 'job="vllm",instance="p1:8000",role="prefill",engine="0",model_name="m"'
    def samples(name: str, *values: float) -> dict:
        return {"expr": name, "exp_samples": [
            {"labels": f'{name}{{job="vllm",instance="{instance}",role="prefill",engine="0"}}', "value": value}
            for instance, value in zip(("p0:8000", "p1:8000"), values)]}

    (tmp_path / "t.yml").write_text(_promtool_case({
        f"vllm:prefix_cache_queries_total{{{new}}}": "0 1000 2000 2000",
        f"vllm:prefix_cache_hits_total{{{new}}}": "0 250 1000 1000",
        f"vllm:external_prefix_cache_queries_total{{{new}}}": "0 400 800 800",
        f"vllm:external_prefix_cache_hits_total{{{new}}}": "0 100 100 100",
        f"vllm:gpu_prefix_cache_queries_total{{{old}}}": "0 500 1000 1000",
        f"vllm:gpu_prefix_cache_hits_total{{{old}}}": "0 0 500 500",
    }, promql_expr_test=[
        {"eval_time": "10s", **samples("pdwatch:prefix_hit_pct", 25, 0)},
        {"eval_time": "20s", **samples("pdwatch:prefix_hit_pct", 75, 100)},
        {"eval_time": "20s", **samples("pdwatch:external_prefix_hit_pct", 0)},
        {"eval_time": "30s", "expr": "pdwatch:prefix_hit_pct", "exp_samples": []},
    ]))
    result = promtool("test", "rules", str(tmp_path / "t.yml"))
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_export_says_where_the_capture_size_comes_from(capsys):
    code, out, _ = run(["rules", "export", "--format", "prometheus", "--fact", 'max_capture_size{job="dec"}=512'],
                       capsys)
    assert code == 0
    doc = yaml.safe_load(out)
    [alert] = [r for g in doc["groups"] for r in g["rules"] if r.get("alert") == "cudagraph_overflow"]
    facts = alert["annotations"]["facts"]
    assert 'max_capture_size (given at export: 512 for {job="dec"})' in facts
    assert "not metrics" in facts and "min(2 x max_num_seqs, 512)" in facts
    records = [r for g in doc["groups"] for r in g["rules"] if r.get("record") == "pdwatch_fact"]
    assert records == [{"record": "pdwatch_fact", "expr": "vector(512)",
                        "labels": {"fact": "max_capture_size", "job": "dec"}}]


@needs_promtool
def test_facts_given_at_export_make_a_rule_fire(tmp_path, capsys):
    """cudagraph_overflow with its capture size from --fact alone (no pdwatch_fact series scraped)."""
    rules = tmp_path / "rules.yml"
    code, _, err = run(["rules", "export", "--format", "prometheus", "-o", str(rules), "--fact",
                        'max_capture_size{job="vllm"}=512', "--fact", "max_num_seqs=1024"], capsys)
    assert code == 0, err
    labels = 'job="vllm",instance="d0:8000",role="decode",engine="0",model_name="m"'
    (tmp_path / "t.yml").write_text(_promtool_case({
        f"vllm:num_requests_running{{{labels}}}": "_ 600x10",
        f"vllm:num_requests_waiting{{{labels}}}": "_ 0x10",
        f"vllm:kv_cache_usage_perc{{{labels}}}": "_ 0.5x10",
    }, alert_rule_test=[{"eval_time": "20s", "alertname": "cudagraph_overflow", "exp_alerts": []}]))
    result = promtool("test", "rules", str(tmp_path / "t.yml"))
    assert result.returncode == 0, result.stdout  # pending at 20 s: above 512 since 10 s, held for 2 samples
    doc = yaml.safe_load((tmp_path / "t.yml").read_text())
    doc["tests"][0]["alert_rule_test"] = [{"eval_time": "30s", "alertname": "cudagraph_overflow", "exp_alerts": [
        {"exp_labels": {"severity": "warning", "bottleneck": "cudagraph", "job": "vllm", "instance": "d0:8000",
                        "role": "decode", "engine": "0"}}]}]
    (tmp_path / "t.yml").write_text(yaml.safe_dump(doc))
    result = promtool("test", "rules", str(tmp_path / "t.yml"))
    said = result.stdout + result.stderr  # it fires; the annotations were not given, so promtool shows them
    assert "FAILED" in said and 'summary="d0:8000 engine 0: decode steps of up to 600 tokens exceed the ' \
        'largest captured CUDA graph (512)' in said, said


def test_facts_from_the_logs_go_to_the_targets_the_topology_names(tmp_path, capsys):
    topology = tmp_path / "topology.yaml"
    topology.write_text(textwrap.dedent(f"""\
        endpoints:
        - name: server
          role: decode
          globs: ["{KV_LOG}"]
          prom: '{{job="vllm", instance="127.0.0.1:51867"}}'
        """))
    code, out, err = run(["rules", "export", "--format", "prometheus", "--facts-from", str(KV_LOG),
                          "--topology-file", str(topology)], capsys)
    assert code == 0, err
    assert "pdwatch: facts of server from its logs: " in err and "max_num_seqs=32" in err
    records = {r["labels"]["fact"]: r for g in yaml.safe_load(out)["groups"] for r in g["rules"]
               if r.get("record") == "pdwatch_fact"}
    assert records["max_num_seqs"] == {"record": "pdwatch_fact", "expr": "vector(32)", "labels": {
        "fact": "max_num_seqs", "job": "vllm", "instance": "127.0.0.1:51867"}}
    assert records["max_capture_size"]["expr"] == "vector(0)"  # vLLM on CPU: no CUDA graphs
    code, _, err = run(["rules", "export", "--format", "prometheus", "--facts-from", str(KV_LOG)], capsys)
    assert code == 2 and "--facts-from needs --topology-file" in err


@pytest.mark.parametrize("args, says", [
    (["--fact", "max_capture_size"], "expected NAME=VALUE"),
    (["--fact", "ssm_conv_layout=DS"], "is not a numeric fact"),
    (["--fact", "max_num_seqs=many"], "is not a number"),
    (["--fact", 'max_num_seqs{pod="x"}=4'], 'only job="..." and instance="..."'),
    (["--match", "job=vllm"], "--match: "),
    (["--interval", "often"], "--interval often"),
    (["--deployment-label", "job"], "--deployment-label 'job'"),
])
def test_bad_export_arguments_are_one_line(capsys, args, says):
    code, out, err = run(["rules", "export", "--format", "prometheus", *args], capsys)
    assert code == 2 and not out
    assert err.count("\n") == 1 and err.startswith("pdwatch: error: ") and says in err, err


@needs_promtool
def test_a_users_rule_exports_too(tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text(textwrap.dedent("""\
        groups:
        - name: mine
          rules:
          - finding: decode_queue
            scope: endpoint
            when: role() == "decode"
            expr: avg(waiting, 3 samples) > 5 and not (max(kv_usage_pct, 3 samples) >= 90)
            severity: warning
            summary: "{{ endpoint }}: {{ avg(waiting, 3 samples) }} waiting"
            recommendation: "Add decode engines."
        """))
    target = tmp_path / "out.yml"
    code, _, err = run(["rules", "export", "--format", "prometheus", "--rules", str(mine), "-o", str(target)], capsys)
    assert code == 0, err
    assert promtool("check", "rules", str(target)).returncode == 0
    [rule] = [r for g in yaml.safe_load(target.read_text())["groups"] for r in g["rules"]
              if r.get("record") == "pdwatch:condition:decode_queue"]
    assert "(max by (job, instance, role) (max_over_time(pdwatch:kv_usage_pct[29s999ms]))) < 90" in rule["expr"]  # not (x >= 90): x < 90


# -- the derived promtool tests ------------------------------------------------------------------------------
@needs_promtool
def test_promtool_passes_the_tests_derived_from_pdwatchs_cases():
    files = sorted(DATA.glob("*.promtool.yaml"))
    assert files
    result = promtool("test", "rules", *map(str, files))
    assert result.returncode == 0, (result.stdout + result.stderr)[-6000:]
    assert result.stdout.count("SUCCESS") == len(files)


def test_every_required_rule_fires_and_stays_silent_in_them():
    checks: dict[str, list[list]] = {}
    for path in DATA.glob("*.promtool.yaml"):
        for test in yaml.safe_load(path.read_text())["tests"]:
            for check in test["alert_rule_test"]:
                checks.setdefault(check["alertname"], []).append(check["exp_alerts"])
    for rule in REQUIRED:
        assert any(checks.get(rule, [])), f"{rule}: no promtool test where it fires"
        assert any(not a for a in checks.get(rule, [])), f"{rule}: no promtool test where it must not fire"


@needs_promtool
def test_the_shipped_files_are_what_the_generator_writes_today():
    files = promtool_cases.build(PROMTOOL)
    shipped = {p.name: p.read_text() for p in [*DATA.glob("*.promtool.yaml"), *DATA.glob("pdwatch-rules-*.yml")]}
    assert set(files) == set(shipped), "regenerate: python -m tests.prometheus.promtool_cases"
    for name, text in files.items():
        assert text == shipped[name], f"{name} is stale: python -m tests.prometheus.promtool_cases"


# -- pdwatch rules test ---------------------------------------------------------------------------------------
CASES = Path(__file__).resolve().parents[1] / "rules_builtin" / "cases"
KV_LOG = Path(__file__).resolve().parents[1] / "data" / "real" / "captures" / "kv_pressure" / "server.log"


def test_rules_test_passes_pdwatchs_own_cases(capsys):
    paths = [str(CASES / f"{r}.test.yaml") for r in REQUIRED]
    code, out, err = run(["rules", "test", *paths], capsys)
    assert code == 0, out + err
    assert out.strip().splitlines()[-1].endswith("case(s) passed")
    assert "FAIL" not in out


def test_rules_test_prints_a_diff_and_exits_1(tmp_path, capsys):
    case = tmp_path / "wrong.yaml"
    case.write_text(textwrap.dedent("""\
        rule_files: [builtin]
        tests:
        - name: expects the wrong engine and a finding that never fires
          interval: 10s
          endpoints:
          - name: decode_w0
            role: decode
            facts: {max_num_seqs: 1024}
            engines:
              0: {running: '580x11', waiting: '40x11', kv_usage_pct: '99x11'}
          expect:
          - at: 80s
            finding: kv_exhausted
            firing: [{finding: kv_exhausted, endpoint: decode_w0, engines: [1]}]
          - at: 80s
            finding: seq_cap_bound
            firing: [{finding: seq_cap_bound, endpoint: decode_w0}]
        - name: must not fire
          interval: 10s
          endpoints:
          - name: decode_w0
            engines:
              0: {running: '580x11', waiting: '40x11', kv_usage_pct: '99x11'}
          expect:
          - {at: 80s, finding: kv_exhausted, firing: []}
        """))
    code, out, err = run(["rules", "test", str(case)], capsys)
    assert code == 1, out + err
    assert f"FAIL  {case}: expects the wrong engine and a finding that never fires" in out
    assert "    - expected  kv_exhausted endpoint=decode_w0 engines=[1]" in out
    assert "    + fired     kv_exhausted endpoint=decode_w0 engines=[0] severity=critical" in out
    assert "    - expected  seq_cap_bound endpoint=decode_w0" in out and "(nothing fired there)" in out
    assert f"FAIL  {case}: must not fire" in out  # an empty expectation: nothing may fire
    assert out.strip().endswith("0 of 2 case(s) passed, 2 failed")


def test_rules_test_reads_log_input_and_user_rules(tmp_path, capsys):
    """A real vLLM log as the input, a rule of the user's given with --rules."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(textwrap.dedent("""\
        groups:
        - name: mine
          rules:
          - finding: long_queue
            scope: engine
            expr: avg(waiting, 3 samples) >= 20
            severity: info
            summary: "{{ endpoint }}: {{ avg(waiting, 3 samples) }} waiting"
        """))
    case = tmp_path / "log.yaml"
    case.write_text(textwrap.dedent(f"""\
        tests:
        - name: the kv_pressure server's log
          start: 2026-12-02T03:16:31Z     # its first stats line (without start: its first line, 03:14:46)
          endpoints:
          - name: server
            log_file: {KV_LOG}
          expect:
          - at: 10s
            finding: long_queue
            firing: []
          - at: 20s
            finding: long_queue
            firing: [{{finding: long_queue, endpoint: server, engines: [0]}}]
          - at: 30s
            finding: kv_exhausted
            firing: [{{finding: kv_exhausted, endpoint: server, engines: [0], severity: critical}}]
        """))
    code, out, err = run(["rules", "test", str(case), "--rules", str(mine)], capsys)
    assert code == 0, out + err
    assert "1 of 1 case(s) passed" in out
    code, out, err = run(["rules", "test", str(case)], capsys)  # without --rules: the built-ins only
    assert code == 1 and "- expected  long_queue endpoint=server" in out


def test_rules_test_refuses_what_it_cannot_run(tmp_path, capsys):
    code, _, err = run(["rules", "test", str(tmp_path / "none.yaml")], capsys)
    assert code == 2 and "no such case file" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("tests: 3\n")
    code, _, err = run(["rules", "test", str(bad)], capsys)
    assert code == 2 and err.startswith("pdwatch: error: ") and err.count("\n") == 1
