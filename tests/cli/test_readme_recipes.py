"""The README's recipes, run as written, and their outputs held to what the README shows.

The job is the real capture tests/data/real/captures/pd_connector_crash (a vLLM 0.32
prefill/decode pair whose decode engine crashed) laid out under srt-slurm file names;
"node7" is reached through the stand-in ssh of the sources tests (it runs the remote command
here), and /scratch/job42 is a temporary folder. Nothing else in the commands is changed.
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
CAPTURE = REAL_LOGS / "captures" / "pd_connector_crash"
_FENCE = re.compile(r"^(`{3,})(\w*)\n(.*?)^\1\n", re.S | re.M)


def recipe(name: str) -> tuple[str, list[str]]:
    """The command after ``<!-- recipe: NAME -->`` and the lines of the output block after it
    (none when the next block is not output)."""
    rest = README.split(f"<!-- recipe: {name} -->\n", 1)[1]
    blocks = list(_FENCE.finditer(rest))[:2]
    assert blocks[0].group(2) == "sh", f"recipe {name}: expected a sh block first"
    [command] = [line for line in blocks[0].group(3).splitlines() if line.startswith("pdwatch ")]
    between = rest[blocks[0].end():blocks[1].start()] if len(blocks) > 1 else ""
    shown = blocks[1].group(3).splitlines() if len(blocks) > 1 and blocks[1].group(2) == "text" \
        and "<!--" not in between else []
    return command, shown


def topology_yaml() -> str:
    section = README.split("## Your own job", 1)[1]
    return section.split("```yaml\n", 1)[1].split("```", 1)[0]


@pytest.fixture
def job(tmp_path: Path, monkeypatch) -> Path:
    folder = tmp_path / "job42"
    (folder / "logs").mkdir(parents=True)
    shutil.copy(CAPTURE / "prefill.log", folder / "logs" / "gpu01_prefill_w0.out")
    shutil.copy(CAPTURE / "decode.log", folder / "logs" / "gpu02_decode_w0.out")
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
    return shlex.split(line.replace("/scratch/job42", str(job)))


def assert_shown(shown: list[str], actual: str, job: Path) -> None:
    """Every line the README shows is in the actual output (a line cut with "..." up to the cut;
    a lone "..." stands for lines left out)."""
    actual = actual.replace(str(job), "/scratch/job42")
    for line in shown:
        if line.strip() == "...":
            continue
        want = line.split(" ...", 1)[0].rstrip() if line.endswith("...") else line
        assert want in actual, f"the README shows {want!r}; the command printed:\n{actual[:4000]}"


def test_the_readme_has_its_recipes():
    assert [recipe(name)[0].split()[1] for name in ("watch", "replay", "report", "gate")] == \
        ["watch", "replay", "report", "report"]


def test_watch_over_ssh_as_written(job: Path, tmp_path: Path):
    command, _ = recipe("watch")
    # Not a terminal: it prints a line per finding; the crash in the logs already there shows at once.
    proc = subprocess.Popen(as_run(command, job), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    time.sleep(8)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert "error" not in err and "Traceback" not in err, err
    assert proc.returncode in (0, 130)
    assert re.search(r"FIRING +critical engine_failure decode_w0 engines 0: decode_w0 engine 0 died", out), out


def test_replay_as_written(job: Path, tmp_path: Path):
    command, shown = recipe("replay")
    result = subprocess.run(as_run(command, job), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert shown, "the README shows the replay's output"
    assert_shown(shown, result.stdout + result.stderr, job)


def test_report_over_ssh_as_written(job: Path, tmp_path: Path):
    command, shown = recipe("report")
    result = subprocess.run(as_run(command, job), cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    text = (tmp_path / "job42.md").read_text()
    assert shown, "the README shows the report's first lines"
    assert_shown(shown, text, job)
    assert "| prefill_w0 | prefill (topology) | 0 | 1 |" in text  # the topology's endpoints, GPUs from the logs
    assert "| decode_w0 | decode (topology) | 0 | 1 |" in text
    assert "prints no stats" not in text


def test_gate_as_written(tmp_path: Path):
    command, shown = recipe("gate")
    (tmp_path / "samples").symlink_to(REPO / "samples")  # run from a copy of the checkout's top
    result = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == shown
    assert '"rule": "kv_exhausted"' in (tmp_path / "kv.json").read_text()


def test_the_first_steps_run_on_the_bundled_samples_as_written(tmp_path: Path):
    """The three first-steps recipes name only what a clone has: samples/ and the demo."""
    assert [recipe(name)[0].split()[:2] for name in ("first-replay", "first-report", "first-watch")] == \
        [["pdwatch", "replay"], ["pdwatch", "report"], ["pdwatch", "demo"]]
    (tmp_path / "samples").symlink_to(REPO / "samples")  # run from a copy of the checkout's top
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"}

    command, _ = recipe("first-report")
    result = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "prefill-bound.html").read_text()
    assert "Bottleneck: prefill" in page and 'class="overview"' in page

    # Not a terminal here: the replay prints its findings as they fire, then the run's verdict.
    command, _ = recipe("first-replay")
    result = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    assert re.search(r"FIRING +critical kv_exhausted decode_w0", result.stdout), result.stdout
    assert result.stderr.splitlines()[-1].startswith("pdwatch: the run: Bottleneck: decode KV cache"), result.stderr
    # first-watch runs in a real terminal: tests/tui/test_tui_terminal_story.py
