"""A recorded /metrics file followed as it grows (``pdwatch watch``, issue 32): the real Dynamo
frontend scrapes of tests/data/real/dynamo/agg_kv_pressure written into a file scrape by scrape,
and sometimes mid-scrape, as a recorder appends them. Each scrape comes out once, whole, with its
header's time and line, as ``events.recorded`` reads the finished file."""

from __future__ import annotations

from pathlib import Path

from pdwatch.events.recorded import split_scrapes
from pdwatch.sources import ScrapeBlock, SourceSet
from pdwatch.sources.recorded_tail import RecordedTail
from tests.conftest import REPO

SCRAPES = REPO / "tests" / "data" / "real" / "dynamo" / "agg_kv_pressure" / "agg_kv_pressure.frontend.metrics.txt"


def _blocks(items) -> list[ScrapeBlock]:
    return [i for i in items if isinstance(i, ScrapeBlock)]


def test_each_scrape_once_whole_with_its_time_and_line_as_the_whole_file_gives_them(tmp_path: Path):
    text = SCRAPES.read_text()
    whole = split_scrapes(text)
    path = tmp_path / "frontend.metrics.txt"
    path.write_text("")
    tail = RecordedTail(str(path), max_line_bytes=1 << 20)
    got: list[ScrapeBlock] = []
    cut = len(text) // 3 + 17  # the file grows in three pieces, each cut inside a scrape
    with open(path, "a") as out:
        for piece in (text[:cut], text[cut:2 * cut], text[2 * cut:]):
            out.write(piece)
            out.flush()
            got += _blocks(tail.poll())
    got += _blocks(tail.poll())  # quiet now: the last scrape, which no header follows, is whole
    tail.close()
    assert [(b.scrape_no, b.ts) for b in got] == [(s.line_no, s.ts) for s in whole]
    assert [b.text.strip() for b in got] == [s.body.strip() for s in whole]
    assert {b.source for b in got} == {str(path)}


def test_a_watch_follows_a_recorded_file_and_says_so(tmp_path: Path):
    path = tmp_path / "frontend.metrics.txt"
    path.write_text(SCRAPES.read_text())
    sources = SourceSet([str(tmp_path)], follow=True)
    items = []
    for _ in range(5):
        items += sources.poll()
    sources.close()
    notices = [i.message for i in items if getattr(i, "kind", None) == "metrics_file"]
    assert notices == [f"{path}: recorded /metrics scrapes, followed scrape by scrape"]
    assert len(_blocks(items)) == len(split_scrapes(path.read_text()))
