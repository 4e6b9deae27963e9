"""The capacity steps as a table a person follows (the article's order), and as JSON."""

from __future__ import annotations

import textwrap
from dataclasses import asdict
from typing import Any

from pdwatch.capacity import arithmetic as ar, side_by_side
from pdwatch.capacity.compare import Comparison, VllmView, unknown_reason
from pdwatch.capacity.estimate import Capacity
from pdwatch.capacity.gap import Estimate, Gap
from pdwatch.capacity.logged import LoggedCapacity
from pdwatch.units import fmt_bytes as b

Row = tuple[str, str, str]  # label, how, result
_WIDTH = 100


def render_text(cap: Capacity, view: VllmView | None, rows: list[Comparison], source: str | None = None,
                logged: LoggedCapacity | None = None, estimate: Estimate | None = None, gap: Gap | None = None) -> str:
    """The steps as a table; when the log states the KV cache (``logged``), that capacity first, the
    estimate beside it and the gap explained."""
    m, s = cap.model, cap.settings
    out = [f"Capacity of {m.architecture}: one engine, per GPU (TP {s['tp'].value})"
           + (f" — {source}" if source else ""), ""]
    if logged is not None:
        out.extend(side_by_side.text_lines(logged, estimate, gap, unknown_reason(cap, view)))
    sections = _sections(cap, logged)
    widths = [max(len(r[i]) for _, rs in sections for r in rs) for i in (0, 1)]
    for n, (heading, section) in enumerate(sections, 1):
        out.append(f"{n}. {heading}")
        out.extend(_table(section, widths))
    if rows:
        out.append("vLLM printed at start-up")
        out.extend(_comparison(rows))
    names = _SETTING_NAMES if cap.linear else [k for k in _SETTING_NAMES if k not in _LINEAR_SETTINGS]
    settings = "; ".join(_setting(k, s[k]) for k in names if k in s)
    out.extend(textwrap.wrap("Settings: " + settings, _WIDTH, subsequent_indent="   ", break_on_hyphens=False))
    for note in cap.notes:
        out.extend(textwrap.wrap("Note: " + note, _WIDTH, subsequent_indent="   ", break_on_hyphens=False))
    return "\n".join(out) + "\n"


def _sections(cap: Capacity, logged: LoggedCapacity | None) -> list[tuple[str, list[Row]]]:
    sections = [("State per layer", _state_rows(cap)), ("KV block", _block_rows(cap)),
                ("KV cache per request", _request_rows(cap))]
    if cap.budget:
        sections.append(("Memory for the KV cache, per GPU", _budget_rows(cap)))
    rows = _concurrency_rows(cap, logged.blocks.value if logged and logged.blocks else None)
    if rows:
        sections.append(("Concurrency" + (" (the estimate; the log's capacity is above)" if logged else ""), rows))
    return sections


def _state_rows(cap: Capacity) -> list[Row]:
    a, s = cap.model.attention, cap.settings
    kv = s["kv_cache_dtype"].value
    nbytes = ar.dtype_bytes(kv)
    if a.mla:
        how = f"latent {a.head_dim} × {nbytes} B {kv}"
    else:
        dims = f"{a.head_dim}" if a.head_dim == a.head_dim_v else f"({a.head_dim} + {a.head_dim_v})"
        how = f"2 (K,V) × {cap.kv_heads_per_rank} KV heads × {dims} × {nbytes} B {kv}"
    layers = a.layers + s["mtp_layers"].value
    rows = [(f"full attention ×{layers}", how, f"{b(cap.attention_bytes_per_token)} per token")]
    lin = cap.linear
    if lin:
        name = "GDN" if lin.kind == "gdn" else "Mamba2"
        ssm, conv = lin.shapes.ssm, lin.shapes.conv
        ssm_dt, conv_dt = lin.ssm_dtype.value, lin.conv_dtype.value
        heads = "V heads" if lin.kind == "gdn" else "heads"
        total = b(lin.bytes, "KiB") + ("" if b(lin.bytes) == b(lin.bytes, "KiB") else f" ({b(lin.bytes)})")
        rows += [
            (f"{name} ×{lin.layers} SSM state", f"{ssm[0]} {heads} × {ssm[1]} × {ssm[2]} × "
                                               f"{ar.dtype_bytes(ssm_dt)} B {ssm_dt}", b(lin.ssm_bytes)),
            ("  conv state", f"{conv[0]} ({_conv_width(cap)}) × {conv[1]} ch × {ar.dtype_bytes(conv_dt)} B {conv_dt}",
             b(lin.conv_bytes)),
            ("  state per request", f"{b(lin.ssm_bytes)} + {b(lin.conv_bytes)}", total),
        ]
    return rows


def _conv_width(cap: Capacity) -> str:
    spec = cap.settings["num_speculative_tokens"].value
    return "kernel − 1" + (f" + {spec} spec" if spec else "")


