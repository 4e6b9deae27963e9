"""The HTML report in a real headless Chromium (Debian's ``chromium``, driven by Playwright for
Python with ``executable_path``: no browser download). At 1400 px the prefill-bound report is less
than half its old height and leads with its verdict; at 420 px nothing overflows the page
horizontally (wide tables scroll inside their own box); dark mode is honoured.

Skipped only when no chromium is installed (``.ci/run`` installs it: apt-get install chromium).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)")

# The prefill-bound report measured 6,053 px tall at 1400 px before issue 17 (four copies of the same
# finding, eight identical prefill chart rows first); it must now be under half of that.
HEIGHT_BEFORE = 6053
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === 'auto' || o === 'scroll' || o === 'hidden') return p !== document.documentElement && p !== document.body;
    }
    return false;
  };
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > width + 0.5 && !clipped(el)) out.push(el.tagName + '.' + el.className + ' ' + Math.round(r.right));
  }
  return {scrollWidth: document.documentElement.scrollWidth, width, over: out.slice(0, 10)};
}"""


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("html")
    files = {}
    for sample in ("prefill-bound", "kv-exhausted", "engine-crash"):
        target = out / f"{sample}.html"
        result = subprocess.run([sys.executable, "-m", "pdwatch", "report", f"samples/{sample}", "--format", "html",
                                 "-o", str(target)], capture_output=True, timeout=300, cwd=REPO)
        assert result.returncode in (0, 1), result.stderr
        files[sample] = target
    return files


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield b
        b.close()


def _open(browser, path: Path, width: int, scheme: str = "light"):
    page = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page.goto(path.resolve().as_uri())
    return page


def test_prefill_bound_is_less_than_half_as_tall_and_leads_with_its_verdict(browser, pages, tmp_path):
    page = _open(browser, pages["prefill-bound"], 1400)
    height = page.evaluate("document.documentElement.scrollHeight")
    page.screenshot(path=str(tmp_path / "prefill-bound-1400.png"), full_page=True)
    assert height < HEIGHT_BEFORE / 2, height
    text = page.evaluate("document.querySelector('main').innerText")
    lines = [line for line in text.splitlines() if line.strip()]
    assert lines[0] == "pdwatch report"
    assert "Bottleneck: prefill" in lines[1] and "4/4 prefill endpoints saturated" in lines[1]
    tops = page.evaluate("""() => ['verdict', 'headline', 'findings', 'endpoints'].map(
        id => document.getElementById(id).getBoundingClientRect().top)""")
    assert tops == sorted(tops) and tops[0] < 150  # the verdict in the first screenful, before the rest
    flag = page.evaluate("""() => { const c = [...document.querySelectorAll('code.cli')].find(
        e => e.textContent === '--max-num-batched-tokens'); const r = c.getClientRects(); return r.length; }""")
    assert flag == 1  # the flag on one line: it does not break at its hyphens
    page.close()


@pytest.mark.parametrize("sample", ["prefill-bound", "kv-exhausted", "engine-crash"])
def test_nothing_overflows_at_420_px(browser, pages, sample, tmp_path):
    page = _open(browser, pages[sample], 420)
    result = page.evaluate(OVERFLOW_JS)
    page.screenshot(path=str(tmp_path / f"{sample}-420.png"), full_page=True)
    assert result["scrollWidth"] <= result["width"], result
    assert not result["over"], result
    # the findings stay readable: the verdict and each finding card fit the width
    for selector in ("#verdict", "article.finding"):
        right = page.evaluate(f"Math.max(...[...document.querySelectorAll('{selector}')]"
                              ".map(e => e.getBoundingClientRect().right))")
        assert right <= 420, (selector, right)
    font = page.evaluate("parseFloat(getComputedStyle(document.querySelector('article.finding .summary')).fontSize)")
    assert font >= 14
    page.close()


def test_dark_colour_scheme_is_honoured(browser, pages):
    colours = {}
    for scheme in ("light", "dark"):
        page = _open(browser, pages["kv-exhausted"], 1400, scheme)
        colours[scheme] = page.evaluate("getComputedStyle(document.body).backgroundColor")
        page.close()
    assert colours["light"] == "rgb(255, 255, 255)" and colours["dark"] != colours["light"]
    r, g, b = (int(x) for x in colours["dark"][4:-1].split(","))
    assert r + g + b < 150  # a dark background
