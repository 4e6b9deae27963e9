"""rules/ (pdwatch.rules) is pure: it imports nothing else of pdwatch but ``pdwatch.units`` (durations and
numbers, standard library only), no parsers and no Textual."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_rules_imports_no_app_code():
    code = ("import sys, pdwatch.rules, pdwatch.rules.casefile, pdwatch.rules.engine; "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich') or "
            "(m.startswith('pdwatch.') and not m.startswith('pdwatch.rules') and m != 'pdwatch.units')); "
            "print(bad); assert pdwatch.rules.__file__.startswith(sys.argv[1]), pdwatch.rules.__file__")
    out = subprocess.run([sys.executable, "-c", code, str(REPO / "rules")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_no_eval_in_rules():
    # Rule text reaches only our own parser: no Python or pandas evaluators, no unsafe YAML.
    banned = re.compile(r"(?<![\w.])(eval|exec|compile|__import__)\(|\.(query|eval)\(|yaml\.(load|unsafe_load)\(")
    for path in (REPO / "rules").glob("*.py"):
        hits = [ln for ln in path.read_text().splitlines() if banned.search(ln)]
        assert not hits, (path.name, hits)
