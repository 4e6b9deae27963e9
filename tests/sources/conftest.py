"""Fixtures for the sources tests."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest


@pytest.fixture
def write(tmp_path):
    """write(name, data, mode="ab") -> path (str); appends by default."""

    def _write(name: str, data: bytes, mode: str = "ab") -> str:
        p = tmp_path / name
        with open(p, mode) as f:
            f.write(data)
        return str(p)

    return _write


# A stand-in ``ssh`` first on PATH: it runs the remote command locally (the ssh tests' peer).
FAKE_SSH = r"""#!{python}
import json, os, stat, subprocess, sys
argv = sys.argv[1:]
with open(os.environ["FAKE_SSH_LOG"], "a") as f:
    devnull = stat.S_ISCHR(os.fstat(0).st_mode) and os.fstat(0).st_rdev == os.stat("/dev/null").st_rdev
    f.write(json.dumps({{"argv": argv, "stdin_devnull": devnull}}) + "\n")
i = argv.index("--")  # options (ignored) come before it; then the host and the remote command
host, command = argv[i + 1], argv[i + 2]
if os.environ.get("FAKE_SSH_FAIL"):
    sys.stderr.write(f"{{host}}: Permission denied (publickey).\n")
    sys.exit(255)
drop = os.environ.get("FAKE_SSH_DROP")  # a file "LINES BYTES": relay that much of one tail, then drop
if drop and "pdwatch-tail" in command and os.path.exists(drop):
    lines, extra = map(int, open(drop).read().split())
    os.unlink(drop)
    p = subprocess.Popen(["sh", "-c", command], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    out = sys.stdout.buffer
    out.write(p.stdout.readline())  # the pdwatch-tail header
    for _ in range(lines):
        out.write(p.stdout.readline())
    out.write(p.stdout.read(extra) if extra else b"")
    out.flush()
    p.kill()
    p.wait()
    sys.stderr.write("Connection to host closed by remote host.\n")
    sys.exit(255)
os.execvp("sh", ["sh", "-c", command])
"""


@pytest.fixture
def fake_ssh(tmp_path, monkeypatch):
    """Puts the stand-in first on PATH; returns a helper with its call log."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "ssh"
    script.write_text(FAKE_SSH.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    log = tmp_path / "ssh-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SSH_LOG", str(log))

    class Fake:
        drop_file = tmp_path / "drop"

        @staticmethod
        def calls() -> list[dict]:
            return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

        def drop_after(self, lines: int, extra: int = 0) -> None:
            self.drop_file.write_text(f"{lines} {extra}")
            monkeypatch.setenv("FAKE_SSH_DROP", str(self.drop_file))

    return Fake()