def _block_rows(cap: Capacity) -> list[Row]:
    blk = cap.block
    per_token = b(blk.attention_bytes_per_token)
    if not blk.state_bytes:
        return [("tokens per block", "no linear state: the block size as given", f"{blk.tokens} tokens"),
                ("block", f"{blk.tokens} × {per_token}", b(blk.page_bytes))]
    how = f"{b(blk.state_bytes, 'KiB')} ÷ {per_token} = {blk.ratio_tokens:g} → multiple of {blk.align}"
    if blk.user_block_size and blk.tokens == blk.user_block_size:
        how = f"--block-size {blk.user_block_size} (≥ {blk.ratio_tokens:g} tokens)"
    return [("tokens per block", how, f"{blk.tokens} tokens"),
            ("block", f"{blk.tokens} × {per_token}", b(blk.page_bytes)),
            ("state page padding", f"{b(blk.page_bytes)} − {b(blk.state_bytes, 'KiB')} = {b(blk.padding_bytes)}",
             f"{blk.padding_pct:.2f}%")]


def _request_rows(cap: Capacity) -> list[Row]:
    r, s = cap.request, cap.settings
    if "isl" in s:
        how = f"{s['isl'].value} ISL + {s['osl'].value} OSL + {s['template_tokens'].value} template"
    else:
        how = s["tokens"].source
    rows = [("tokens", how, f"{r.tokens:,}"),
            ("attention", f"ceil({r.tokens} ÷ {cap.block.tokens}) = {r.attention_blocks_per_layer} × "
                          f"{r.attention_layers} layers", f"{r.attention_blocks} blocks")]
    if cap.linear:
        mode = s["mamba_cache_mode"].value
        rows.append(("linear (GDN/Mamba)", f"{r.linear_blocks_per_layer} × {r.linear_layers} layers ('{mode}' mode)",
                     f"{r.linear_blocks} blocks"))
    rows.append(("per request", f"{r.blocks} blocks × {b(r.page_bytes)}", b(r.bytes)))
    return rows


def _budget_rows(cap: Capacity) -> list[Row]:
    bud = cap.budget
    rows = [("total", bud.total.source, f"{bud.total.value:.2f} GiB"),
            ("× utilization", f"{bud.total.value:.2f} × {bud.utilization.value:g} ({bud.utilization.source})",
             f"{bud.requested_gib:.2f} GiB")]
    for label, amount in bud.deductions:
        rows.append((f"− {label}", amount.source if amount else "not given", f"{amount.value:.2f} GiB" if amount
                     else "0"))
    rows.append(("= KV memory", "", f"{bud.kv_gib:.2f} GiB"))
    if cap.kv_memory and cap.kv_memory.source != "budget":
        rows.append(("KV memory used", cap.kv_memory.source, f"{cap.kv_memory.value:.2f} GiB"))
    return rows


def _concurrency_rows(cap: Capacity, logged_blocks: int | None) -> list[Row]:
    """``logged_blocks``: the pool the log states; the requests it holds are what the cc check meets."""
    e, d, r = cap.engine, cap.deployment, cap.request
    rows: list[Row] = []
    per = r.blocks // cap.grouping.group_size
    if e:
        rows += [("per engine", f"{cap.kv_memory.value:.2f} GiB ÷ {b(r.bytes)}", f"{e.per_request_division:.2f}"),
                 ("whole requests", f"{e.pool_blocks:,} block ids ÷ {per} per request", f"{e.whole_requests}")]
    held = None if logged_blocks is None or not per else logged_blocks // per
    if held is not None and (e or d):
        rows.append(("on the log's pool", f"{logged_blocks:,} block ids ÷ {per} per request", f"{held}"))
    if d:
        where = f"{d.topology.serving} {'decode' if d.topology.disaggregated else 'aggregated'}" if d.topology else cap.settings["engines"].source
        if d.kv_limit_concurrency is not None and (d.decode_engines > 1 or d.topology):
            rows.append(("deployment", f"{d.decode_engines} decode engine(s) ({where}) × {e.whole_requests}",
                         f"{d.kv_limit_concurrency:,}"))
        if d.cc:
            limit = held if held is not None else (None if e is None else e.whole_requests)
            fits = "" if limit is None else (" ✓ fits" if d.per_engine_load <= limit else " ✗ KV runs out")
            rows.append((f"at cc {d.cc:,}", f"ceil({d.cc} ÷ {d.decode_engines}) per engine{fits}",
                         f"{d.per_engine_load:,}"))
            rows.append(("capture size", f"--max-cudagraph-capture-size = {d.per_engine_load} + "
                                         f"{ar.CAPTURE_HEADROOM}", f"{d.capture_size}"))
    return rows


def _table(rows: list[Row], widths: list[int]) -> list[str]:
    w1, w2 = widths
    return [f"   {a:<{w1}}  {h:<{w2}}  = {v}" for a, h, v in rows] + [""]


