"""srt-slurm's ``logs/raw_prometheus.jsonl`` found and followed (``pdwatch watch``): the real records of the
Dynamo capture kit's sweep (``tests/data/real/sweeps/dynamo-agg-kv48-c1-16-rawprom``) written into a file
piece by piece, cut mid-record, as the scraper appends them. Each record comes out once, whole, with its
line and time, as ``events.raw_prometheus`` reads the finished file; a ``.gz`` is read once."""

from __future__ import annotations

import gzip
from pathlib import Path

from pdwatch.parsers.raw_prometheus import parse_record
from pdwatch.sources import ScrapeBlock, SourceSet
from pdwatch.sources.discovery import expand_paths
from pdwatch.sources.raw_prometheus_tail import RawPrometheusTail
from tests.conftest import DATA

LOGS = next((DATA / "real" / "sweeps" / "dynamo-agg-kv48-c1-16-rawprom").glob("*/logs"))
RAW = LOGS / "raw_prometheus.jsonl"


def _blocks(items) -> list[ScrapeBlock]:
    return [i for i in items if isinstance(i, ScrapeBlock)]


def _expected(path: Path) -> list[tuple[str, int]]:
    """(source, line) of each record with a scrape in it, read apart with the parser."""
    lines = RAW.read_bytes().splitlines()
    records = [parse_record(line, no) for no, line in enumerate(lines, 1)]
    return [(f"{path}#{r.endpoint}", r.line_no) for r in records if r.text.strip()]


def test_a_folder_s_raw_prometheus_jsonl_is_a_recorded_scrape_file_not_a_log(tmp_path: Path):
    logs, metrics = expand_paths([str(LOGS)])
    assert metrics == [str(RAW)]
    assert str(RAW) not in logs and any(p.endswith("_agg_w0.out") for p in logs)
    gz = tmp_path / "raw_prometheus.jsonl.gz"
    gz.write_bytes(gzip.compress(RAW.read_bytes()))
    other = tmp_path / "notes.jsonl"
    other.write_text("{}\n")
    assert expand_paths([str(tmp_path)]) == ([], [str(gz)])  # another *.jsonl is not read
    assert expand_paths([str(gz)]) == ([], [str(gz)])


def test_each_record_once_whole_with_its_line_and_time_while_the_file_grows(tmp_path: Path):
    data = RAW.read_bytes()
    path = tmp_path / "raw_prometheus.jsonl"
    path.write_bytes(b"")
    tail = RawPrometheusTail(str(path), max_line_bytes=1 << 20)
    got: list[ScrapeBlock] = []
    notices = []
    cut = len(data) // 3 + 17  # three pieces, each cut inside a record: a half-written line waits
    with open(path, "ab") as out:
        for piece in (data[:cut], data[cut:2 * cut], data[2 * cut:]):
            out.write(piece)
            out.flush()
            items = tail.poll()
            got += _blocks(items)
            notices += [i for i in items if getattr(i, "kind", None) == "error"]
    got += _blocks(tail.poll())
    tail.close()
    assert notices == []
    whole = _expected(RAW)
    assert [(b.source.replace(str(path), "F"), b.scrape_no) for b in got] == \
        [(s.replace(str(RAW), "F"), n) for s, n in whole]


def test_a_watch_follows_it_and_a_gz_is_read_once(tmp_path: Path):
    gz = tmp_path / "raw_prometheus.jsonl.gz"
    gz.write_bytes(gzip.compress(RAW.read_bytes()))
    sources = SourceSet([str(tmp_path)], follow=True)
    items = []
    for _ in range(20):
        items += sources.poll()
    sources.close()
    notices = [i.message for i in items if getattr(i, "kind", None) == "metrics_file"]
    assert notices == [f"{gz}: recorded /metrics scrapes, followed scrape by scrape"]
    assert [(b.source, b.scrape_no) for b in _blocks(items)] == _expected(gz)


def test_garbage_in_a_followed_file_is_told_and_passed_over(tmp_path: Path):
    path = tmp_path / "raw_prometheus.jsonl"
    first, second = RAW.read_bytes().splitlines(keepends=True)[:2]
    path.write_bytes(first + b"garbage\n" + second)
    tail = RawPrometheusTail(str(path), max_line_bytes=1 << 20)
    items = tail.poll() + tail.poll()
    tail.close()
    assert [b.scrape_no for b in _blocks(items)] == [1, 3]
    assert [i.message for i in items if getattr(i, "kind", None) == "error"] == \
        [f"{path}:2: record skipped: not JSON (cut off?): Expecting value at column 1"]
