from __future__ import annotations

import os
from pathlib import Path

import pytest

from pdwatch.sources import classify_txt, expand_paths
from pdwatch.sources.discovery import classify_first_bytes
from tests.conftest import CPU_LOGS

REAL_SCRAPE = CPU_LOGS / "s2_seqs4.metrics.txt"


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    for name in ("a_prefill_w0.out", "b_decode_w0.out", "c_frontend_0.out", "x.log", "y.err"):
        (d / name).write_bytes(b"INFO something\n")
    (d / "notes.md").write_bytes(b"# notes\n")
    (d / "scrape.txt").write_bytes(b"# HELP vllm:num_requests_running Number of requests\n# TYPE x gauge\n")
    (d / "log.txt").write_bytes(b"plain log line\n")
    (d / "empty.txt").write_bytes(b"")
    (d / "sub").mkdir()
    (d / "sub" / "deep.out").write_bytes(b"not recursive\n")
    return d


def test_directory(logdir: Path):
    logs, metrics = expand_paths([str(logdir)])
    names = [os.path.basename(p) for p in logs]
    assert names == [
        "a_prefill_w0.out",
        "b_decode_w0.out",
        "c_frontend_0.out",
        "empty.txt",  # can't be classified yet: stays a candidate
        "log.txt",
        "x.log",
        "y.err",
    ]
    assert metrics == [str(logdir / "scrape.txt")]
    assert all(p.startswith(str(logdir) + os.sep) for p in logs)


def test_trailing_slash_and_duplicates(logdir: Path):
    logs1, _ = expand_paths([str(logdir)])
    logs2, metrics2 = expand_paths([str(logdir) + "/", str(logdir), str(logdir / "x.log"), str(logdir / "*.log")])
    assert logs1 == logs2
    assert len(metrics2) == 1


def test_glob(logdir: Path, tmp_path: Path):
    logs, metrics = expand_paths([str(logdir / "*_w0.out"), str(logdir / "?.err")])
    assert [os.path.basename(p) for p in logs] == ["a_prefill_w0.out", "b_decode_w0.out", "y.err"]
    assert metrics == []
    # a glob that matches directories expands them (non-recursively)
    logs, _ = expand_paths([str(tmp_path / "lo*")])
    assert str(logdir / "x.log") in logs and str(logdir / "sub" / "deep.out") not in logs
    # a glob matching a metrics scrape classifies it
    logs, metrics = expand_paths([str(logdir / "*.txt")])
    assert metrics == [str(logdir / "scrape.txt")]
    assert [os.path.basename(p) for p in logs] == ["empty.txt", "log.txt"]
    assert expand_paths([str(tmp_path / "nothing*.out")]) == ([], [])


def test_explicit_file_any_extension_missing_and_stdin(logdir: Path, tmp_path: Path):
    missing = str(tmp_path / "later" / "w.out")
    logs, metrics = expand_paths([str(logdir / "notes.md"), missing, "-"])
    assert logs == sorted([str(logdir / "notes.md"), missing, "-"])
    assert metrics == []


def test_explicit_file_with_glob_characters_in_its_name(tmp_path: Path):
    p = tmp_path / "run[1].out"
    p.write_bytes(b"x\n")
    assert expand_paths([str(p)]) == ([str(p)], [])


def test_real_recorded_scrape_is_metrics(tmp_path: Path):
    if not REAL_SCRAPE.exists():
        pytest.skip("real scrape sample not available")
    assert classify_txt(str(REAL_SCRAPE)) == "metrics"
    assert expand_paths([str(REAL_SCRAPE)]) == ([], [str(REAL_SCRAPE)])
    # the same content under a watched directory (copied to tmp only, never into the repo)
    (tmp_path / "scrape.txt").write_bytes(REAL_SCRAPE.read_bytes()[:4096])
    (tmp_path / "w.out").write_bytes(b"x\n")
    assert expand_paths([str(tmp_path)]) == ([str(tmp_path / "w.out")], [str(tmp_path / "scrape.txt")])


@pytest.mark.parametrize(
    "head, kind",
    [
        (b"# ===== scenario=s1 =====\n", "metrics"),
        (b"# HELP x y\n", "metrics"),
        (b"# TYPE x counter\n", "metrics"),
        (b"# HELP", "metrics"),
        (b"INFO 01-01 hello\n", "log"),
        (b"# comment\n", "log"),
        (b"abc", "log"),  # can't become a marker any more
        (b"", None),
        (b"# HE", None),  # still could become "# HELP"
        (b"# ==", None),
    ],
)
def test_classify_first_bytes(head: bytes, kind: str | None):
    assert classify_first_bytes(head) == kind


def test_unlistable_watched_folder_is_said_once_then_readable_again(tmp_path, monkeypatch):
    """Root lists any folder, so the denial is injected; an unreadable folder must not look empty."""
    import os as _os

    from pdwatch.sources import SourceSet

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "w0.log").write_text("hello\n")
    real_scandir = _os.scandir
    denied = {str(logs)}

    def scandir(path="."):
        if str(path) in denied:
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(_os, "scandir", scandir)
    now = [0.0]
    sources = SourceSet([str(logs)], follow=True, clock=lambda: now[0], sleep=lambda s: None, rescan_interval=1.0)
    notices = []
    for _ in range(5):
        now[0] += 2
        notices += [i for i in sources.poll() if getattr(i, "kind", None) in ("error", "opened")]
    assert [n.message for n in notices] == [f"{logs}: cannot list the folder (Permission denied); waiting"]
    denied.clear()
    for _ in range(3):
        now[0] += 2
        notices += [i for i in sources.poll() if getattr(i, "kind", None) in ("error", "opened")]
    assert f"{logs}: folder readable again" in [n.message for n in notices]
    assert str(logs / "w0.log") in sources.sources
    sources.close()


def test_replay_of_an_unlistable_folder_says_why(tmp_path, monkeypatch, capsys):
    import os as _os

    from pdwatch.cli import main

    logs = tmp_path / "logs"
    logs.mkdir()
    real_scandir = _os.scandir
    monkeypatch.setattr(_os, "scandir", lambda p=".": (_ for _ in ()).throw(PermissionError(13, "Permission denied"))
                        if str(p) == str(logs) else real_scandir(p))
    assert main(["parse", str(logs)]) == 2
    assert capsys.readouterr().err.strip() == f"pdwatch: error: {logs}: cannot list the folder (Permission denied)"
