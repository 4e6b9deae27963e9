"""A replay holds its stats lines without their text (``partial.without_text``, issue 34): the store
fed those gives the same frame and quotes the same lines as fed the events with their text, and a
line changed in its file since is quoted as changed, never as another line."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pandas as pd

from pdwatch.events.stream import EventStream
from pdwatch.model.partial import ReadBackStats, without_text
from pdwatch.model.store import Store
from pdwatch.parsers import Event
from pdwatch.sources import SourceSet

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "prefill-bound"


def _events(folder: Path) -> list[Event]:
    """Every event of the folder's logs, as a replay's reading gives them (``EventStream``)."""
    return [item for item in EventStream(SourceSet([str(folder)], follow=False)) if isinstance(item, Event)]


def test_a_store_of_textless_stats_lines_is_the_store_of_the_lines(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(SAMPLE, folder)
    events = _events(folder)
    light = [without_text(e) for e in events]
    stats = [e for e in light if e.kind == "stats"]
    assert stats and all(isinstance(e, ReadBackStats) and e.text == "" for e in stats)
    assert all(a is b for a, b in zip(events, light) if a.kind != "stats")  # nothing else touched

    full, textless = Store(), Store()
    full.add(events)
    textless.add(light)
    full.flush()
    textless.flush()
    for endpoint in full.endpoints():
        pd.testing.assert_frame_equal(full.stats(endpoint.name), textless.stats(endpoint.name))
    some = [e for e in events if e.kind == "stats"][::97]
    for e in some:
        assert textless.line_text(e.source, e.line_no) == e.text == full.line_text(e.source, e.line_no)

    # The file rewritten under the replay: its old line is "changed", not the new text.
    e = some[-1]
    path = Path(e.source)
    lines = path.read_text().splitlines(keepends=True)
    lines[e.line_no - 1] = lines[e.line_no - 1].replace("throughput", "THROUGHPUT")
    path.write_text("".join(lines))
    fresh = Store()
    fresh.add(light)
    fresh.flush()
    assert fresh.line_text(e.source, e.line_no) == f"line {e.line_no} of {e.source} (the file has changed since it was read)"


def test_a_line_that_cannot_be_read_back_keeps_its_text():
    events = _events(SAMPLE)
    stats = next(e for e in events if e.kind == "stats")
    piped = replace(stats, source="<stdin>")
    assert without_text(piped) is piped  # no file to read it back from
    scrape = replace(stats, level=None)
    assert without_text(scrape) is scrape  # a /metrics scrape's row: no line
