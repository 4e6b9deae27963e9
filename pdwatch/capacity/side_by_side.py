"""The capacity as the log states it, the estimate beside it and the gap: as table lines and as JSON."""

from __future__ import annotations

import textwrap
from typing import Any

from pdwatch.capacity.gap import FROM_CONFIG, LARGE_GAP, Estimate, Gap
from pdwatch.capacity.logged import Figure, LoggedCapacity

_WIDTH = 100


def text_lines(logged: LoggedCapacity, estimate: Estimate | None, gap: Gap | None, no_estimate: str) -> list[str]:
    """The block that opens ``pdwatch capacity``'s table when the log states the KV cache."""
    est = estimate
    kv = "" if est is None else f" ({est.kv_memory.value:.2f} GiB of KV memory, {est.kv_memory.source})"
    rows = [("", "as the log says", "estimate from the model's shape" + kv)]
    if logged.blocks is not None:
        rows.append(("KV blocks", _at(f"{logged.blocks.value:,}", logged.blocks), _or_dash(est and f"{est.blocks:,}")))
    if logged.tokens is not None:
        rows.append(("KV cache size", _at(f"{logged.tokens.value:,} tokens", logged.tokens),
                     _or_dash(est and est.tokens is not None and f"{est.tokens:,} tokens")))
    if logged.max_concurrency is not None:
        per = f" for {logged.request_tokens:,} tokens" if logged.request_tokens else ""
        rows.append(("maximum concurrency", _at(f"{logged.max_concurrency.value:,.2f}x{per}", logged.max_concurrency),
                     _or_dash(est and est.max_concurrency is not None and f"{est.max_concurrency:,.2f}x")))
    w0, w1 = (max(len(r[i]) for r in rows) for i in (0, 1))
    out = [f"Capacity, {logged.origin()}; the estimate beside it"]
    out += [f"   {a:<{w0}}  {b:<{w1}}  {c}".rstrip() for a, b, c in rows]
    out += textwrap.wrap(_verdict(gap, no_estimate), _WIDTH, initial_indent="   ", subsequent_indent="   ",
                         break_on_hyphens=False)
    return out + [""]


def _at(text: str, figure: Figure) -> str:
    return f"{text} ({figure.where()})"


def _or_dash(text: Any) -> str:
    return text if text else "—"


def _verdict(gap: Gap | None, no_estimate: str) -> str:
    if gap is None:
        return f"No estimate to set beside it: {no_estimate}"
    summary = summary_text(gap)
    return summary[0].upper() + summary[1:] + (f". Why: {gap.text}." if gap.large else ".")


def summary_text(gap: Gap) -> str:
    """'the log's capacity is 0.24% of the estimate (more than 25% below it)'."""
    pct = 100 * gap.log_over_estimate
    share = f"{pct:.2f}%" if pct < 10 else f"{pct:.0f}%"
    what = "the estimate" if gap.estimate_from == FROM_CONFIG else gap.estimate_from
    side = "below" if gap.log_over_estimate < 1 else "above"
    return f"the log's capacity is {share} of {what}" + (f" (more than {LARGE_GAP:.0%} {side} it)" if gap.large
                                                           else f" (within {LARGE_GAP:.0%})")


def to_json(logged: LoggedCapacity | None, estimate: Estimate | None, gap: Gap | None) -> dict[str, Any]:
    """``capacity_from_log``, ``estimate`` and ``gap``: each null when unknown."""
    return {
        "capacity_from_log": None if logged is None else logged_json(logged),
        "estimate": None if estimate is None else {
            "blocks": estimate.blocks, "tokens": estimate.tokens, "max_concurrency": estimate.max_concurrency,
            "kv_memory": {"gib": estimate.kv_memory.value, "source": estimate.kv_memory.source}},
        "gap": None if gap is None else gap_json(gap),
    }


def logged_json(logged: LoggedCapacity) -> dict[str, Any]:
    def fig(f: Figure | None, **extra: Any) -> dict[str, Any] | None:
        return None if f is None else {"value": f.value, **extra, "line_no": f.line_no}

    return {"blocks": fig(logged.blocks), "tokens": fig(logged.tokens),
            "max_concurrency": fig(logged.max_concurrency, tokens_per_request=logged.request_tokens),
            "num_gpu_blocks_override": fig(logged.override), "blocks_from_memory": fig(logged.memory_blocks),
            "origin": logged.origin()}


def gap_json(gap: Gap) -> dict[str, Any]:
    """``text``: the reason in words (null within the threshold); ``summary``: the share, in words."""
    return {"log_over_estimate": gap.log_over_estimate, "large": gap.large, "reason": gap.reason, "text": gap.text,
            "estimate_from": gap.estimate_from, "summary": summary_text(gap)}
