"""The README's "Your own job" recipes, run as written, on a real capture laid out as a job.

The job is tests/data/real/captures/pd_pair under srt-slurm file names; "node7" is reached
through the stand-in ssh of the sources tests (it runs the remote command here), and
/scratch/job42 is a temporary folder. Nothing else in the commands is changed.
"""

from __future__ import annotations

import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REAL_LOGS, REPO

README = (REPO / "README.md").read_text()
PD_PAIR = REAL_LOGS / "captures" / "pd_pair"


def recipes() -> list[str]:
    block = README.split("<!-- recipes:", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("pdwatch ")]


def topology_yaml() -> str:
    section = README.split("## Your own job", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


@pytest.fixture
def job(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "job42"
    (folder / "logs").mkdir(parents=True)
    shutil.copy(PD_PAIR / "prefill.log", folder / "logs" / "gpu01_prefill_w0.out")
    shutil.copy(PD_PAIR / "decode.log", folder / "logs" / "gpu02_decode_w0.out")
    (folder / "topology.yaml").write_text(topology_yaml())
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "sources"))
    from tests.sources.conftest import FAKE_SSH  # the stand-in ssh, first on PATH

    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ssh").write_text(FAKE_SSH.format(python=sys.executable))
    (bindir / "ssh").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{Path(sys.executable).parent}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_SSH_LOG", str(tmp_path / "ssh.jsonl"))
    return folder


def as_run(line: str, job: Path) -> list[str]:
    line = line.replace("ssh://node7/scratch/job42", f"ssh://node7{job}").replace("/scratch/job42", str(job))
    return shlex.split(line)


def test_the_readme_has_the_three_recipes():
    assert [r.split()[1] for r in recipes()] == ["watch", "replay", "report"]


def test_the_recipes_run_as_written(job: Path, tmp_path: Path):
    watch, replay, report = recipes()
    # watch over ssh: it follows until stopped; the job's endpoints come up, no error
    proc = subprocess.Popen(as_run(watch, job), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(6)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "error" not in err and "Traceback" not in err, err
    assert proc.returncode in (0, 130)

    result = subprocess.run(as_run(replay, job), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert re.search(r"pdwatch: replay finished over .*: \d+ finding\(s\)", result.stderr)

    result = subprocess.run(as_run(report, job), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "job42.md").read_text()
    assert "| prefill_w0 | prefill (topology) | 0 | 2 |" in text  # the topology's GPU count
    assert "| decode_w0 | decode (topology) | 0 | 1 |" in text
    assert "node7:" in text  # read over ssh
    assert "prints no stats" not in text
