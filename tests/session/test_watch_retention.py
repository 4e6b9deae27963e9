"""A long watch keeps rows at full resolution only as far back as its rules read (issue 34).

Two watches follow the same growing logs, 2.5 log-hours of a simulated prefill-bound deployment
(pdwatch's simulator: here it only provides a run longer than the kept span, the rules' verdict is
checked elsewhere on real logs): one folds rows older than the kept span into per-minute rows, the
other keeps every row. Their findings must be the same, their whole-run charts and exported report
alike, while the first holds only the kept span line by line.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pdwatch.model.retention import MINUTE_NS, per_minute
from pdwatch.rules.model import STATS_FIELDS
from pdwatch.session.live import LiveSession

STAMP = re.compile(rb"^(?:\x1b\[[0-9;]*m)*(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)")


@pytest.fixture(scope="module")
def long_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("long") / "logs"
    subprocess.run([sys.executable, "-m", "pdwatch", "simulate", "--scenario", "prefill-bound", "--topology",
                    "1xDEP2-1xDEP2", "--duration", "150m", "--noise", "quiet", "--out", str(out)],
                   check=True, capture_output=True, timeout=300)
    return out


def timed_lines(path: Path) -> list[tuple[pd.Timestamp, bytes]]:
    """Each line with the time of the newest stamped line at or before it."""
    out, now = [], None
    for line in path.read_bytes().splitlines(keepends=True):
        m = STAMP.match(line)
        if m:
            now = pd.Timestamp(m.group(1).decode())
        out.append((now, line))
    return out


def follow_growing(run: Path, tmp_path: Path, chunks: int = 30) -> tuple[LiveSession, LiveSession]:
    """Grow a copy of ``run``'s logs in ``chunks`` steps of log time; two watches follow it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    files = {p.name: timed_lines(p) for p in sorted(run.glob("*.out"))}
    stamps = [t for lines in files.values() for t, _ in lines if t is not None]
    start, end = min(stamps), max(stamps)
    for name in files:
        (logs / name).touch()
    folding = LiveSession([str(logs)], mode="watch", year=2026, poll_interval=0.01)
    keeping = LiveSession([str(logs)], mode="watch", year=2026, poll_interval=0.01)
    keeping.store.retention = None
    written = {name: 0 for name in files}
    wall = 0.0
    for k in range(1, chunks + 1):
        upto = start + (end - start) * k / chunks
        for name, lines in files.items():
            n = stop = written[name]
            while stop < len(lines) and (k == chunks or lines[stop][0] is None or lines[stop][0] <= upto):
                stop += 1
            with open(logs / name, "ab") as fh:
                fh.write(b"".join(line for _, line in lines[n:stop]))
            written[name] = stop
        wall += 1.0
        for session in (folding, keeping):
            while session.ingest(5000):
                pass
            session.tick(wall)
    return folding, keeping


def test_folding_keeps_the_findings_and_the_whole_run(long_run: Path, tmp_path: Path):
    folding, keeping = follow_growing(long_run, tmp_path)
    try:
        def findings(session):
            return sorted((f.rule, f.endpoint, str(f.start), str(f.end)) for f in session.engine.findings())
        assert findings(folding) == findings(keeping)
        assert any(rule == "prefill_bound" for rule, *_ in findings(folding)), findings(folding)

        kept_s = folding.store.retention.seconds
        for ep in keeping.store.endpoints():
            if ep.role == "frontend":
                continue
            whole, recent = keeping.store.stats(ep.name), folding.store.stats(ep.name)
            span = (whole["ts"].iloc[-1] - whole["ts"].iloc[0]).total_seconds()
            assert span > kept_s + 1800, "the run is longer than the kept span"
            # line by line: the kept span (and the margin before the next fold), no more
            held = (recent["ts"].iloc[-1] - recent["ts"].iloc[0]).total_seconds()
            assert kept_s - 60 <= held <= kept_s + 600 + 60, held
            assert len(recent) < 0.7 * len(whole)
            # every line counted, the whole run still in the history, one row per engine and minute
            assert folding.store.stats_line_count(ep.name) == len(whole)
            history = folding.store.history(ep.name)
            assert history["ts"].iloc[0] - whole["ts"].iloc[0] < pd.Timedelta(minutes=1)
            folded = history[history["lines"] > 1] if "lines" in history else history.iloc[:0]
            minute = folded.assign(minute=folded["ts"].dt.floor("min"))
            assert len(folded) and not minute.duplicated(["engine", "minute"]).any()
            # the dashboard's whole-run charts: the same shape, bucket by bucket
            a, b = folding.endpoint_series(ep.name), keeping.endpoint_series(ep.name)
            assert a.times[0] == b.times[0] and a.times[-1] == b.times[-1]
            assert np.mean(a.prompt_tps) == pytest.approx(np.mean(b.prompt_tps), rel=0.05)
            assert np.mean(a.running) == pytest.approx(np.mean(b.running), rel=0.05)
        # the frequent KV-transfer lines of the folded span are counted, not kept
        decode = next(e.name for e in folding.store.endpoints() if e.role == "decode")
        retired = folding.store.retired_events(decode)
        kept = folding.store.events(decode)
        all_kv = int((keeping.store.events(decode)["kind"] == "kv_transfer").sum())
        assert retired.get("kv_transfer", 0) > 0
        assert retired["kv_transfer"] + int((kept["kind"] == "kv_transfer").sum()) == all_kv

        # the exported report: the whole run's lines and headline
        a, b = folding.analysis(), keeping.analysis()
        assert a.clock == b.clock
        assert a.headline.tps_per_gpu == pytest.approx(b.headline.tps_per_gpu, rel=0.05)
        from pdwatch.views.report.data import build
        da, db = build(a), build(b)
        assert [e["stats_lines"] for e in da["endpoints"]] == [e["stats_lines"] for e in db["endpoints"]]
        # a finding that began before the kept span: its evidence is the same lines, with text
        # (a folded stats line: the numbers the rule read, in place of its wording)
        def evidence(data):
            return [[(q["source"], q["line_no"], bool(q["text"])) for q in f["evidence"]] for f in data["findings"]]
        assert evidence(da) == evidence(db)
        assert all(has_text for quotes in evidence(da) for _, _, has_text in quotes)
        started = min(f.start for f in a.findings if f.rule == "prefill_bound")
        assert pd.Timestamp(started) < pd.Timestamp(a.clock[1]) - pd.Timedelta(seconds=kept_s)
    finally:
        folding.close()
        keeping.close()


