"""``pdwatch sweep`` end to end on a simulated srt-slurm sweep whose bottleneck changes along it
(pdwatch.sim.sweep: decode KV cache exhausted from C=512; its result files agree with its logs,
tests/sim/test_sweep.py): every point judged over its own window with evidence at file:line, the
frontier and where the limit changes, invalid points flagged and never on the frontier, and the
JSON contract of docs/sweep.md."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pdwatch.sim.sweep import write_sweep_job


@pytest.fixture(scope="module")
def job(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    write_sweep_job(out)
    return out


def sweep(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pdwatch", "sweep", *args], capture_output=True, text=True,
                          timeout=300)


def test_each_point_has_the_verdict_of_its_window_and_the_limit_change_is_said(job):
    done = sweep(str(job), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    points = {p["concurrency"]: p for p in data["points"]}
    assert sorted(points) == [64, 128, 256, 512, 1024]
    for c in (512, 1024):  # the simulator's decode KV cache is exhausted from C=512 on
        v = points[c]["verdict"]
        assert v["rule"] == "kv_exhausted" and v["severity"] == "critical", (c, v)
        source, line = v["evidence"][0]["source"], v["evidence"][0]["line"]
        text = Path(source).read_text().splitlines()[line - 1]
        assert "KV cache usage" in text
        stamp = re.search(r"(\d\d:\d\d:\d\d)", text).group(1)  # the quoted line is inside the point's window
        assert points[c]["window"]["start"][11:19] <= stamp <= points[c]["window"]["end"][11:19]
    for c in (64, 128):
        assert points[c]["verdict"]["rule"] is None, points[c]["verdict"]
    for p in data["points"]:
        assert p["valid"] and p["invalid_reasons"] == []
        assert abs(p["tps_per_gpu"] - p["output_throughput"] / p["gpus"]) <= 1e-3 * p["tps_per_gpu"]
        assert set(p) >= {"job", "concurrency", "gpus", "output_throughput", "total_token_throughput", "tps_per_gpu",
                          "tps_per_user", "mean_ttft_ms", "mean_tpot_ms", "window", "valid", "invalid_reasons",
                          "verdict"}
    (front,) = data["frontiers"]
    assert "from C=512 decode KV cache (kv_exhausted)" in front["limits"], front["limits"]
    assert data["frontier"] and all(q["job"] == "4242" for q in data["frontier"])


def test_a_truncated_result_is_an_invalid_point_and_the_rest_is_shown(job, tmp_path):
    import shutil
    copy = tmp_path / "copy"
    shutil.copytree(job, copy)
    (victim,) = copy.rglob("results_concurrency_256_*.json")
    victim.write_bytes(victim.read_bytes()[:300])
    done = sweep(str(copy), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    bad = [p for p in data["points"] if p["concurrency"] == 256 or not p["valid"]]
    assert len(bad) == 1 and not bad[0]["valid"] and "truncated JSON" in bad[0]["invalid_reasons"][0]
    assert not bad[0]["on_frontier"]
    assert len([p for p in data["points"] if p["valid"]]) == 4
    md = sweep(str(copy)).stdout  # not a terminal: Markdown
    assert "| 256 |" in md and "no: " in md and "truncated JSON" in md


def test_html_draws_every_point_with_its_verdict_and_no_script(job, tmp_path):
    out = tmp_path / "sweep.html"
    done = sweep(str(job), "-o", str(out))
    assert done.returncode == 0, done.stderr
    page = out.read_text()
    assert "Content-Security-Policy" in page and "<script" not in page
    assert page.count('class="point"') == 5 and page.count('data-rule="kv_exhausted"') == 2
    assert 'class="frontier-line"' in page


def test_a_folder_without_results_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "logs").mkdir()
    done = sweep(str(tmp_path))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "no sweep results" in done.stderr


def test_the_page_in_a_real_browser_shows_every_point_and_does_not_overflow(job, tmp_path):
    """Debian's chromium (Playwright, no download): at 1280 and 800 px nothing overflows, the chart
    comes first with one mark per point inside its plot, and a point's tooltip says its verdict."""
    from tests.report.test_report_browser import ARGS, CHROMIUM, OVERFLOW_JS
    if CHROMIUM is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    out = tmp_path / "sweep.html"
    assert sweep(str(job), "-o", str(out)).returncode == 0
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        for width in (1280, 800):
            page = browser.new_page(viewport={"width": width, "height": 900})
            page.goto(out.resolve().as_uri())
            over = page.evaluate(OVERFLOW_JS)
            assert over["scrollWidth"] <= width and not over["over"], over
            marks = page.evaluate("""() => {
              const svg = document.querySelector('svg.frontier').getBoundingClientRect();
              return [...document.querySelectorAll('svg.frontier .point')].map(m => {
                const b = m.getBoundingClientRect();
                return {c: m.dataset.concurrency, title: m.querySelector('title').textContent,
                        inside: b.left >= svg.left && b.right <= svg.right && b.top >= svg.top && b.bottom <= svg.bottom,
                        above: b.top < document.querySelector('#points').getBoundingClientRect().top};
              });
            }""")
            assert sorted(int(m["c"]) for m in marks) == [64, 128, 256, 512, 1024]
            assert all(m["inside"] and m["above"] for m in marks), marks
            by_c = {int(m["c"]): m["title"] for m in marks}
            assert "Bottleneck: decode KV cache" in by_c[1024] and "No bottleneck found" in by_c[64]
            page.close()
        browser.close()


