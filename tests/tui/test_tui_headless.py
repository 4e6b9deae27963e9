"""Headless ``pdwatch watch`` / ``pdwatch replay``: one line per finding as it fires and clears."""

from __future__ import annotations

import io
import json
import math
import re
import threading
import time
from pathlib import Path

import pytest

from pdwatch.cli import main
from pdwatch.commands.watch import run_headless
from pdwatch.session.live import LiveSession
from pdwatch.session.times import parse_speed, parse_start

REPO = Path(__file__).resolve().parents[2]
PREFILL_BOUND = REPO / "samples" / "prefill-bound"
TS = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z?)")


def test_replay_max_headless_jsonl(capsys):
    assert main(["replay", str(PREFILL_BOUND), "--speed", "max", "--headless", "--jsonl"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    firing = [x for x in lines if x["rule"] == "prefill_bound" and x["state"] == "firing"]
    assert sorted(x["endpoint"] for x in firing) == ["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"]
    for x in lines:
        assert set(x) == {"rule", "severity", "endpoint", "engines", "start", "end", "summary",
                          "recommendation", "state", "at"}
        assert x["state"] in {"firing", "resolved"}
    for x in firing:
        assert x["engines"] == [0, 1] and x["at"] == x["start"] and x["end"] is None
        assert x["at"].startswith("2026-05-29T14:0")
    forbidden = {"kv_exhausted", "cudagraph_overflow", "stats_missing", "kv_transfer_errors", "engine_failure",
                 "dp_imbalance"}
    assert not forbidden & {x["rule"] for x in lines}


def test_replay_text_lines_not_a_tty(capsys):
    # stdout captured (not a TTY): headless without being asked
    assert main(["replay", str(PREFILL_BOUND), "--speed", "max"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum("FIRING" in line and "prefill_bound" in line for line in out) == 4


def test_replay_same_starts_as_report():
    from pdwatch.session.analysis import analyse
    expected = {(f.rule, f.endpoint, f.start) for f in analyse([str(PREFILL_BOUND)]).findings}
    session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=math.inf)
    out = io.StringIO()
    run_headless(session, out, jsonl=True)
    got = {(x["rule"], x["endpoint"], x["start"]) for x in map(json.loads, out.getvalue().splitlines())}
    assert got == {(r, e, s.isoformat()) for r, e, s in expected}


def test_replay_clock_hides_the_future():
    session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=10.0, start=parse_start("2026-05-29T13:59:00Z"))
    while session.ingest(500):
        pass
    snap = session.tick(0.0)
    assert snap.clock.isoformat().startswith("2026-05-29T13:59:00")
    assert not snap.findings and not snap.done
    for row in snap.endpoints:
        assert row.last_seen is None or row.last_seen <= snap.clock
    snap = session.tick(1.0)  # 1 s wall at 10x
    assert snap.clock.isoformat().startswith("2026-05-29T13:59:10")
    session.toggle_pause()
    assert session.tick(5.0).clock == snap.clock
    session.toggle_pause()
    session.speed = math.inf
    snap = session.tick(6.0)
    assert snap.done and len(snap.findings) == 4
    assert {r.role for r in snap.endpoints} >= {"prefill", "decode"}
    assert snap.headline.gpus == 16 and snap.headline.total_tps > 300_000


def test_speed_and_start_parsing():
    assert parse_speed("10x") == 10 and parse_speed("0.5") == 0.5 and math.isinf(parse_speed("max"))
    with pytest.raises(ValueError):
        parse_speed("fast-ish")
    with pytest.raises(ValueError):
        parse_speed("0x")
    assert parse_start("14:01") == "14:01"
    assert str(parse_start("2026-05-29 14:01:00")) == "2026-05-29 14:01:00+00:00"
    assert parse_start("+5m").total_seconds() == 300 and parse_start("-90s").total_seconds() == -90
    assert parse_start("+1h30m").total_seconds() == 5400
    for bad in ("+5", "soon", "", "+m"):
        with pytest.raises(ValueError, match=r"\+5m"):
            parse_start(bad)


def test_replay_start_offsets_count_from_the_first_and_last_timestamps():
    def first_clock(start: str):
        session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=1.0, start=parse_start(start))
        while session.ingest(2000):
            pass
        return session.tick(0.0).clock.isoformat()
    assert first_clock("+1m") == "2026-05-29T13:58:51.250470+00:00"  # logs start 13:57:51.250470
    assert first_clock("-1m") == "2026-05-29T14:01:29.000113+00:00"  # and end 14:02:29.000113


def test_replay_bad_speed_is_usage_error(capsys):
    assert main(["replay", str(PREFILL_BOUND), "--speed", "warp"]) == 2
    assert "--speed" in capsys.readouterr().err


def test_replay_of_an_unreadable_input_exits_2(tmp_path, capsys):
    missing = str(tmp_path / "gone.log")
    # Nothing to read at all: one line, before any dashboard or output.
    assert main(["replay", missing, "--headless"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.strip() == f"pdwatch: error: {missing}: no such file"
    # One of two inputs missing: the replay runs on the other, says so, and its status shows it.
    assert main(["replay", missing, str(PREFILL_BOUND), "--speed", "max", "--headless"]) == 2
    captured = capsys.readouterr()
    assert sum("FIRING" in line for line in captured.out.splitlines()) == 4
    assert f"pdwatch: {missing}: no such file" in captured.err


def _timestamped_lines(folder: Path) -> list[tuple[str, str, str]]:
    """(ts, file name, line) of every line of a sample, lines without a time after the previous one."""
    out = []
    for path in sorted(folder.glob("*.out")):
        last = ""
        for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
            m = TS.search(line)
            last = m.group(1).rstrip("Z") if m else last
            out.append((last, path.name, line))
    out.sort(key=lambda t: t[0])
    return out


def test_watch_sees_a_finding_while_a_writer_appends(tmp_path):
    lines = _timestamped_lines(PREFILL_BOUND)
    for name in {name for _, name, _ in lines}:
        (tmp_path / name).write_text("")
    stop = threading.Event()
    out = io.StringIO()
    session = LiveSession([str(tmp_path)], mode="watch", poll_interval=0.02)
    headless = threading.Thread(target=run_headless, args=(session, out),
                                kwargs={"refresh": 0.05, "jsonl": True, "stop": stop, "err": None})
    headless.start()

    def writer():
        handles = {name: open(tmp_path / name, "a", encoding="utf-8") for _, name, _ in lines}
        try:
            for i, (_, name, line) in enumerate(lines):
                handles[name].write(line)
                if i % 10 == 0:
                    for h in handles.values():
                        h.flush()
                    time.sleep(0.01)
        finally:
            for h in handles.values():
                h.close()

    w = threading.Thread(target=writer)
    w.start()
    deadline = time.monotonic() + 30
    found = []
    try:
        while time.monotonic() < deadline and not found:
            found = [json.loads(x) for x in out.getvalue().splitlines()
                     if '"prefill_bound"' in x and '"firing"' in x]
            time.sleep(0.1)
    finally:
        stop.set()
        w.join(10)
        headless.join(10)
        session.close()
    assert found, f"no prefill_bound line within 30 s; output: {out.getvalue()!r}"
    assert found[0]["endpoint"].startswith("prefill_w")


class _Steps(threading.Event):
    """A stop event whose waits return at once; stops after ``limit`` waits."""

    def __init__(self, limit: int, on_wait=None) -> None:
        super().__init__()
        self.limit, self.waits, self.on_wait = limit, 0, on_wait

    def wait(self, timeout=None) -> bool:
        self.waits += 1
        if self.on_wait:
            self.on_wait(self.waits)
        if self.waits >= self.limit:
            self.set()
        return self.is_set()


def test_watch_updates_half_a_refresh_after_new_lines_not_a_whole_one(tmp_path):
    """Clock steps of 0.3 refresh: idle, an update comes every refresh; with new lines, after half."""
    log = tmp_path / "w0.log"
    log.write_text("")
    session = LiveSession([str(log)], mode="watch")
    ticks: list[float] = []
    real_tick = session.tick
    now = [0.0]

    def clock() -> float:
        now[0] += 0.3
        return now[0]

    def tick():
        ticks.append(round(now[0], 1))
        return real_tick()

    session.tick = tick  # type: ignore[method-assign]

    def write_on(wait_no: int) -> None:
        if wait_no == 1:  # after the idle look at 0.6
            with log.open("a") as f:
                f.write("(APIServer pid=9) INFO 11-29 09:01:38 [loggers.py:335] Engine 000: Avg prompt throughput: "
                        "1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
                        "GPU KV cache usage: 0.2%, Prefix cache hit rate: 0.0%\n")

    run_headless(session, io.StringIO(), refresh=1.0, stop=_Steps(12, write_on), err=None, clock=clock)
    session.close()
    # 0.3: first update; idle look at 0.6; the line read at 0.9 (0.6 after the update) -> update at once,
    # not at 1.3; then idle again: the next update one whole refresh later.
    assert ticks[:3] == [0.3, 0.9, 2.1]


def test_export_never_lands_in_a_folder_being_read(tmp_path, monkeypatch):
    import tempfile

    from pdwatch.commands.watch import default_export_path

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "w0.log").write_text("")
    elsewhere = tmp_path / "home"
    elsewhere.mkdir()
    assert default_export_path([str(logs)], cwd=str(elsewhere)) == str(elsewhere / "pdwatch-live-report.md")
    temp = tempfile.gettempdir()
    for given in ([str(logs)], [str(logs / "w0.log")], [str(logs / "*.log")]):
        assert default_export_path(given, cwd=str(logs)) == f"{temp}/pdwatch-live-report.md", given
    assert default_export_path(["http://127.0.0.1:9/metrics"], cwd=str(logs)).startswith(str(logs))


def test_a_replay_prints_what_live_printed_when_the_finding_fired(capsys):
    # The real kv_pressure capture: kv_exhausted fires with 27 requests waiting and resolves
    # when the queue has drained to 4.7. A max-speed replay reads both within one tick; its
    # firing record must still be the one of the firing moment: no end, the summary then.
    from pdwatch.session.analysis import analyse, evaluation_times
    from pdwatch.rules import RuleEngine, load_rules
    from tests.conftest import REAL_LOGS

    capture = REAL_LOGS / "captures" / "kv_pressure"
    assert main(["replay", str(capture), "--speed", "max", "--headless", "--jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    firing = {x["rule"]: x for x in records if x["state"] == "firing"}
    resolved = {x["rule"]: x for x in records if x["state"] == "resolved"}

    # What watching the run would have printed: a rule engine stepped over the same clock,
    # read at each step; the first step where a finding exists is the one live prints.
    analysis = analyse([str(capture)])
    engine, view = RuleEngine(load_rules()), analysis.store.view()
    said: dict[str, str] = {}
    for now in evaluation_times(analysis.store, *analysis.clock):
        engine.evaluate(view, now.floor("us").to_pydatetime())
        for f in engine.findings():
            said.setdefault(f.rule, f.summary)
    assert firing["kv_exhausted"]["end"] is None and resolved["kv_exhausted"]["end"] is not None
    assert firing["kv_exhausted"]["summary"] == said["kv_exhausted"]
    waiting = float(re.search(r"with ([\d.]+) requests waiting", firing["kv_exhausted"]["summary"])[1])
    assert waiting > 20  # the log's queue then: 26-28 waiting (it drains to ~5 by the end)
    assert firing["kv_exhausted"]["summary"] != resolved["kv_exhausted"]["summary"]
    for rule, record in firing.items():
        assert record["summary"] == said[rule], rule


def test_replay_start_takes_a_negative_offset_on_the_command_line(capsys):
    # "--start -1m" (documented: a minute before the end) must not be read as an option
    assert main(["replay", str(PREFILL_BOUND), "--start", "-1m", "--speed", "max", "--headless", "--jsonl"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert records and all(x["at"] >= "2026-05-29T14:01:29" for x in records)


def test_watch_on_logs_already_there_shows_their_trouble_at_once():
    # The operator starts watching a job in trouble: the recent past of its logs is judged
    # at start (as a replay would), not only the newest line, so kv_exhausted is printed now.
    session = LiveSession([str(REPO / "samples" / "kv-exhausted")], mode="watch", poll_interval=0.05)
    out, err = io.StringIO(), io.StringIO()
    stop = threading.Event()
    thread = threading.Thread(target=run_headless, args=(session, out),
                              kwargs={"refresh": 0.2, "jsonl": True, "stop": stop, "err": err})
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and '"kv_exhausted"' not in out.getvalue():
            time.sleep(0.05)
    finally:
        stop.set()
        thread.join(10)
        session.close()
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    (finding,) = [r for r in records if r["rule"] == "kv_exhausted" and r["state"] == "firing"]
    assert finding["endpoint"] == "decode_w0" and finding["severity"] == "critical"
    assert finding["start"] < "2026-05-29T14:03"  # at its time in the logs, not when watching began


def test_a_headless_replay_says_how_far_it_is_and_what_it_found(monkeypatch):
    from pdwatch.commands import watch

    monkeypatch.setattr(watch.Progress, "PROGRESS_S", 0.0)
    session = LiveSession([str(PREFILL_BOUND)], mode="replay", speed=400.0)
    out, err = io.StringIO(), io.StringIO()
    assert run_headless(session, out, refresh=0.05, err=err) == 0
    lines = err.getvalue().splitlines()
    progress = [line for line in lines if line.startswith("pdwatch: replay at ")]
    assert progress and all("% of the logs" in line for line in progress)
    assert lines[-2].startswith("pdwatch: replay finished over 2026-05-29 13:57:51 - 14:02:29: ")
    assert "warning" in lines[-2] and "still firing at the end of the logs" in lines[-2]
    # then the run's verdict, the report's
    from pdwatch.session.analysis import analyse
    assert lines[-1] == f"pdwatch: the run: {analyse([str(PREFILL_BOUND)]).diagnosis.verdict.text}"