def test_a_minute_folds_counts_as_sums_and_the_rest_as_means():
    ts = pd.to_datetime(["2026-12-07T10:00:05Z", "2026-12-07T10:00:35Z", "2026-12-07T10:00:50Z",
                         "2026-12-07T10:01:05Z"], utc=True)
    rows = pd.DataFrame({"ts": ts, "engine": [0, 0, 1, 0]})
    for f in STATS_FIELDS:
        rows[f] = np.nan
    rows["gen_tps"] = [100.0, 300.0, 50.0, 7.0]
    rows["kv_usage_pct"] = [10.0, np.nan, 40.0, 20.0]
    rows["preemptions"] = [1.0, 2.0, np.nan, 4.0]
    rows["requests_ok"] = [10.0, 30.0, np.nan, np.nan]
    rows["request_latency_s"] = [1.0, 3.0, np.nan, np.nan]
    rows["ttft_p99_s"] = [0.5, 0.9, np.nan, np.nan]
    minutes = per_minute(rows)
    first = minutes[(minutes["engine"] == 0) & (minutes["ts"] == ts[0])].iloc[0]
    assert first["lines"] == 2
    assert first["gen_tps"] == 200.0  # a rate: the mean
    assert first["kv_usage_pct"] == 10.0  # of the known values only
    assert first["preemptions"] == 3.0 and first["requests_ok"] == 40.0  # counts: the sum
    assert first["request_latency_s"] == pytest.approx((1.0 * 10 + 3.0 * 30) / 40)  # weighted by requests
    assert first["ttft_p99_s"] == 0.9  # the worst
    assert list(minutes["lines"]) == [2, 1, 1]
    assert {"preemptions", "requests_ok"} <= set(minutes.columns)
    assert "requests_failed" not in minutes.columns and "ttft_s" not in minutes.columns  # never known: left out
    # folded again (a minute of minutes) it stays the same
    again = per_minute(minutes)
    pd.testing.assert_frame_equal(again[minutes.columns], minutes, check_dtype=False)
    assert (minutes["ts"].astype("int64") // MINUTE_NS).is_monotonic_increasing


def test_the_kept_span_covers_what_the_rules_read(tmp_path: Path):
    from pdwatch.model.retention import MARGIN_S, MINIMUM_KEPT_S, Retention
    from pdwatch.rules import load_rules
    builtin = load_rules()
    widest = max(r.reach().seconds for r in builtin)
    assert widest == 3600  # the builtin rules' 1h windows
    assert Retention.for_rules(builtin).seconds == max(widest + MARGIN_S, MINIMUM_KEPT_S)
    assert Retention.for_rules(builtin, 6 * 3600).seconds == 6 * 3600  # --keep-full 6h keeps more
    assert Retention.for_rules(builtin, 600).seconds == widest + MARGIN_S  # never less than the rules read
    assert Retention.for_rules(builtin).retired_kinds == {"kv_transfer", "spec_decode"}
    # a user rule that counts KV-transfer lines over the whole run, with a 3h window: both kept
    extra = tmp_path / "mine.yaml"
    extra.write_text("""groups:
- name: mine
  rules:
  - finding: many_transfers
    expr: count_events("kv_transfer") > 1000 and avg(gen_tps, 3h) > 0
    severity: info
    summary: "{{ endpoint }} moved many KV blocks"
""")
    retention = Retention.for_rules(load_rules([extra]))
    assert retention.seconds == 3 * 3600 + MARGIN_S
    assert retention.retired_kinds == {"spec_decode"}


def test_keep_full_that_is_not_a_duration_is_one_clear_error(tmp_path: Path):
    run = subprocess.run([sys.executable, "-m", "pdwatch", "watch", "--headless", "--keep-full", "2x", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert run.stderr.strip().splitlines()[-1] == "pdwatch: error: --keep-full 2x: expected a duration such as 90m, 2h or 1d"
