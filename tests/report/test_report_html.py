"""The HTML report: one self-contained, well-formed file; log text only ever as escaped text."""

from __future__ import annotations

import copy
import html
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest

from pdwatch.diagnosis import severity_order
from pdwatch.rules.verdict import group_findings
from pdwatch.session.analysis import analyse
from pdwatch.views.report import data
from pdwatch.views.report import html as html_report
from tests.conftest import CPU_LOGS

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "samples"

VOID = {"meta", "br", "hr", "img", "input", "link", "source", "wbr", "col", "area", "base", "embed", "param",
        "track"}
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "main", "header", "footer", "nav", "section",
                "article", "h1", "h2", "h3", "h4", "p", "div", "span", "strong", "code", "pre", "a", "abbr", "ul",
                "li", "dl", "dt", "dd", "table", "thead", "tbody", "tr", "th", "td", "figure", "figcaption", "br",
                "svg", "defs", "pattern", "rect", "line", "circle", "path", "text"}
ALLOWED_ATTRS = {"colspan", "lang", "charset", "http-equiv", "content", "name", "class", "id", "href", "title", "viewbox",
                 "role", "preserveaspectratio", "width", "height", "patternunits", "patterntransform", "x", "y",
                 "x1", "y1", "x2", "y2", "cx", "cy", "r", "d", "fill"}
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")

HOSTILE = ['<script>alert(1)</script>', '"><img src=x onerror=alert(1)>', '<a href="javascript:alert(1)">x</a>',
           "{{ template }}", "[bold]markup[/]", "</pre></td></table><style>body{display:none}</style>"]
HOSTILE_TEXT = " ".join(HOSTILE)
ANSI = "\x1b[31mred\x1b[0m \x1b]8;;http://evil.example/\x07link\x1b]8;;\x07"
HOSTILE_FILE = 'n1_decode_"><img src=x onerror=alert(1)><b>.out'


