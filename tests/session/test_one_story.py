"""One analysis, three clocks (issue 32): a replay, a watch and a report of the same folder tell
one story.

On every real Dynamo capture (logs and recorded /metrics) and every sample, a replay played to
its end shows the report's findings, figures and verdict exactly; and the findings its own clock
fired on the way, evaluated on the report's grid with the recorded scrapes used as the report
uses them, are the report's, each starting at most one stats interval of its endpoint later (a
report dates a worker's death from the silence after its last line, which a clock only sees once
it has lasted; the real kills here are seen 0.7 to 2.0 s after, with lines every 2 s).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from pdwatch.session.analysis import analyse
from pdwatch.session.live import LiveSession

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = sorted(p for p in (ROOT / "tests" / "data" / "real" / "dynamo").iterdir() if p.is_dir()) + \
    sorted(p for p in (ROOT / "samples").iterdir() if p.is_dir())


def _key(f) -> tuple:
    return (f.rule, f.severity, f.endpoint, pd.Timestamp(f.start), None if f.end is None else pd.Timestamp(f.end),
            f.summary)


def _played(folder: Path) -> tuple[LiveSession, object, list]:
    """The replay at its end, and every finding its own clock fired on the way."""
    session = LiveSession([str(folder)], mode="replay", speed=math.inf)
    snap = session.tick()
    while not snap.done:
        session.ingest(5000)
        snap = session.tick()
    return session, snap, list(session.engine.findings())


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_a_replay_ends_on_the_report_and_its_clock_fires_what_the_report_found(folder):
    report = analyse([str(folder)])
    session, snap, own = _played(folder)
    assert snap.done and session.run_history.error is None

    assert sorted(map(_key, snap.all_findings), key=str) == sorted(map(_key, report.findings), key=str)
    assert snap.verdict == report.diagnosis.verdict

    step = session._buffer.step
    for f in report.findings:
        interval = report.store.model.endpoints[f.endpoint].facts.get("stats_interval_s") if f.endpoint else None
        late = max(step, pd.Timedelta(seconds=interval or 0))
        mine = [g for g in own if (g.rule, g.severity, g.endpoint) == (f.rule, f.severity, f.endpoint)
                and pd.Timestamp(f.start) <= pd.Timestamp(g.start) <= pd.Timestamp(f.start) + late]
        assert mine, f"the replay's clock never fired {f.rule} on {f.endpoint} from {f.start} (by {late})"


def _watched(folder: Path, tmp_path: Path):
    """A watch on a copy of the finished folder, once it has read every line (its catch-up judges
    the logs already there as a replay would: every capture and sample is shorter than its 10 min)."""
    import shutil
    import time

    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    session = LiveSession([str(copy)], mode="watch")
    try:
        quiet = 0
        while quiet < 5:
            quiet = quiet + 1 if session.ingest(5000) == 0 else 0
            snap = session.tick()
            time.sleep(0.05)
        return snap
    finally:
        session.close()


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_a_watch_of_the_finished_folder_finds_what_the_report_found(folder, tmp_path):
    """A watch's rule clock is its own (anchored where its first look found the logs, moved on by
    the wall clock between reads), so a finding may start a fraction of a stats interval off the
    report's, and a figure that counts time up to the clock ("no progress for 66.3 s") may differ;
    the findings themselves, and where they start within one interval, are the report's."""
    report = analyse([str(folder)])
    snap = _watched(folder, tmp_path)
    assert sorted((f.rule, f.severity, f.endpoint) for f in snap.all_findings) == \
        sorted((f.rule, f.severity, f.endpoint) for f in report.findings)
    for f in report.findings:
        interval = report.store.model.endpoints[f.endpoint].facts.get("stats_interval_s") if f.endpoint else None
        near = pd.Timedelta(seconds=interval or 10.0)
        assert any((g.rule, g.severity, g.endpoint) == (f.rule, f.severity, f.endpoint)
                   and abs(pd.Timestamp(g.start) - pd.Timestamp(f.start)) <= near for g in snap.all_findings), \
            (f.rule, f.endpoint, f.start, [(g.rule, g.start) for g in snap.all_findings])
