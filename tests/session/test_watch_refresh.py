"""What a watch's refresh recomputes (issue 34: a watch left open on 72 engines cost half a core).

A line from one endpoint recomputes that endpoint's pane row and verdict figures, not the others';
and what the watch shows after lines came in a few at a time is what a watch that read them all at
once shows. Input: a real prefill/decode pair of vLLM 0.32 CPU servers (tests/data/real/captures/pd_pair).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pdwatch.diagnosis import figures as F
from pdwatch.session.live import LiveSession

PAIR = Path(__file__).resolve().parents[1] / "data" / "real" / "captures" / "pd_pair"


def _lines(name: str) -> list[bytes]:
    return (PAIR / name).read_bytes().splitlines(keepends=True)


def _tick(session: LiveSession, wall: float):
    while session.ingest(5000):
        pass
    return session.tick(wall)


def _stats_line_positions(lines: list[bytes]) -> list[int]:
    return [i for i, line in enumerate(lines) if b"Avg prompt throughput" in line]


def test_a_line_from_one_endpoint_recomputes_only_its_own(tmp_path: Path, monkeypatch):
    logs = tmp_path / "logs"
    logs.mkdir()
    prefill, decode = _lines("prefill.log"), _lines("decode.log")
    cut_p, cut_d = _stats_line_positions(prefill)[10], _stats_line_positions(decode)[10]
    (logs / "prefill.log").write_bytes(b"".join(prefill[:cut_p]))
    (logs / "decode.log").write_bytes(b"".join(decode[:cut_d]))
    session = LiveSession([str(logs)], mode="watch", year=2026, poll_interval=0.01)
    before = _tick(session, 1.0)
    rows_before = {row.name: row for row in before.endpoints}
    assert len(rows_before) == 2

    computed: list[str] = []
    real = F.window_figures
    monkeypatch.setattr(F, "window_figures", lambda name, *a, **k: computed.append(name) or real(name, *a, **k))
    next_stats = _stats_line_positions(decode)[11]
    with open(logs / "decode.log", "ab") as fh:  # the decode server's next stats line, nothing from prefill
        fh.write(b"".join(decode[cut_d:next_stats + 1]))
    after = _tick(session, 2.0)
    rows_after = {row.name: row for row in after.endpoints}

    decode_name = next(n for n, r in rows_after.items() if r.role == "decode")
    prefill_name = next(n for n, r in rows_after.items() if r.role == "prefill")
    assert rows_after[prefill_name] is rows_before[prefill_name]  # kept, not recomputed
    assert rows_after[decode_name] != rows_before[decode_name]
    assert rows_after[decode_name].last_seen > rows_before[decode_name].last_seen
    assert prefill_name not in computed  # its verdict figures were kept too


def _shown(row) -> dict:
    return {k: v for k, v in row.__dict__.items() if k not in ("sources", "stale_for_s")}


def test_lines_a_few_at_a_time_show_what_all_at_once_shows(tmp_path: Path):
    grown, whole = tmp_path / "grown", tmp_path / "whole"
    grown.mkdir()
    names = ("prefill.log", "decode.log")
    lines = {name: _lines(name) for name in names}
    for name in names:
        (grown / name).touch()
    session = LiveSession([str(grown)], mode="watch", year=2026, poll_interval=0.01)
    steps = 12
    for k in range(1, steps + 1):
        for name in names:  # in turns: each step adds some of one file, then of the other
            n = len(lines[name])
            a, b = n * (k - 1) // steps, n * k // steps
            with open(grown / name, "ab") as fh:
                fh.write(b"".join(lines[name][a:b]))
            shown = _tick(session, float(2 * k + names.index(name)))
    shutil.copytree(grown, whole)
    fresh = LiveSession([str(whole)], mode="watch", year=2026, poll_interval=0.01)
    once = _tick(fresh, shown_wall := 100.0)
    shown = _tick(session, shown_wall)
    # Besides their folders' paths and how long each has been silent by each watch's wall clock:
    assert [_shown(r) for r in shown.endpoints] == [_shown(r) for r in once.endpoints]
    assert shown.diagnosis.verdict == once.diagnosis.verdict
    # (what fired on the way and cleared is the grown watch's own history: a fresh watch never saw it)
    assert [(f.rule, f.endpoint) for f in shown.findings] == [(f.rule, f.endpoint) for f in once.findings]
