"""Hostile log text in the Markdown and JSON reports: only ever inside code fences / JSON strings."""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stdout
from pathlib import Path

from pdwatch.cli import main

SAMPLE = Path(__file__).resolve().parents[2] / "samples" / "kv-exhausted"
PAYLOAD = ("[bold]x[/] [@click=app.quit]q[/] [link=https://evil.example]l[/link] <script>alert(1)</script> "
           "<a href=\"javascript:alert(1)\">j</a> {{ template }} ${jndi:x} | cell | `tick` ```fence")
ESCAPES = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b[2J\x1b[10;10H"


def _hostile_run(tmp: Path) -> Path:
    folder = tmp / "run"
    shutil.copytree(SAMPLE, folder)
    for log in folder.glob("*decode*.out"):
        lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
        log.write_text("".join(line.rstrip("\n") + f" {ESCAPES}{PAYLOAD}\n" if "Avg prompt throughput" in line
                               else line for line in lines), encoding="utf-8")
    return folder


def _report(folder: Path, fmt: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        main(["report", "--format", fmt, str(folder)])
    return out.getvalue()


def _outside_fences(markdown: str) -> str:
    outside, fence = [], None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
            continue
        if fence is not None:
            if stripped == fence:
                fence = None
            continue
        outside.append(line)
    return "\n".join(outside)


def test_markdown_report_keeps_hostile_text_in_fences_and_drops_escapes(tmp_path):
    markdown = _report(_hostile_run(tmp_path), "md")
    assert "kv_exhausted" in markdown
    assert PAYLOAD in markdown  # quoted whole, as the log had it (escape sequences removed)
    assert "\x1b" not in markdown and "\x07" not in markdown
    outside = _outside_fences(markdown)
    for raw in ("<script>", "[@click", "javascript:alert", "{{ template }}"):
        assert raw not in outside


def test_json_report_carries_the_text_as_data(tmp_path):
    report = json.loads(_report(_hostile_run(tmp_path), "json"))
    quoted = [e["text"] for f in report["findings"] for e in f.get("evidence", []) if e.get("text")]
    stats_lines = [text for text in quoted if "Avg prompt" in text]
    assert stats_lines and all(PAYLOAD in text and "\x1b" not in text for text in stats_lines)


def test_a_command_the_rule_quotes_stays_one_code_span_and_its_flags_are_not_marked_again():
    """worker_lost's fix quotes `sacct -j JOBID --format=...`: the command is one code span (its
    flag not cut out of it), the prose around it has its flags marked, and a table cell keeps a
    pipe inside a command from ending the cell. HTML: the same, escaped."""
    from pdwatch.views.report import html, markdown

    text = 'Run `dmesg -T | grep -i "<oom>"` then lower --gpu-memory-utilization; `sacct --format=State`'
    assert markdown._text(text) == ('Run `dmesg -T | grep -i "<oom>"` then lower `--gpu-memory-utilization`; '
                                    '`sacct --format=State`')
    assert markdown._text(text, in_table=True).startswith('Run `dmesg -T \\| grep')
    assert markdown._text("a lone ` backtick [x]") == "a lone \\` backtick \\[x\\]"
    assert html._prose(text) == ('Run <code>dmesg -T | grep -i &quot;&lt;oom&gt;&quot;</code> then lower '
                                 '<code class="cli">--gpu-memory-utilization</code>; <code>sacct --format=State</code>')
