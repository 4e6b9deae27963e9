"""``pdwatch report`` as a user runs it: JSON contract, exit codes, safe output files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CPU_LOGS

REPO = Path(__file__).resolve().parents[2]


def pdwatch(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, timeout=120, cwd=cwd)


@pytest.fixture(scope="module")
def s2_report() -> dict:
    result = pdwatch("report", str(CPU_LOGS / "s2_seqs4.log"), "--format", "json", "--year", "2026")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_json_contract_keys(s2_report):
    endpoint = s2_report["deployment"]["endpoints"][0]
    assert {"name", "role", "engines", "gpus", "gpus_inferred", "sources"} <= set(endpoint)
    assert isinstance(endpoint["engines"], list) and isinstance(endpoint["gpus"], int)
    assert isinstance(endpoint["gpus_inferred"], bool)
    summary = s2_report["summary"]
    assert {"total_tps", "tps_per_gpu", "prompt_tps", "gen_tps", "window"} <= set(summary)
    assert set(summary["window"]) == {"start", "end"}
    finding = s2_report["findings"][0]
    assert {"rule", "severity", "endpoint", "engines", "start", "end", "summary", "evidence",
            "recommendation"} <= set(finding)
    assert finding["severity"] in {"info", "warning", "critical"}
    assert {"source", "line_no", "text"} <= set(finding["evidence"][0])


def test_seq_cap_bound_on_s2_with_the_real_line_as_evidence(s2_report):
    (finding,) = [f for f in s2_report["findings"] if f["rule"] == "seq_cap_bound"]
    assert finding["endpoint"] == "s2_seqs4" and finding["engines"] == [0]
    assert "09:01:4" in finding["start"]  # the high phase: 09:01:37-09:01:51
    line = finding["evidence"][0]
    text = (CPU_LOGS / "s2_seqs4.log").read_text().split("\n")[line["line_no"] - 1]
    assert line["text"] in text and "Waiting: 44 reqs" in line["text"]


def test_fail_on_and_markdown_default(tmp_path):
    log = str(CPU_LOGS / "s2_seqs4.log")
    assert pdwatch("report", log, "--fail-on", "warning").returncode == 1  # seq_cap_bound is a warning
    result = pdwatch("report", log, "--fail-on", "critical")
    assert result.returncode == 0 and result.stdout.startswith(b"# pdwatch report")


def test_output_is_atomic_and_never_overwrites_an_input(tmp_path):
    log = tmp_path / "n1_decode_w0.out"
    log.write_bytes((CPU_LOGS / "s2_seqs4.log").read_bytes())
    original = log.read_bytes()
    result = pdwatch("report", str(log), "-o", str(log))
    assert result.returncode == 2 and b"refusing to overwrite" in result.stderr
    assert log.read_bytes() == original
    out = tmp_path / "report.json"
    assert pdwatch("report", str(log), "--format", "json", "-o", str(out)).returncode in (0, 1)
    assert json.loads(out.read_text())["deployment"]["endpoints"][0]["role"] == "decode"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report.json.")]


def test_bad_inputs_are_one_line_errors(tmp_path):
    bad_rules = tmp_path / "rules.yaml"
    bad_rules.write_text("groups:\n- name: g\n  rules:\n  - finding: x\n    expr: avg(kv_usage_pct 3 samples)\n")
    result = pdwatch("report", "x.log", "--rules", str(bad_rules))
    assert result.returncode == 2 and str(bad_rules).encode() + b":5" in result.stderr
    topo = tmp_path / "topo.yaml"
    topo.write_text("endpoints:\n  - {name: p0, role: prefil, globs: ['*p*']}\n")
    result = pdwatch("report", "x.log", "--topology-file", str(topo))
    assert result.returncode == 2 and b"'role' must be one of" in result.stderr
    result = pdwatch("report", str(tmp_path / "missing.log"))
    assert result.returncode == 2 and b"missing.log: no such file" in result.stderr
    assert result.stdout == b"" and len(result.stderr.splitlines()) == 1  # no empty report around the error
    out = tmp_path / "report.md"
    result = pdwatch("report", str(tmp_path / "missing.log"), "-o", str(out))
    assert result.returncode == 2 and not out.exists()
    # One input readable: the report is written, with the other's notice in it, and the status says so.
    good = tmp_path / "good.log"
    good.write_text("(APIServer pid=9) INFO 11-29 09:01:38 [loggers.py:335] Engine 000: Avg prompt throughput: 5.0 "
                    "tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 3 reqs, Waiting: 0 reqs, GPU KV "
                    "cache usage: 25.0%, Prefix cache hit rate: 0.0%\n")
    result = pdwatch("report", str(good), str(tmp_path / "missing.log"), "--year", "2026")
    assert result.returncode == 2 and b"# pdwatch report" in result.stdout and b"missing.log: no such file" in result.stdout


def test_topology_file_and_role_flags(tmp_path):
    a, b = tmp_path / "server-a.log", tmp_path / "server-b.log"
    a.write_bytes((CPU_LOGS / "s10b_pd_example_connector_short_prompts.prefill.log").read_bytes())
    b.write_bytes((CPU_LOGS / "s10b_pd_example_connector_short_prompts.decode.log").read_bytes())
    report = json.loads(pdwatch("report", str(a), str(b), "--format", "json", "--prefill", "*-a.log",
                                "--decode", "*-b.log").stdout)
    roles = {e["name"]: (e["role"], e["role_from"]) for e in report["deployment"]["endpoints"]}
    assert roles == {"server-a": ("prefill", "flag"), "server-b": ("decode", "flag")}
    topo = tmp_path / "topo.yaml"
    topo.write_text(f"endpoints:\n  - {{name: P, role: prefill, globs: ['{a}'], gpus: 4}}\n"
                    f"  - {{name: D, role: decode, globs: ['*-b.log']}}\n")
    report = json.loads(pdwatch("report", str(a), str(b), "--format", "json", "--topology-file", str(topo)).stdout)
    endpoints = {e["name"]: e for e in report["deployment"]["endpoints"]}
    assert endpoints["P"]["gpus"] == 4 and not endpoints["P"]["gpus_inferred"] and endpoints["D"]["role"] == "decode"
    assert report["summary"]["gpus"] == 5


def test_rules_command_lists_builtins():
    result = pdwatch("rules", "--format", "json")
    assert result.returncode == 0
    assert "seq_cap_bound" in {r["finding"] for r in json.loads(result.stdout)}


def test_a_folder_without_logs_is_an_error(tmp_path):
    (tmp_path / "notes.md").write_text("not a log")
    for command in ("report", "parse"):
        result = pdwatch(command, str(tmp_path))
        assert result.returncode == 2 and b"no log files in" in result.stderr


def test_a_bad_topology_entry_is_named_by_file_and_line(tmp_path, capsys):
    from pdwatch.cli import main as cli_main

    topology = tmp_path / "topology.yaml"
    topology.write_text("endpoints:\n  - name: a\n    role: prefill\n    globs: ['x']\n"
                        "  - name: b\n    role: decoder\n    globs: ['y']\n")
    assert cli_main(["report", "--topology-file", str(topology), str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (f"pdwatch: error: {topology}:5: endpoints[1]: 'role' must be one of "
                                               "prefill, decode, aggregated, frontend, unknown")


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_a_report_file_gets_the_mode_the_umask_gives(tmp_path, umask, mode):
    out = tmp_path / "report.md"
    result = subprocess.run(["sh", "-c", f"umask {umask:03o} && exec \"$0\" -m pdwatch report \"$1\" -o \"$2\"",
                             sys.executable, str(CPU_LOGS / "s2_seqs4.log"), str(out)], capture_output=True)
    assert result.returncode == 0, result.stderr
    assert out.stat().st_mode & 0o777 == mode


def test_a_report_into_a_pipe_or_device_writes_into_it_and_leaves_it_in_place(tmp_path):
    """`-o /dev/stdout`, `-o /dev/null`, a named pipe: written into, never replaced by a file (the
    atomic rename over /dev/null once left a regular file in its place, as root)."""
    import os
    import stat
    import threading

    from pdwatch.views.report.output import write_atomically

    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    write_atomically(str(fifo), "# pdwatch report\n", [])
    reader.join(10)
    assert got == ["# pdwatch report\n"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["report.pipe"]  # no temp file left beside it
    write_atomically("/dev/null", "# pdwatch report\n", [])
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
