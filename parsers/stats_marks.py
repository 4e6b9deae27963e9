"""Where in a vLLM stats line each field's value stands: a finding's evidence highlights the values its
rule read (the report's ``highlight`` spans, the dashboard's marks)."""

from __future__ import annotations

import re
from typing import Iterable

# How vLLM words each stats field in its log line (its V1 and V0 forms).
_FIELD_PATTERNS = {
    "prompt_tps": r"(?:Avg prompt throughput|prompt throughput)[:=]\s*[\d.,]+(?:\s*tokens/s)?",
    "gen_tps": r"(?:Avg generation throughput|generation throughput)[:=]\s*[\d.,]+(?:\s*tokens/s)?",
    "running": r"Running[:=]\s*\d+(?:\s*reqs)?",
    "waiting": r"Waiting[:=]\s*\d+(?:\s*reqs)?",
    "kv_usage_pct": r"(?:GPU )?KV cache usage[:=]\s*[\d.]+%?",
    "preemptions": r"Preemptions?[:=]\s*\d+",
    "prefix_hit_pct": r"(?<!External )Prefix cache hit rate[:=]\s*[\d.]+%?",
    "external_prefix_hit_pct": r"External prefix cache hit rate[:=]\s*[\d.]+%?",
}


def value_marks(text: str, fields: Iterable[str]) -> list[tuple[int, int]]:
    """Where in a stats line the values of ``fields`` stand, as (start, end) character spans in
    order, overlapping ones merged; none for a field the line does not word as vLLM does."""
    spans = []
    for name in fields:
        pattern = _FIELD_PATTERNS.get(name)
        if pattern is None:
            continue
        m = re.search(pattern, text)
        if m:
            spans.append((m.start(), m.end()))
    spans.sort()
    merged: list[tuple[int, int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
