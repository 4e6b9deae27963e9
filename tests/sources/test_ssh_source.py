"""ssh:// sources against a stand-in ``ssh`` first on PATH: it runs the remote command locally.

The stand-in records its argv and whether its stdin is /dev/null, can fail like a host refusing
the key (exit 255), and can drop a tail connection once after N lines and B more bytes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pdwatch.model.deployment import name_from_file
from pdwatch.errors import UsageError
from pdwatch.sources import LineBlock, SourceSet
from pdwatch.sources.ssh_spec import parse_ssh, shell_glob

from .helpers import notices, poll_until, texts

@pytest.fixture
def remote(tmp_path):
    d = tmp_path / "remote logs"  # a space: paths are quoted, never split
    d.mkdir()
    return d


def follow(args: list[str]) -> SourceSet:
    return SourceSet(args, follow=True, remote_rescan_interval=0.3)


def test_two_remote_files_arrive_as_two_sources_and_keep_growing(fake_ssh, remote):
    (remote / "n1_prefill_w0.out").write_bytes(b"p1\np2\n")
    (remote / "n1_decode_w0.out").write_bytes(b"d1\n")
    (remote / "other.txt").write_bytes(b"not matched\n")
    pre, dec = f"fakehost:{remote}/n1_prefill_w0.out", f"fakehost:{remote}/n1_decode_w0.out"
    sources = follow([f"ssh://fakehost{remote}/*.out"])
    try:
        items = poll_until(sources.poll, lambda it: len(texts(it, pre)) == 2 and len(texts(it, dec)) == 1, 15)
        assert sorted(sources.sources) == sorted([pre, dec])
        with open(remote / "n1_decode_w0.out", "ab") as f:
            f.write(b"d2\nd3")  # d3 has no newline yet: it waits
        items += poll_until(sources.poll, lambda it: b"d2" in texts(it, dec), 15)
        with open(remote / "n1_decode_w0.out", "ab") as f:
            f.write(b" done\n")
        items += poll_until(sources.poll, lambda it: b"d3 done" in texts(it, dec), 15)
    finally:
        sources.close()
    assert texts(items, pre) == [b"p1", b"p2"]
    assert texts(items, dec) == [b"d1", b"d2", b"d3 done"]
    assert [b.first_line_no for b in items if isinstance(b, LineBlock) and b.source == dec] == [1, 2, 3]
    assert notices(items, "opened", dec) and not notices(items, "down")
    assert (name_from_file(pre), name_from_file(dec)) == (("prefill_w0", "prefill"), ("decode_w0", "decode"))


def test_ssh_never_prompts_and_gets_no_stdin(fake_ssh, remote):
    (remote / "a.log").write_bytes(b"x\n")
    sources = follow([f"ssh://someone@fakehost:2222{remote}/a.log"])
    try:
        poll_until(sources.poll, lambda it: texts(it) == [b"x"], 15)
    finally:
        sources.close()
    calls = fake_ssh.calls()
    assert len(calls) == 2  # the listing, then the tail
    for call in calls:
        argv = call["argv"]
        assert call["stdin_devnull"] and "-n" in argv
        assert "BatchMode=yes" in argv and any(a.startswith("ConnectTimeout=") for a in argv)
        assert argv[argv.index("-p") + 1] == "2222"
        assert argv[argv.index("--") + 1] == "someone@fakehost"
        assert argv[argv.index("--") + 2].startswith("sh -c ")


def test_dropped_connection_resumes_without_loss_or_duplication(fake_ssh, remote):
    log = remote / "w.log"
    log.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 6)))
    fake_ssh.drop_after(3, 4)  # lines 1-3, then "line" of line 4, then the connection drops
    name = f"fakehost:{remote}/w.log"
    sources = follow([f"ssh://fakehost{remote}/w.log"])
    try:
        items = poll_until(sources.poll, lambda it: notices(it, "up"), 20)
        with open(log, "ab") as f:
            f.write(b"line 6\n")
        items += poll_until(sources.poll, lambda it: b"line 6" in texts(it), 15)
        time.sleep(0.3)
        items += sources.poll()
    finally:
        sources.close()
    assert texts(items, name) == [b"line %d" % i for i in range(1, 7)]
    down, up = notices(items, "down"), notices(items, "up")
    assert len(down) == 1 and len(up) == 1
    assert "connection lost (ssh exit 255: Connection to host closed by remote host.); reconnecting" in down[0].message
    assert "resuming at byte 25" in up[0].message  # 3 lines of 7 bytes + "line"
    tails = [c["argv"][-1] for c in fake_ssh.calls() if "pdwatch-tail" in c["argv"][-1]]
    assert "o=0;" in tails[0] and "o=25;" in tails[1] and "tail -c +$((o+1)) -F" in tails[1]


def test_a_remote_file_created_later_is_picked_up(fake_ssh, remote):
    (remote / "a.log").write_bytes(b"a1\n")
    sources = follow([f"ssh://fakehost{remote}/*.log"])
    try:
        items = poll_until(sources.poll, lambda it: texts(it) == [b"a1"], 15)
        (remote / "b.log").write_bytes(b"b1\n")
        items += poll_until(sources.poll, lambda it: b"b1" in texts(it), 15)
    finally:
        sources.close()
    assert texts(items, f"fakehost:{remote}/b.log") == [b"b1"]


def test_a_failing_host_gives_one_notice_and_backs_off(fake_ssh, remote, monkeypatch):
    monkeypatch.setenv("FAKE_SSH_FAIL", "1")
    sources = follow([f"ssh://fakehost{remote}/*.log"])
    items = []
    try:
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline:
            items += sources.poll()
            time.sleep(0.02)
    finally:
        sources.close()
    down = notices(items, "down")
    assert len(down) == 1 and len(notices(items)) == 1
    assert down[0].message == (f"fakehost:{remote}/*.log: cannot list the remote files (ssh exit 255: "
                               f"fakehost: Permission denied (publickey).); retrying, backing off up to 30 s")
    assert 2 <= len(fake_ssh.calls()) <= 4  # tried at 0, 1 and 3 s: not a spin
    assert sources.sources_up == {f"fakehost:{remote}/*.log": False}


def test_replay_reads_remote_files_to_their_end(fake_ssh, remote):
    (remote / "a.log").write_bytes(b"a1\na2 no newline")
    (remote / "b.log").write_bytes(b"b1\n")
    items = list(SourceSet([f"ssh://fakehost{remote}/*.log"], follow=False).blocks())
    assert texts(items, f"fakehost:{remote}/a.log") == [b"a1", b"a2 no newline"]
    assert texts(items, f"fakehost:{remote}/b.log") == [b"b1"]
    assert all("-F" not in c["argv"][-1] for c in fake_ssh.calls())


def test_replay_with_a_failing_host_ends_with_an_error(fake_ssh, remote, monkeypatch):
    monkeypatch.setenv("FAKE_SSH_FAIL", "1")
    items = list(SourceSet([f"ssh://fakehost{remote}/*.log"], follow=False).blocks())
    assert [n.kind for n in notices(items)] == ["error"]
    assert len(fake_ssh.calls()) == 1


def test_parse_cli_reads_a_remote_log(fake_ssh, remote):
    stats = (b"(APIServer pid=9) INFO 11-29 09:01:38 [loggers.py:335] Engine 001: Avg prompt throughput: 2444.7 "
             b"tokens/s, Avg generation throughput: 2194.7 tokens/s, Running: 4 reqs, Waiting: 44 reqs, "
             b"GPU KV cache usage: 0.2%, Prefix cache hit rate: 0.0%\n")
    (remote / "n1_decode_w0.out").write_bytes(stats)
    result = subprocess.run([sys.executable, "-m", "pdwatch", "parse", "--year", "2026",
                             f"ssh://fakehost{remote}/*.out"], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr
    event = json.loads(result.stdout.decode().splitlines()[0])
    assert event["kind"] == "stats" and event["source"] == f"fakehost:{remote}/n1_decode_w0.out"
    assert event["running"] == 4


def test_bad_ssh_arguments_are_one_line_errors():
    for arg, problem in (("ssh://host", "no remote path"), ("ssh://host/", "no remote path"),
                         ("ssh://-oProxyCommand=x/a", "bad user, host or port")):
        with pytest.raises(UsageError, match=problem):
            SourceSet([arg], follow=True)


def test_remote_paths_are_data():
    assert shell_glob("/logs/$(touch x)*_w[0-3].out") == "'/logs/$(touch x)'*_w[0-3].out"
    assert shell_glob("/a;b/[$(x)]") == "'/a;b/[$(x)]'"
    spec = parse_ssh("ssh://u@h/~/logs/*.out")
    assert (spec.destination, spec.path, spec.name) == ("u@h", "logs/*.out", "h:~/logs/*.out")
