"""report and replay over ssh://: the remote files read once, the same result as the same files read here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from tests.conftest import REAL_LOGS

PD_PAIR = REAL_LOGS / "captures" / "pd_pair"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, text=True, timeout=180)


def comparable(report: dict) -> dict:
    return {"endpoints": [(e["name"], e["role"], e["engines"], e["gpus"]) for e in report["deployment"]["endpoints"]],
            "findings": [(f["rule"], f["endpoint"], f["engines"], f["start"], f["end"], f["summary"])
                         for f in report["findings"]],
            "headline": report["summary"]["total_tps"]}


def test_report_over_ssh_gives_what_the_same_files_give_here(fake_ssh, tmp_path):
    logs = tmp_path / "job logs"
    logs.mkdir()
    for name in ("prefill.log", "decode.log"):
        shutil.copy(PD_PAIR / name, logs / name)
    local = run("report", str(logs), "--format", "json")
    remote = run("report", f"ssh://fakehost{logs}/*.log", "--format", "json")
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    assert comparable(json.loads(remote.stdout)) == comparable(json.loads(local.stdout))
    assert json.loads(remote.stdout)["deployment"]["endpoints"][0]["sources"][0].startswith("fakehost:")
    assert any("pdwatch-tail" in " ".join(c["argv"]) or "ls" in " ".join(c["argv"]) for c in fake_ssh.calls())


def test_replay_over_ssh_plays_the_remote_files(fake_ssh, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(REAL_LOGS / "captures" / "kv_pressure" / "server.log", logs / "server.log")
    out = run("replay", f"ssh://fakehost{logs}/*.log", "--speed", "max", "--headless", "--jsonl")
    assert out.returncode == 0, out.stderr
    rules = {json.loads(line)["rule"] for line in out.stdout.splitlines()}
    assert "kv_exhausted" in rules


def test_a_remote_glob_that_matches_nothing_is_one_line(fake_ssh, tmp_path):
    out = run("report", f"ssh://fakehost{tmp_path}/nothing-*.log")
    assert out.returncode == 2
    assert out.stderr.splitlines() == [f"pdwatch: fakehost:{tmp_path}/nothing-*.log: no remote file matches"]


def test_reading_remote_files_once_says_how_far_it_is(fake_ssh, tmp_path):
    from pdwatch.sources import SourceSet

    logs = tmp_path / "logs"
    logs.mkdir()
    for name in ("prefill.log", "decode.log"):
        shutil.copy(PD_PAIR / name, logs / name)
    told: list[str] = []
    sources = SourceSet([f"ssh://fakehost{logs}/*.log"], follow=False)
    data = sum(len(b.data) for b in sources.blocks(progress=told.append, every_s=0.0) if hasattr(b, "data"))
    assert data == sum((logs / n).stat().st_size for n in ("prefill.log", "decode.log"))  # every byte, once
    assert told and told[-1].startswith("reading 2 remote file(s) over ssh: ")
    assert told[-1].endswith(f"{data / 1e6:.1f} MB so far")