def test_two_jobs_each_get_a_frontier_and_the_one_with_twice_the_kv_cache_leads(job, tmp_path):
    """Job 4343 is the same deployment with a decode KV cache of 192 blocks instead of 96: its cache
    runs out one concurrency later, and at a tokens/s per user both serve it carries more tokens/s per GPU."""
    from pdwatch.sim.sweep import sweep_config
    write_sweep_job(tmp_path / "bigger", cfg=sweep_config(decode_blocks=192), job_id="4343")
    done = sweep(str(job), str(tmp_path / "bigger"), "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    limits = {f["job"]: f["limits"] for f in data["frontiers"]}
    assert "from C=512 decode KV cache" in limits["4242"] and "from C=1024 decode KV cache" in limits["4343"]
    m = re.fullmatch(r"job 4343 is (\d+)% ahead of job 4242 at ([\d.,]+) tokens/s per user", data["comparison"])
    assert m, data["comparison"]
    x = float(m.group(2).replace(",", ""))

    def at(job_id: str) -> float:  # the frontier between its two points around x, read here
        pts = sorted((p["tps_per_user"], p["tps_per_gpu"]) for p in data["points"]
                     if p["job"] == job_id and p["on_frontier"])
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if x0 <= x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0) if x1 > x0 else y0
        raise AssertionError(f"{x} outside job {job_id}'s frontier")
    assert round(100 * (at("4343") - at("4242")) / at("4242")) == int(m.group(1))


def test_a_folder_of_links_to_jobs_is_read(job, tmp_path):
    """A campaign is often a folder of symlinks to the jobs it compares."""
    (tmp_path / "campaign").mkdir()
    (tmp_path / "campaign" / "first").symlink_to(job / "outputs" / "4242", target_is_directory=True)
    (tmp_path / "campaign" / "loop").symlink_to(tmp_path / "campaign", target_is_directory=True)  # bounded by depth
    done = sweep(str(tmp_path / "campaign"), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert sorted(p["concurrency"] for p in json.loads(done.stdout)["points"]) == [64, 128, 256, 512, 1024]


def test_the_terminal_chart_labels_every_point_once_and_the_table_follows(job):
    import re as _re
    from pdwatch.session.sweep_verdicts import judge_sweep
    from pdwatch.views.report import sweep as view
    text = _re.sub(r"\x1b\[[0-9;]*m", "", view.terminal(view.build(judge_sweep([str(job)])), 100, 24))
    chart, table = text.split("# pdwatch sweep", 1)
    labelled = [int(c) for label in _re.findall(r"C=([\d/]+)", chart) for c in label.split("/")]
    assert sorted(labelled) == [64, 128, 256, 512, 1024]  # near points share one label, none is lost
    assert "red: critical" in chart and "tokens/s per user" in chart
    assert "| 1024 |" in table and "## Frontier" in table
