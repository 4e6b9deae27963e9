"""``pdwatch report`` and ``pdwatch replay`` on a real srt-slurm-shaped job whose ``/metrics`` were recorded as srt-slurm
records them, ``logs/raw_prometheus.jsonl`` (tests/data/real/sweeps/dynamo-agg-kv48-c1-16-rawprom, README there: Dynamo
1.6.1 + vLLM 0.31 for CPU, one aggregated worker with a 48-block KV cache, C = 1, 4, 16).

The expectations come from the records themselves, read with ``json`` and string splitting (not pdwatch): the worker's
``vllm:num_preemptions_total`` and ``vllm:kv_cache_usage_perc``, the frontend's TTFT histogram. Each record joins the
endpoint of its process's log (role ``agg`` + worker_id 0 -> ``<node>_agg_w0.out``; ``frontend`` 0 ->
``<node>_frontend_0.out``), the worker's log keeps its stats lines and the records fill the preemptions they do not
print; without the logs the records alone are the endpoints, with ``raw_prometheus.jsonl:LINE`` as evidence."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pdwatch.session.analysis import analyse
from tests.conftest import DATA

JOB = next((DATA / "real" / "sweeps" / "dynamo-agg-kv48-c1-16-rawprom").glob("*/logs")).parent
LOGS = JOB / "logs"
RAW = LOGS / "raw_prometheus.jsonl"


def _records() -> list[tuple[int, dict]]:
    return [(no, json.loads(line)) for no, line in enumerate(RAW.read_text().splitlines(), 1)]


def _sample(text: str, name: str) -> float | None:
    values = [float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{")]
    return sum(values) if values else None


def _report(*paths: str) -> tuple[dict, str]:
    done = subprocess.run([sys.executable, "-m", "pdwatch", "report", *paths, "--format", "json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


@pytest.fixture(scope="module")
def with_logs():
    return analyse([str(LOGS)])


def test_each_record_joins_the_endpoint_of_its_process_log(with_logs):
    endpoints = {e.name: e for e in with_logs.store.endpoints()}
    assert sorted(endpoints) == ["agg_w0", "frontend_0"]
    worker, frontend = endpoints["agg_w0"], endpoints["frontend_0"]
    assert worker.role == "aggregated" and frontend.role == "frontend"
    assert f"{RAW}#agg_w0" in worker.sources and any(s.endswith("_agg_w0.out") for s in worker.sources)
    assert f"{RAW}#frontend_0" in frontend.sources and any(s.endswith("_frontend_0.out") for s in frontend.sources)
    messages = [n.message for n in with_logs.notices]
    assert f"{RAW}#frontend_0: the /metrics of frontend_0 (its records' role and worker_id)" in messages
    assert any(m.startswith(f"{RAW}#agg_w0: agg_w0 has stats lines, which are used; their preemption counts fill ")
               for m in messages), messages


def test_the_worker_keeps_its_stats_lines_and_gets_the_records_preemptions(with_logs, tmp_path):
    stats = with_logs.store.stats("agg_w0")
    assert set(stats["source"]) == {next(str(p) for p in LOGS.glob("*_agg_w0.out"))}  # its lines, not the records
    worker = [r for _, r in _records() if r["role"] == "agg"]
    counts = [_sample(r["text"], "vllm:num_preemptions_total") for r in worker]
    assert counts[0] == 0 and counts[-1] == 77  # the 48-block cache preempted 77 times, all at C=16
    filled = stats["preemptions"].fillna(0)
    assert 0.85 * counts[-1] <= filled.sum() <= counts[-1]
    # exactly as the same scrapes recorded as *.metrics.txt beside the logs fill them
    copy = tmp_path / "logs"
    copy.mkdir()
    for log in LOGS.glob("*.out"):
        shutil.copy(log, copy / log.name)
    for role, name in (("agg", "vm_agg_w0"), ("frontend", "vm_frontend_0")):
        with open(copy / f"{name}.metrics.txt", "w") as out:
            for record in (r for _, r in _records() if r["role"] == role):
                port = record["endpoint_url"].rsplit(":", 1)[1].split("/")[0]
                out.write(f"# ===== t={record['timestamp_ns'] // 1000 / 1e6:.6f} port={port} =====\n{record['text']}")
    as_txt = analyse([str(copy)]).store.stats("agg_w0")
    assert list(as_txt["preemptions"].fillna(0)) == list(filled)


def test_the_frontend_s_ttft_comes_from_its_records(with_logs):
    rows = with_logs.store.stats("frontend_0")
    from_records = rows[rows["source"] == f"{RAW}#frontend_0"]
    assert len(from_records) > 10 and from_records["ttft_s"].notna().any()


def test_the_records_alone_are_the_endpoints_with_raw_prometheus_jsonl_line_evidence():
    report, stderr = _report(str(RAW))
    assert sorted(e["name"] for e in report["endpoints"]) == ["agg_w0", "frontend_0"]
    records = dict(_records())
    kv = [f for f in report["findings"] if f["rule"] == "kv_exhausted"]
    assert kv and all(f["endpoint"] == "agg_w0" for f in kv)
    for finding in kv:
        for e in finding["evidence"]:
            assert e["source"] == str(RAW)
            record = records[e["line_no"]]
            assert record["role"] == "agg" and e["text"].startswith("raw_prometheus agg_w0 t=")
            # the quoted KV usage is the record's own
            assert f"kv_cache_usage_perc={_sample(record['text'], 'vllm:kv_cache_usage_perc'):g} " in e["text"]
    peak = max(100 * _sample(r["text"], "vllm:kv_cache_usage_perc") for r in records.values() if r["role"] == "agg")
    assert report["endpoints"][0]["kv_usage_pct"]["p95"] <= peak + 1e-6


def test_gz_gives_the_same_report(tmp_path: Path):
    gz = tmp_path / "raw_prometheus.jsonl.gz"
    with open(RAW, "rb") as src, gzip.open(gz, "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain, _ = _report(str(RAW))
    packed, _ = _report(str(gz))

    def shape(report: dict, path: str) -> list:
        return [(f["rule"], f["endpoint"], f["start"], f["end"], f["summary"],
                 [(e["source"].replace(path, "F"), e["line_no"], e["text"]) for e in f["evidence"]])
                for f in report["findings"]]

    assert shape(packed, str(gz)) == shape(plain, str(RAW)) and shape(plain, str(RAW))


def test_a_cut_off_last_line_is_one_notice_and_the_report_still_exits_0(tmp_path: Path):
    logs = tmp_path / "logs"
    shutil.copytree(LOGS, logs, ignore=shutil.ignore_patterns("sa-bench_*"))
    data = (logs / "raw_prometheus.jsonl").read_bytes()
    (logs / "raw_prometheus.jsonl").write_bytes(data[: len(data) - len(data.splitlines()[-1]) // 2 - 1])
    n = len(data.splitlines())
    report, stderr = _report(str(logs))
    assert f"{logs / 'raw_prometheus.jsonl'}:{n}: record skipped: not JSON (cut off?)" in stderr
    assert any(f["rule"] == "kv_exhausted" for f in report["findings"])


def test_replay_gives_report_s_findings():
    report, _ = _report(str(LOGS))
    done = subprocess.run([sys.executable, "-m", "pdwatch", "replay", str(LOGS), "--speed", "max", "--headless",
                           "--jsonl"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    fired = {(e["rule"], e["endpoint"]) for e in map(json.loads, done.stdout.splitlines()) if e.get("rule")}
    assert fired == {(f["rule"], f["endpoint"]) for f in report["findings"]}


def _as_srt_slurm_writes_them(dest: Path) -> Path:
    """The job's records with the identity fields srt-slurm's own scraper (srtctl/analysis/metrics_scraper.py)
    writes: ``worker_id`` the worker's node (``vm``, the ``<node>`` of ``vm_agg_w0.out``) with an aggregated worker's
    role ``decode``, and null for the frontend; timestamps, URLs and texts as recorded."""
    logs = dest / "logs"
    logs.mkdir(parents=True)
    for log in LOGS.glob("*.out"):
        shutil.copy(log, logs / log.name)
    with open(logs / "raw_prometheus.jsonl", "w") as out:
        for _, record in _records():
            if record["role"] == "agg":
                record.update(role="decode", worker_id="vm")
            else:
                record["worker_id"] = None
            out.write(json.dumps(record) + "\n")
    return logs


def test_srt_slurm_s_node_worker_id_joins_the_log_of_that_node(tmp_path: Path):
    logs = _as_srt_slurm_writes_them(tmp_path)
    raw = logs / "raw_prometheus.jsonl"
    port = json.loads(raw.read_text().splitlines()[1])["endpoint_url"]
    analysis = analyse([str(logs)])
    endpoints = {e.name: e for e in analysis.store.endpoints()}
    assert sorted(endpoints) == ["agg_w0", "frontend_0"]
    worker_source = next(s for s in endpoints["agg_w0"].sources if "#" in s)
    assert worker_source.startswith(f"{raw}#decode@vm:")
    assert f"{raw}#frontend_0" in endpoints["frontend_0"].sources
    # the same fill as with the kit's own worker_id
    filled = analysis.store.stats("agg_w0")["preemptions"].fillna(0)
    ours = analyse([str(LOGS)]).store.stats("agg_w0")["preemptions"].fillna(0)
    assert list(filled) == list(ours) and port


def test_srt_slurm_s_records_alone_name_the_worker_by_node(tmp_path: Path):
    raw = _as_srt_slurm_writes_them(tmp_path) / "raw_prometheus.jsonl"
    report, _ = _report(str(raw))
    names = sorted(e["name"] for e in report["endpoints"])
    assert names[0].startswith("decode@vm:") and names[1] == "frontend_0"
    assert any(f["rule"] == "kv_exhausted" and f["endpoint"] == names[0] for f in report["findings"])