class Checker(HTMLParser):
    """Well-formedness (every opened tag closed in order), tags, attributes, text, and the charts per endpoint."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.charts: dict[str, int] = {}  # endpoint heading -> SVG charts in its block
        self.articles: list[tuple[str, str]] = []  # (id, class) of each finding card
        self.multiples: dict[str, int] = {}  # endpoint -> small charts in a small-multiples row (alike endpoints)
        self._sm: list[str] | None = None  # the text of the open small multiple's caption
        self._sm_name: str | None = None
        self._block: int | None = None  # stack depth of the open ep-charts div
        self._heading: list[str] | None = None
        self._current: str | None = None

    def handle_starttag(self, tag, attrs):
        self._tag(tag, attrs)
        if tag not in VOID:
            self.stack.append(tag)
        cls = dict(attrs).get("class") or ""
        if tag == "div" and "ep-charts" in cls.split():
            self._block, self._current = len(self.stack), None
        elif tag == "h3" and self._block is not None and self._current is None:
            self._heading = []
        elif tag == "svg" and self._current is not None and "chart" in cls.split():
            self.charts[self._current] += 1
        elif tag == "article":
            self.articles.append((dict(attrs).get("id") or "", cls))
        elif tag == "figcaption" and self.stack[-2:-1] == ["figure"] and self._sm_name is None:
            self._sm = []
        elif tag == "svg" and "mchart" in cls.split() and self._sm_name is not None:
            self.multiples[self._sm_name] = self.multiples.get(self._sm_name, 0) + 1

    def handle_startendtag(self, tag, attrs):
        self._tag(tag, attrs)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "h3" and self._heading is not None:
            self._current = "".join(self._heading).strip()
            self.charts[self._current] = 0
            self._heading = None
        if tag == "div" and self._block is not None and len(self.stack) < self._block:
            self._block = None
        if tag == "figcaption" and self._sm is not None:
            self._sm_name, self._sm = "".join(self._sm).strip(), None
        if tag == "figure":
            self._sm_name = None

    def handle_data(self, text):
        self.text.append(text)
        if self._sm is not None:
            self._sm.append(text)
        if self._heading is not None and len(self._heading) == 0:
            self._heading.append(text)  # the endpoint name: the first text of the heading

    def _tag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def check(page: str) -> Checker:
    """Parse and check what every report must satisfy; return the parser for more checks."""
    parser = Checker()
    parser.feed(page)
    parser.close()
    assert not parser.errors, parser.errors[:5]
    assert not parser.stack, f"unclosed: {parser.stack}"
    assert page.startswith("<!DOCTYPE html>")
    metas = [a for t, a in parser.tags if t == "meta"]
    assert {"charset": "utf-8"} in metas
    csp = [a["content"] for a in metas if (a.get("http-equiv") or "").lower() == "content-security-policy"]
    assert csp and csp[0].startswith(CSP)
    for tag, attrs in parser.tags:
        assert tag in ALLOWED_TAGS, tag
        for name, value in attrs.items():
            assert name in ALLOWED_ATTRS, (tag, name)
            value = value or ""
            assert "http://" not in value and "https://" not in value and "javascript:" not in value.lower()
            if name == "href":
                assert value.startswith("#"), value
            if name == "fill":
                assert re.fullmatch(r"url\(#c\d+-(critical|warning|info)\)", value), value
    style = "".join(page.split("<style>", 1)[1].split("</style>", 1)[0])
    assert "@import" not in style and not re.search(r"url\((?!#)", style)
    assert not CONTROL.search(page), "raw control character in the page"
    numbers = " ".join(str(a.get(k)) for _, a in parser.tags for k in ("x", "y", "width", "height", "d", "cx", "cy"))
    assert not re.search(r"nan|inf", numbers, re.I), "a non-finite number in the SVG"
    return parser


def build(paths: list[str], **kw) -> dict:
    return data.build(analyse(paths, **kw))


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    return {name: build([str(SAMPLES / name)])
            for name in ("kv-exhausted", "prefill-bound", "engine-crash", "stats-missing")}


@pytest.fixture(scope="module")
def s2_report() -> dict:
    return build([str(CPU_LOGS / "s2_seqs4.log")], year=2026)


def finding(rule: str, severity: str, endpoint: str | None, start: str, end: str | None, **extra) -> dict:
    return {"rule": rule, "severity": severity, "endpoint": endpoint, "engines": [0], "start": start, "end": end,
            "summary": f"{rule} summary", "explanation": f"{rule} explanation", "evidence": [],
            "recommendation": f"{rule} fix", **extra}


def set_findings(report: dict, findings: list[dict]) -> None:
    """Put ``findings`` in a report as ``data.build`` does: in the diagnosis' order, with its groups (the
    writer renders both as given)."""
    rows = [SimpleNamespace(**f) for f in findings]
    ordered = severity_order(rows)
    report["findings"] = [dict(vars(r)) for r in ordered]
    report["groups"] = [g.to_json_dict() for g in group_findings(ordered)]


# ------------------------------------------------------------------------------------------ samples


@pytest.mark.parametrize("name", ["kv-exhausted", "prefill-bound", "engine-crash", "stats-missing"])
def test_samples_render_self_contained_with_a_chart_group_per_endpoint(reports, name):
    report = reports[name]
    parser = check(html_report.render(report))
    charted = {n for n, s in report["series"].items() if s["ts"]}
    assert charted, "the samples have stats lines"
    for endpoint in charted:  # tokens/s, KV %, requests; or (issue 17) alike endpoints as one small-multiples row
        assert parser.charts.get(endpoint) == 3 or parser.multiples.get(endpoint) == 1, (endpoint, parser.charts)
    text = "".join(parser.text)
    assert "Headline" in text and "Deployment" in text and "Endpoints over time" in text
    for endpoint in report["deployment"]["endpoints"]:
        assert endpoint["name"] in text


def test_s2_real_log(s2_report):
    page = html_report.render(s2_report)
    parser = check(page)
    assert parser.charts == {"s2_seqs4": 3}
    text = "".join(parser.text)
    # vLLM's CPU backend: tokens/s per worker, big, and no TPS per GPU
    assert s2_report["summary"]["device"] == "CPU" and s2_report["summary"]["tps_per_gpu"] is None
    assert f"{s2_report['summary']['tps_per_worker']:,.0f}" in text and "per worker" in text
    assert "seq_cap_bound" in text and "Raise --max-num-seqs" in text
    assert "s2_seqs4.log:144" in text  # evidence: source:line_no, then the line itself
    assert "Waiting: 44 reqs" in text
    assert "max_num_seqs (4)" in text  # the cap line on the requests chart
    assert "95%" in text  # the KV threshold line


def test_headline_note_and_unknown_numbers(reports):
    report = copy.deepcopy(reports["stats-missing"])
    assert report["summary"]["note"]
    text = "".join(check(html_report.render(report)).text)
    assert "Note:" in text and report["summary"]["note"] in text
    report["summary"].update(total_tps=None, tps_per_gpu=None, prompt_tps=None, gen_tps=None, note=None, gpus=None)
    text = "".join(check(html_report.render(report)).text)
    assert "?" in text and "Note:" in text  # a generic note explains "?"


# ------------------------------------------------------------------------------------------ findings


def test_findings_ordered_by_severity_each_with_range_evidence_and_fix(reports):
    report = copy.deepcopy(reports["kv-exhausted"])
    evidence = [{"source": "x/decode.out", "line_no": 7, "text": "a stats line"}]
    set_findings(report, [
        finding("i_one", "info", "decode_w0", "2026-05-29T14:00:00+00:00", "2026-05-29T14:00:30+00:00"),
        finding("c_two", "critical", "decode_w0", "2026-05-29T14:01:00+00:00", None, evidence=evidence),
        finding("w_three", "warning", None, "2026-05-29T14:00:10+00:00", "2026-05-29T14:02:00+00:00"),
        finding("c_four", "critical", "prefill_w0", "2026-05-29T14:02:00+00:00", "2026-05-29T14:02:30+00:00"),
    ])
    page = html_report.render(report)
    parser = check(page)
    classes = [c for _, c in parser.articles]
    assert classes == ["finding f-critical", "finding f-critical", "finding f-warning", "finding f-info"]
    text = "".join(parser.text)
    order = [text.index(f"{r} fix") for r in ("c_two", "c_four", "w_three", "i_one")]
    assert order == sorted(order)
    assert "x/decode.out:7" in text and "a stats line" in text
    assert "2026-05-29 14:01:00 UTC to the end of the logs" in text
    assert "2026-05-29 14:00:10 UTC to 2026-05-29 14:02:00 UTC (1 min 50 s)" in text
    assert "on the deployment" in text
    for label in ("CRITICAL", "WARNING", "INFO"):  # severity as text, not colour alone
        assert label in text
    # finding periods shaded: on their endpoint, and a deployment-wide one on every chart
    charted = [n for n, s in report["series"].items() if s["ts"]]
    bands = page.count('class="band"')
    # w_three everywhere; c_two + i_one on decode; c_four on prefill_w0. Issue 17: the endpoints alike (the
    # same findings, throughput within 15%) are one small-multiples row, one small chart each.
    full = [n for n in charted if parser.charts.get(n) == 3]
    small = [n for n in charted if parser.multiples.get(n) == 1]
    assert sorted(full + small) == sorted(charted) and "prefill_w0" in full and "decode_w0" in full
    assert bands == 3 * len(full) + len(small) + 3 * 2 + 3
    assert 'fill="url(#c1-warning)"' in page


def test_no_findings_and_thirty_findings(reports):
    report = copy.deepcopy(reports["engine-crash"])
    set_findings(report, [])
    assert "No rule fired" in "".join(check(html_report.render(report)).text)
    severities = ["info", "warning", "critical"]
    set_findings(report, [finding(f"rule_{i}", severities[i % 3], "decode_w0" if i % 2 else None,
                                  f"2026-05-29T14:00:{i:02d}+00:00", None if i % 5 == 0 else "2026-05-29T14:01:00+00:00")
                          for i in range(30)])
    parser = check(html_report.render(report))
    ranks = [severities[::-1].index(c.split("f-")[1]) for _, c in parser.articles]
    assert len(ranks) == 30 and ranks == sorted(ranks)


def test_charts_survive_gaps_single_points_and_flat_series(reports):
    report = copy.deepcopy(reports["kv-exhausted"])
    name = "decode_w0"  # drawn with its own three charts (the prefill endpoints are small multiples)
    series = report["series"][name]
    n = len(series["ts"])
    series["prompt_tps"] = [None if i % 3 == 0 else 0.0 for i in range(n)]
    series["kv_usage_pct"] = [None] * n
    series["running"] = [float("nan")] * n
    parser = check(html_report.render(report))
    # no KV value at all: no empty KV chart, one line saying it is unknown; the requests chart keeps
    # its waiting line (running is all NaN)
    assert parser.charts[name] == 2
    assert "Not in its logs or /metrics, so not charted: KV cache usage %." in "".join(parser.text)
    report["series"] = {name: {k: v[:1] for k, v in series.items()}}  # one point, zero time span
    parser = check(html_report.render(report))
    assert parser.charts[name] == 2
    series = report["series"][name]
    series.update(gen_tps=[None], waiting=[None])  # nothing left to draw: no chart, said once
    parser = check(html_report.render(report))
    text = "".join(parser.text)
    assert not parser.charts and "No endpoint has a value over time: nothing to chart." in text
    assert 'class="chart"' not in html_report.render(report) and 'class="overview"' not in html_report.render(report)


def test_time_ticks():
    def labels(span):
        return [label for _, label in html_report._time_ticks(1_780_000_000, 1_780_000_000 + span, None)]
    assert all(re.fullmatch(r"\d\d:\d\d:\d\d", x) for x in labels(80)) and 3 <= len(labels(80)) <= 7
    assert all(re.fullmatch(r"\d\d:\d\d", x) for x in labels(7200)) and 3 <= len(labels(7200)) <= 7


# ------------------------------------------------------------------------------------------ hostile input


def hostile_log(directory: Path) -> Path:
    lines = ["(APIServer pid=1) INFO 05-29 13:59:00 [api_server.py:1] vLLM API server version 0.18.0",
             "(APIServer pid=1) INFO 05-29 13:59:00 [utils.py:253] non-default args: {'max_num_seqs': 4}"]
    for i in range(12):
        lines.append(f"(APIServer pid=1) INFO 05-29 14:{i // 6:02d}:{i % 6 * 10:02d} [loggers.py:236] Engine 000: "
                     f"Avg prompt throughput: {100 + i}.0 tokens/s, Avg generation throughput: 50.0 tokens/s, "
                     f"Running: 4 reqs, Waiting: 10 reqs, GPU KV cache usage: 1.0%, Prefix cache hit rate: 0.0% "
                     f"{HOSTILE_TEXT} {ANSI}")
    lines += [f"(EngineCore_DP0 pid=1) ERROR 05-29 14:02:00 [core.py:1] EngineCore encountered a fatal error. "
              f"{HOSTILE_TEXT} {ANSI}",
              "(EngineCore_DP0 pid=1) ERROR 05-29 14:02:00 [core.py:1] Traceback (most recent call last):",
              f"(EngineCore_DP0 pid=1) ERROR 05-29 14:02:00 [core.py:1] RuntimeError: {HOSTILE_TEXT}"]
    path = directory / HOSTILE_FILE
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_only_escaped(page: str, parser: Checker) -> str:
    lowered = page.lower()
    assert "<script" not in lowered and "<img" not in lowered and "<b>" not in lowered
    assert "<style>" not in lowered.split("</style>", 1)[1]  # only the report's own style block
    assert not re.search(r"<[^>]*\son\w+=", page), "an event-handler attribute in a tag"
    assert "\x1b" not in page and "\x07" not in page
    for tag, attrs in parser.tags:
        for name in attrs:
            assert not name.startswith("on"), (tag, name)
    return "".join(parser.text)


def test_hostile_log_text_and_file_name_only_as_escaped_text(tmp_path):
    hostile_log(tmp_path)
    report = build([str(tmp_path)], year=2026)
    (endpoint,) = report["deployment"]["endpoints"]
    assert endpoint["name"] == HOSTILE_FILE[:-4]  # the endpoint name comes from the hostile file name
    page = html_report.render(report)
    parser = check(page)
    text = assert_only_escaped(page, parser)
    assert HOSTILE_FILE[:-4] in text  # visible, literally
    assert html.escape(HOSTILE_FILE[:-4], quote=True) in page
    assert parser.charts.get(HOSTILE_FILE[:-4]) == 3
    quoted = [e["text"] for f in report["findings"] for e in f["evidence"]]
    for line in quoted:  # whatever the rules quote, it is there literally once unescaped
        assert line in text
    if quoted:
        for piece in HOSTILE:
            assert piece in text


def _poison(value, payload, key=None):
    """Every string gets the payload, dict keys that are names (series, per_role) too; timestamps of the
    series and severities stay valid so that charts and ordering still have something to show."""
    if isinstance(value, str):
        return value if key in ("ts", "severity") else value + " " + payload
    if isinstance(value, list):
        return [_poison(v, payload, key) for v in value]
    if isinstance(value, dict):
        names = key in ("series", "per_role")
        return {(k + " " + payload if names else k): _poison(v, payload, k) for k, v in value.items()}
    return value


def test_every_string_of_the_report_escaped(reports):
    """Not only evidence: rule text, endpoint names, sources, notices, fact values, role names."""
    report = copy.deepcopy(reports["engine-crash"])
    payload = HOSTILE_TEXT + " " + ANSI + " \u202eevil\u202c \ud800"
    traceback = ("(EngineCore_DP0 pid=1) ERROR 05-29 14:00:00 [core.py:1] EngineCore encountered a fatal error. "
                 "<script>alert(1)</script>\n(EngineCore_DP0 pid=1) ERROR 05-29 14:00:00 [core.py:1] Traceback")
    set_findings(report, [finding("engine_dead", "critical", "decode_w0", "2026-05-29T14:01:50+00:00", None,
                                  evidence=[{"source": "gb200-n004_decode_w0.out", "line_no": 283, "text": traceback}])])
    report["notices"] = ["a notice"]
    for ep in report["deployment"]["endpoints"]:
        ep["key_args"]["kv_connector"] = "Nixl"
    report["summary"]["note"] = "a note"
    report["summary"]["per_role"] = {"decode": report["summary"]["per_role"]["decode"]}
    poisoned = _poison(report, payload)
    assert poisoned["deployment"]["endpoints"][0]["name"].endswith(payload)
    page = html_report.render(poisoned)
    parser = check(page)
    text = assert_only_escaped(page, parser)
    for piece in HOSTILE + ["EngineCore encountered a fatal error. <script>alert(1)</script>"]:
        assert piece in text
    assert "\u241b[31mred" in text  # ESC shown as a visible control picture, never raw
    assert "\u202e" not in page and "<U+202E>evil" in text  # bidi override shown, not obeyed
    assert "\ud800" not in page
    page.encode("utf-8")  # writable as UTF-8 despite the lone surrogate in the input
    assert len([c for c in parser.charts.values() if c == 3]) + len(parser.multiples) == len(poisoned["series"])


# ------------------------------------------------------------------------------------------ CLI


def test_cli_writes_the_html_file(tmp_path):
    out = tmp_path / "out.html"
    result = subprocess.run([sys.executable, "-m", "pdwatch", "report", "samples/kv-exhausted", "--format", "html",
                             "-o", str(out)], capture_output=True, timeout=180, cwd=REPO)
    assert result.returncode in (0, 1), result.stderr
    assert result.stdout == b""
    page = out.read_text(encoding="utf-8")
    parser = check(page)
    assert parser.charts.get("decode_w0") == 3


# ------------------------------------------------------------------------------------------ overview

REAL = REPO / "tests" / "data" / "real"


@pytest.mark.parametrize("capture, title", [
    ("dynamo/agg_kv_pressure", "KV cache usage % per endpoint over the run"),  # its cache was full ~40 s
    ("captures/pd_connector_crash", "tokens/s per endpoint (prompt + generated) over the run"),  # KV never 25%
    ("dynamo/disagg_nixl_port_in_use", "requests/s at the frontend over the run (its log)"),  # 0 tokens/s
])
def test_overview_of_the_run_under_the_verdict(capture, title):
    report = build([str(REAL / capture)])
    page = html_report.render(report)
    parser = check(page)
    text = "".join(parser.text)
    assert page.index('id="verdict"') < page.index('class="overview"') < page.index("<article")
    assert page.count('<svg class="overview"') == 1 and title in text
    # one span per finding, of its severity, linked to its card; one lane per card, labelled by rule
    findings = report["findings"]
    spans = re.findall(r'<a href="#finding-(\d+)"><rect [^>]*class="span sp-(\w+)"><title>([^<]*)</title>', page)
    assert sorted(sev for _, sev, _ in spans) == sorted(f["severity"] for f in findings) and findings
    assert page.count('class="shade sh-') == len(findings)
    for card, _, tip in spans:
        rule = report["groups"][int(card) - 1]["rule"]
        assert f": {rule} on " in tip
    lanes = re.findall(r'class="lanelab">([^<]*)</text>', page)
    assert lanes == [g["rule"] for g in report["groups"]]
    # the time axis is the run's: the first span starts right of the plot's left edge (the start-up)
    xs = [float(x) for x in re.findall(r'<rect x="([\d.]+)" y="\d+" width="[\d.]+" height="11" class="span', page)]
    assert min(xs) > 204


def test_overview_endpoints_by_role_when_many(reports):
    report = reports["kv-exhausted"]  # eight prefill endpoints and one decode
    page = html_report.render(report)
    caption = page.split('class="ovbox"><figcaption>', 1)[1].split("</figcaption>", 1)[0]
    assert "decode (1 endpoint)" in caption and "prefill (8 endpoints)" in caption
    assert page.count('class="line ov') == len([n for n, s in report["series"].items() if s["ts"]])
