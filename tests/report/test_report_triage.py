"""The report leads with what is wrong (issue 17): the verdict and the headline first, identical
findings grouped across endpoints (one entry, the endpoints listed, the explanation and fix once),
endpoints worst first, flags as code, evidence marking the values the rule read, the JSON's
added keys (verdict, groups, endpoints_order, highlight) beside the contract's."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from pdwatch.session.analysis import analyse
from pdwatch.views.report import data, markdown
from pdwatch.views.report import html as html_report

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    return {name: data.build(analyse([str(SAMPLES / name)])) for name in ("prefill-bound", "kv-exhausted", "healthy")}


def test_json_keeps_the_contract_and_adds_the_triage(reports):
    report = reports["prefill-bound"]
    for key in ("deployment", "summary", "findings", "endpoints", "capacity", "series", "notices"):
        assert key in report
    assert set(report["findings"][0]) >= {"rule", "severity", "endpoint", "engines", "start", "end", "summary",
                                           "explanation", "evidence", "recommendation"}
    assert set(report["findings"][0]["evidence"][0]) >= {"source", "line_no", "text", "highlight"}
    assert report["verdict"]["text"].startswith("Bottleneck: prefill — 4/4 prefill endpoints saturated")
    assert report["groups"] == [{"rule": "prefill_bound", "severity": "warning",
                                 "endpoints": ["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"],
                                 "label": "prefill_w0–w3", "findings": [0, 1, 2, 3],
                                 "start": report["findings"][0]["start"], "end": None}]
    assert report["endpoints_order"][:4] == ["prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"]
    assert reports["kv-exhausted"]["endpoints_order"][0] == "decode_w0"
    assert reports["healthy"]["verdict"]["kind"] == "ok" and reports["healthy"]["groups"] == []


def test_markdown_leads_with_the_verdict_and_groups_the_findings(reports):
    text = markdown.render(reports["prefill-bound"])
    lines = text.splitlines()
    assert lines[0] == "# pdwatch report"
    assert lines[2].startswith("> **WARNING** · **Bottleneck: prefill** — 4/4 prefill endpoints saturated")
    assert lines[4].startswith("**23,7") and "TPS/GPU**" in lines[4]  # the headline, right under
    assert text.count("### WARNING: `prefill_bound`") == 1  # one entry for the four endpoints
    assert "### WARNING: `prefill_bound` on prefill_w0–w3 (4 endpoints)" in text
    assert text.count("Prompts arrive at") == 1 and text.count("**Fix**") == 1  # explanation and fix once
    for name in ("prefill_w0", "prefill_w1", "prefill_w2", "prefill_w3"):
        assert f"- {name} is prefill-bound" in text  # each endpoint listed
    assert "`--max-num-batched-tokens`" in text  # a flag in backticks
    assert "Qwen3.5 PD article" in text and "in the articles" not in text  # which article, and its figure
    assert "CRITICAL" not in text.split("## Findings")[0] and "info:" not in text  # one severity style
    # the values the rule read, marked under the quoted line inside the fence
    fence = text.split("```text\n", 1)[1].split("\n", 2)
    quoted, marks = fence[0], fence[1]
    assert set(marks.strip()) == {"^", " "}
    assert quoted[marks.index("^"):].startswith("Avg prompt throughput: 42261.7 tokens/s")
    # endpoints worst first
    table = text.split("## Endpoints over the steady state", 1)[1]
    assert table.index("| prefill_w3 |") < table.index("| decode_w0 |")


def test_markdown_footnote_only_under_a_starred_row(reports):
    report = copy.deepcopy(reports["prefill-bound"])
    text = markdown.render(report)
    assert ("*" in text.split("## Deployment", 1)[1].split("\n\n", 2)[1]) == ("`*` GPU count" in text)
    for ep in report["deployment"]["endpoints"]:
        ep["gpus_inferred"] = ep["gpus"] is None  # only rows with no GPU count (no star) are "guessed"
    assert "`*` GPU count" not in markdown.render(report)
    assert '<abbr class="guess"' not in html_report.render(report) and "GPU count partly guessed" not in \
        html_report.render(report)


def test_html_verdict_first_grouped_card_and_marked_evidence(reports):
    page = html_report.render(reports["prefill-bound"])
    body = page.split("<body>", 1)[1]
    first_text = re.sub(r"<[^>]+>", " ", body.split('<dl class="meta">', 1)[0])
    assert "pdwatch report" in first_text and "Bottleneck: prefill" in first_text  # the verdict before anything
    assert body.index('id="verdict"') < body.index('id="headline"') < body.index('id="findings"')
    assert body.count('<article class="finding') == 1
    assert body.count("Prompts arrive at") == 1
    assert '<code class="cli">--max-num-batched-tokens</code>' in body
    assert re.search(r'<strong class="used">Avg prompt throughput: 42261\.7 tokens/s</strong>', body)
    assert "code.cli{white-space:nowrap" in page and "prefers-color-scheme:dark" in page
    # alike endpoints as one small-multiples row; decode (different) keeps its three charts
    assert body.count('<div class="ep-multiples">') == 1 and body.count('class="mchart"') == 4
    assert "prefill_w0–w3" in body.split('<div class="ep-multiples">', 1)[1]


def test_html_hostile_evidence_with_marks_stays_escaped(reports):
    report = copy.deepcopy(reports["prefill-bound"])
    quote = report["findings"][0]["evidence"][0]
    quote["text"] = '<script>alert(1)</script> Waiting: 9 reqs <img src=x onerror=alert(1)>'
    quote["highlight"] = [[26, 41], [-5, 3], [40, 9999]]  # one good span, two bad ones: ignored
    page = html_report.render(report)
    assert "<script>alert" not in page and "<img src=x" not in page
    assert '<strong class="used">Waiting: 9 reqs</strong>' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
