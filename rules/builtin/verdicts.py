"""The verdict of each built-in rule: its priority and the one line it makes when it decides.

A rule added here (its YAML beside this file) gets its verdict line by adding its id to
``PRIORITY`` (where it stands among the others when findings of the same severity compete) and a
function to ``WORDING``; without one its verdict is "Finding: <rule> on <endpoints>". A wording
function reads the deciding group (its rule, severity, endpoints, ``label`` and ``members``: the
findings, with their ``start`` and ``engines``), the figures of the endpoints it names (``mine``)
and of every serving endpoint (``serving``): each endpoint's ``role``, ``engines``, ``has_stats``
and per-engine means over its last window (``prompt_tps``, ``gen_tps``, ``running``, ``waiting``,
``kv_max_pct``). It never reads a finding's text.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, NamedTuple

from pdwatch.units import engine_ranges, fmt_clock, fmt_count, fmt_pct, fmt_short

# Worst first among findings of one severity: failures (the frontend, through which every request
# enters, first; a worker's death or failed start before what it causes), then requests failing,
# bottlenecks, slowdowns, blind spots, a capacity note (the lints and any other rule come after, in
# their order of start).
PRIORITY = ("frontend_lost", "engine_failure", "worker_lost", "stalled", "startup_failed", "kv_transfer_errors",
            "requests_failing", "kv_exhausted", "prefill_bound", "ttft_prefill_queue", "not_disaggregating",
            "decode_bound", "seq_cap_bound", "cudagraph_overflow", "dp_imbalance", "stats_missing",
            "status_server_failed", "capacity")
SERVING = ("prefill", "decode", "aggregated", "unknown")  # the roles whose load a verdict reports


class Said(NamedTuple):
    kind: str  # failure | bottleneck | slowdown | blind | capacity | config
    title: str
    detail: str
    figures: dict[str, float] = {}  # the numbers in the line, by name (for tests and tools)


Wording = Callable[[Any, list[Any], list[Any], list[Any]], Said]


def _engine_failure(g, members, mine, serving) -> Said:
    engines = sorted({e for f in members for e in (f.engines or ())})
    where = g.label
    if len(g.endpoints) == 1 and engines:
        where += f" engine{'s' if len(engines) > 1 else ''} {_engines(engines)}"
    died = "died" if len(members) == 1 else f"died ({len(members)} times)"
    return Said("failure", "Failure: engine died", f"{where} {died} at {fmt_clock(members[0].start)}"
                + _still_up(g, serving))


def _frontend_lost(g, members, mine, serving) -> Said:
    if g.end is not None:  # it came back (a report of the whole run)
        return Said("failure", "Failure: frontend died",
                    f"{g.label} was down from {fmt_clock(g.start)} to {fmt_clock(g.end)}: the job served nothing "
                    "(its log went silent, its workers lost their connection from it)")
    down = "is down" if len(g.endpoints) == 1 else "are down"
    return Said("failure", "Failure: frontend died",
                f"{g.label} {down} since {fmt_clock(g.start)}: the job serves nothing "
                "(its log went silent, its workers lost their connection from it)")


def _worker_lost(g, members, mine, serving) -> Said:
    one = len(g.endpoints) == 1
    if g.end is not None:  # its log spoke again (a report of the whole run): it was frozen, or restarted
        return Said("failure", "Failure: worker lost",
                    f"{g.label} {'was' if one else 'were'} lost from {fmt_clock(members[0].start)} to "
                    f"{fmt_clock(g.end)} ({'its log' if one else 'their logs'} went silent and the frontend lost "
                    f"{'it' if one else 'them'}; {'it' if one else 'they'} spoke again then: frozen, or restarted)")
    detail = (f"{g.label} {'is' if one else 'are'} gone since {fmt_clock(members[0].start)} "
              f"({'its log' if one else 'their logs'} went silent; the frontend lost {'it' if one else 'them'})")
    return Said("failure", "Failure: worker died", detail + (_still_up(g, serving) or "; no serving endpoint left"))


def _stalled(g, members, mine, serving) -> Said:
    """Every serving endpoint stalled at once is the job hung, not one endpoint."""
    judged = {f.name for f in serving if f.has_stats}
    whole = len(judged) > 1 and judged <= set(g.endpoints)
    who = f"all {len(judged)} endpoints ({g.label})" if whole else g.label
    if g.end is not None:  # it moved again (a report of the whole run)
        detail = (f"{who} made no progress from {fmt_clock(g.start)} to {fmt_clock(g.end)} with requests in flight, "
                  "and no stop, error or death logged")
    else:
        one = len(g.endpoints) == 1
        detail = (f"{who} {'has' if one and not whole else 'have'} made no progress since {fmt_clock(g.start)} "
                  "with requests in flight, and no stop, error or death logged")
    title = "Failure: job hung" if whole else "Failure: endpoint hung"
    return Said("failure", title, detail + ("" if whole else _still_up(g, serving)))


def _startup_failed(g, members, mine, serving) -> Said:
    verb = "failed" if len(g.endpoints) == 1 else "each failed"
    return Said("failure", "Failure: worker did not start",
                f"{g.label} {verb} to start (an error before it was ready, no stats line since)"
                + (_still_up(g, serving) or "; no serving endpoint up"))


def _requests_failing(g, members, mine, serving) -> Said:
    if g.end is not None:
        return Said("failure", "Failure: requests failed",
                    f"{g.label} answered inference requests with errors from {fmt_clock(g.start)} to {fmt_clock(g.end)}")
    return Said("failure", "Failure: requests failing",
                f"{g.label} answers inference requests with errors since {fmt_clock(g.start)}")


def _kv_transfer(g, members, mine, serving) -> Said:
    return Said("failure", "Failure: KV transfers", f"errors on {g.label}")


def _kv_exhausted(g, members, mine, serving) -> Said:
    role = _role_word(mine)
    parts = []
    numbers: dict[str, float] = {}
    for f in mine[:3]:
        bits = []
        if f.kv_max_pct is not None:
            bits.append(f"{fmt_pct(f.kv_max_pct)} KV")
            numbers[f"{f.name}.kv_max_pct"] = f.kv_max_pct
        per = " per engine" if f.engines > 1 else ""
        if f.waiting is not None:
            bits.append(f"~{fmt_count(f.waiting)} waiting{per if f.running is None else ''}")
            numbers[f"{f.name}.waiting_per_engine"] = f.waiting
        if f.running is not None:
            bits.append(f"{fmt_count(f.running)} running{per}")
        parts.append(f"{f.name} at {', '.join(bits)}" if bits else f.name)
    detail = "; ".join(parts) or g.label
    if len(mine) > 3:
        detail += f" (+{len(mine) - 3} more)"
    feeders = [f for f in serving if f.role == "prefill" and f.has_stats]
    if role == "decode " and feeders:
        wait = _max(f.waiting for f in feeders)
        if wait is not None:
            detail += "; prefill " + ("not queueing" if wait < 0.5 else f"~{fmt_count(wait)} waiting per engine")
    return Said("bottleneck", f"Bottleneck: {role}KV cache", detail, numbers)


def _prefill_bound(g, members, mine, serving) -> Said:
    total = len([f for f in serving if f.role == "prefill"]) or len(mine)
    tps = _mean(f.prompt_tps for f in mine)
    wait = _mean(f.waiting for f in mine)
    detail = f"{len(set(g.endpoints))}/{total} prefill endpoint{'s' if total != 1 else ''} saturated"
    bits = _bits(f"≈{fmt_short(tps)} tok/s per engine" if tps is not None else None,
                 f"~{fmt_count(wait)} waiting" if wait is not None else None)
    kv = _max(f.kv_max_pct for f in serving if f.role == "decode" and f.has_stats)
    if kv is not None:
        bits += f"; decode at ≤{fmt_pct(kv)} KV"
    numbers = {k: v for k, v in (("prompt_tps_per_engine", tps), ("waiting_per_engine", wait),
                                 ("decode_kv_max_pct", kv)) if v is not None}
    return Said("bottleneck", "Bottleneck: prefill", detail + bits, numbers)


def _ttft_prefill_queue(g, members, mine, serving) -> Said:
    wait = _max(f.waiting for f in serving if f.role == "prefill" and f.has_stats)
    detail = "time to first token rising at the frontend"
    if wait is not None:
        detail += f" while prefill queues (~{fmt_count(wait)} waiting per engine)"
    return Said("bottleneck", "Bottleneck: prefill", detail)


def _not_disaggregating(g, members, mine, serving) -> Said:
    tps = _mean(f.prompt_tps for f in mine)
    detail = f"{g.label} computes prompts itself" + _bits(f"≈{fmt_short(tps)} tok/s per engine" if tps is not None
                                                          else None)
    return Said("bottleneck", "Bottleneck: prefill bypassed",
                detail + " and receives no KV transfers: the prefill workers idle")


def _decode_bound(g, members, mine, serving) -> Said:
    tps, wait, kv = _mean(f.gen_tps for f in mine), _mean(f.waiting for f in mine), _max(f.kv_max_pct for f in mine)
    detail = f"{g.label} at its generation ceiling" + _bits(
        f"≈{fmt_short(tps)} tok/s per engine" if tps is not None else None,
        f"~{fmt_count(wait)} waiting" if wait is not None else None)
    if kv is not None:
        detail += f"; KV at ≤{fmt_pct(kv)}"
    return Said("bottleneck", "Bottleneck: decode", detail)


def _seq_cap(g, members, mine, serving) -> Said:
    run, wait, kv = _mean(f.running for f in mine), _mean(f.waiting for f in mine), _max(f.kv_max_pct for f in mine)
    detail = f"{g.label} runs at its max_num_seqs" + _bits(
        f"~{fmt_count(run)} running per engine" if run is not None else None,
        f"~{fmt_count(wait)} waiting" if wait is not None else None,
        f"KV ≤{fmt_pct(kv)}" if kv is not None else None)
    return Said("bottleneck", "Bottleneck: max_num_seqs", detail)


def _cudagraph(g, members, mine, serving) -> Said:
    engines = sorted({e for f in members for e in (f.engines or ())})
    where = g.label + (f" engine{'s' if len(engines) > 1 else ''} {_engines(engines)}"
                       if len(g.endpoints) == 1 and engines else "")
    return Said("slowdown", "Slowdown: CUDA graphs too small", f"{where} run batches above the largest captured graph")


def _dp_imbalance(g, members, mine, serving) -> Said:
    return Said("slowdown", "Slowdown: DP imbalance", f"one engine of {g.label} carries far more load than its siblings")


def _stats_missing(g, members, mine, serving) -> Said:
    blind = len(set(g.endpoints))
    total = len(serving) or blind
    verb = "prints" if blind == 1 else "print"
    return Said("blind", "Blind spot: no stats",
                f"{g.label} {verb} no stats lines; {blind}/{total} serving endpoint{'s' if total != 1 else ''} "
                "cannot be judged")


def _status_server_failed(g, members, mine, serving) -> Said:
    verb = "serves" if len(g.endpoints) == 1 else "serve"
    return Said("blind", "Blind spot: no status server",
                f"{g.label} {verb} no /health or /metrics (the status server's port is taken)")


def _capacity(g, members, mine, serving) -> Said:
    run = _max(f.running * f.engines for f in mine if f.running is not None)
    detail = f"{g.label} runs near the concurrency its KV cache was sized for"
    if run is not None:
        detail += f" (~{fmt_count(run)} running)"
    return Said("capacity", "Near capacity", detail)


# What each configuration lint is about, in the verdict's few words (a lint decides nothing: it shows
# only where nothing else fired and no configuration note is counted).
LINT_WORDS = {
    "lint_api_server_count": "more than one API server, so no stats lines",
    "lint_ssm_conv_layout": "SSM conv-state layout is not DS",
    "lint_async_scheduling_off": "async scheduling is off",
    "lint_prefix_caching_unused": "prefix caching finds nothing to reuse",
    "lint_block_size_mismatch": "prefill and decode KV block sizes differ",
}


def generic(g, members, mine, serving) -> Said:
    """The verdict of a rule without wording of its own (a user's rule, a lint)."""
    if g.rule.startswith("lint_"):
        words = LINT_WORDS.get(g.rule, g.rule.removeprefix("lint_").replace("_", " "))
        return Said("config", "Configuration", f"{g.label}: {words}")
    return Said("bottleneck" if g.severity != "info" else "capacity", f"Finding: {g.rule}", f"on {g.label}")


WORDING: dict[str, Wording] = {
    "frontend_lost": _frontend_lost, "engine_failure": _engine_failure, "worker_lost": _worker_lost,
    "stalled": _stalled, "startup_failed": _startup_failed, "kv_transfer_errors": _kv_transfer, "requests_failing": _requests_failing,
    "kv_exhausted": _kv_exhausted, "prefill_bound": _prefill_bound, "ttft_prefill_queue": _ttft_prefill_queue,
    "not_disaggregating": _not_disaggregating, "decode_bound": _decode_bound, "seq_cap_bound": _seq_cap,
    "cudagraph_overflow": _cudagraph, "dp_imbalance": _dp_imbalance, "stats_missing": _stats_missing,
    "status_server_failed": _status_server_failed, "capacity": _capacity,
}


# ------------------------------------------------------------------------------------------ helpers


def _still_up(g: Any, serving: list[Any]) -> str:
    alive = [f for f in serving if f.name not in g.endpoints]
    return f"; {len(alive)} other endpoint{'s' if len(alive) != 1 else ''} still up" if alive else ""


def _bits(*bits: str | None) -> str:
    """' (a, b)' of the bits that are known, or ''."""
    known = [b for b in bits if b]
    return f" ({', '.join(known)})" if known else ""


def _engines(engines: list[int]) -> str:
    return engine_ranges(engines, dash="–", sep=",", shortest_run=3)


def _role_word(figs: list[Any]) -> str:
    roles = {f.role for f in figs}
    role = roles.pop() if len(roles) == 1 else None
    return f"{role} " if role in ("prefill", "decode") else ""


def _max(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return max(vals) if vals else None


def _mean(values: Iterable[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None
