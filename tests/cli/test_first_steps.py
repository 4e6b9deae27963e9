"""A newcomer's first minutes (issue 32): bare ``pdwatch`` says the three uses and runnable first
commands; ``watch`` on a folder or glob with nothing in it yet says it waits, and for what;
``demo --dir`` writes a live demo's logs where a watch can follow them, and never into a folder
that holds files."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from pdwatch.cli import FIRST_STEPS, _join_negative_offsets, build_parser
from tests.conftest import REPO


def pdwatch(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", *args], capture_output=True, text=True, timeout=120, **kw)


def test_bare_pdwatch_prints_the_three_uses_first_and_first_steps_that_run():
    done = pdwatch()
    assert done.returncode == 0 and done.stdout == FIRST_STEPS and not done.stderr
    uses = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("  pdwatch ")][:3]
    assert uses == ["watch", "replay", "report"]
    steps = done.stdout.split("First steps", 1)[1]
    commands = [part.strip() for line in steps.splitlines() if line.strip().startswith("pdwatch ")
                for part in line.split(" & ")]
    assert len(commands) >= 3
    for command in commands:  # each parses, and the samples it names are in a clone
        argv = _join_negative_offsets(shlex.split(command)[1:])
        build_parser(argv[0]).parse_args(argv)
        for arg in argv:
            if arg.startswith("samples/"):
                assert (REPO / arg).is_dir(), arg


def _watch_says(target: str, tmp_path: Path) -> str:
    proc = subprocess.Popen([sys.executable, "-m", "pdwatch", "watch", target, "--headless"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    return err


def test_watch_on_an_empty_folder_or_an_unmatched_glob_says_it_waits_and_for_what(tmp_path):
    (tmp_path / "job").mkdir()
    err = _watch_says("job", tmp_path)
    assert "job: no log file in the folder yet; waiting for one to appear (*.out, *.log, *.err, *.txt)" in err, err
    err = _watch_says("job/*_decode_w*.out", tmp_path)
    assert "job/*_decode_w*.out: no file matches yet; waiting for one to appear" in err, err


def test_demo_writes_into_a_new_folder_and_never_into_one_with_files(tmp_path):
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine")
    done = pdwatch("demo", "--dir", str(taken), "--logs-only")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "not empty" in done.stderr
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    done = pdwatch("demo", "--dir", str(tmp_path / "demo-job"), "--logs-only", "--duration", "10s")
    assert done.returncode == 0, done.stderr
    logs = sorted(p.name for p in (tmp_path / "demo-job").iterdir())
    assert any(n.endswith("_decode_w0.out") for n in logs) and any("_prefill_w" in n for n in logs), logs