def _comparison(rows: list[Comparison]) -> list[str]:
    w = max(len(r.name) for r in rows)
    out = []
    for r in rows:
        mark = {True: "✓ same", False: "✗ differs", None: "? not computed"}[r.match]
        if r.match and r.computed != r.printed:
            mark = "✓ within the log's rounding"
        computed = "—" if r.computed is None else _num(r.computed)
        out.append(f"   {r.name:<{w}}  printed {_num(r.printed)} {r.unit}, computed {computed}  {mark}")
        for note in r.notes:
            out.extend(textwrap.wrap(note, _WIDTH, initial_indent="      · ", subsequent_indent="        ",
                                     break_on_hyphens=False))
    return out + [""]


_SETTING_NAMES = ("dtype", "kv_cache_dtype", "conv_dtype", "ssm_dtype", "block_align", "block_size",
                  "mamba_cache_mode", "num_speculative_tokens", "tp", "engines", "max_model_len")


_LINEAR_SETTINGS = ("conv_dtype", "ssm_dtype", "mamba_cache_mode")


def _setting(key: str, value: Any) -> str:
    return f"{key} {value.value} ({value.source})"


def _num(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:,.2f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def to_json(cap: Capacity, view: VllmView | None, rows: list[Comparison], source: str | None = None,
            logged: LoggedCapacity | None = None, estimate: Estimate | None = None, gap: Gap | None = None) -> dict:
    """A JSON-ready dict; byte counts in ``*_bytes``, memory in ``*_gib``, every setting with its source;
    then the capacity the log states, the estimate and the gap (``side_by_side.to_json``)."""
    m, lin, blk, r = cap.model, cap.linear, cap.block, cap.request
    return {
        "source": source,
        "model": {"architecture": m.architecture, "dtype": m.dtype, "full_attention_layers": m.attention.layers,
                  "linear_kind": m.linear.kind if m.linear else None,
                  "linear_layers": m.linear.layers if m.linear else 0, "mtp_layers": m.mtp_layers},
        "settings": {k: {"value": v.value, "source": v.source} for k, v in cap.settings.items()},
        "state": {
            "attention_bytes_per_token": cap.attention_bytes_per_token, "kv_heads_per_rank": cap.kv_heads_per_rank,
            "linear": None if lin is None else {
                "kind": lin.kind, "layers": lin.layers, "conv_shape": list(lin.shapes.conv),
                "ssm_shape": list(lin.shapes.ssm), "conv_dtype": lin.conv_dtype.value, "ssm_dtype": lin.ssm_dtype.value,
                "conv_bytes": lin.conv_bytes, "ssm_bytes": lin.ssm_bytes, "state_bytes": lin.bytes},
        },
        "block": {"tokens": blk.tokens, "page_bytes": blk.page_bytes, "align": blk.align,
                  "ratio_tokens": blk.ratio_tokens, "padding_bytes": blk.padding_bytes,
                  "padding_pct": round(blk.padding_pct, 4)},
        "groups": asdict(cap.grouping),
        "request": _request_json(r),
        "budget": None if cap.budget is None else _budget_json(cap),
        "kv_memory": None if cap.kv_memory is None else {"gib": cap.kv_memory.value, "source": cap.kv_memory.source},
        "engine": None if cap.engine is None else asdict(cap.engine),
        "deployment": None if cap.deployment is None else _deployment_json(cap),
        "vllm": None if view is None else {
            "max_model_len": view.max_model_len, "request": _request_json(view.request),
            "pool_blocks": view.pool_blocks, "max_concurrency": view.max_concurrency, "kv_tokens": view.kv_tokens},
        "comparison": [asdict(c) for c in rows],
        "notes": list(cap.notes),
        **side_by_side.to_json(logged, estimate, gap),
    }


def _request_json(r: ar.RequestKV) -> dict:
    return {"tokens": r.tokens, "attention_blocks_per_layer": r.attention_blocks_per_layer,
            "linear_blocks_per_layer": r.linear_blocks_per_layer, "attention_layers": r.attention_layers,
            "linear_layers": r.linear_layers, "blocks": r.blocks, "bytes": r.bytes}


def _budget_json(cap: Capacity) -> dict:
    bud = cap.budget
    return {"total_gib": {"value": bud.total.value, "source": bud.total.source},
            "utilization": {"value": bud.utilization.value, "source": bud.utilization.source},
            "requested_gib": bud.requested_gib,
            "deductions": [{"name": label, "gib": a.value if a else None, "source": a.source if a else None}
                           for label, a in bud.deductions],
            "kv_gib": bud.kv_gib}


def _deployment_json(cap: Capacity) -> dict:
    d = cap.deployment
    return {"topology": str(d.topology) if d.topology else None, "decode_engines": d.decode_engines,
            "kv_limit_concurrency": d.kv_limit_concurrency, "cc": d.cc, "per_engine_load": d.per_engine_load,
            "capture_size": d.capture_size}
