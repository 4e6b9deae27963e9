"""One match for the commonest shapes of the hottest lines, before the general path.

A busy deployment writes one stats line per engine every few seconds, and nearly all
of them have the same shape: a vLLM header behind at most one process prefix, then
``[Engine NNN: ]Avg prompt throughput: …, Prefix cache hit rate: …%``. One regex over
the raw bytes reads such a line whole, about five times cheaper than cleaning it,
splitting its envelope and splitting its fields. Anything else — ANSI codes, a CR, a
rank or ip in the prefix, an optional field, ``nan`` — does not match and takes the
general path, which gives the same values (``tests/parsers/test_fastlane.py`` checks
both paths agree on every stats line of the real logs and of generated ones). The
speculative-decoding line, one per engine per interval too, gets the same treatment.
"""

from __future__ import annotations

# Python's own ``re`` here, not ``regex``: on these anchored, backtrack-free patterns it
# matches 2-2.5x faster (measured: a stats line 2.1 us against 5.4 us).
import re

_NUM = r"(\d+(?:\.\d+)?)"
# The message of a common stats line: engine, prompt, generation, running, waiting, KV, prefix, external prefix.
_STATS_BODY = (
    r"(?:Engine (\d+): )?"
    r"Avg prompt throughput: " + _NUM + r" tokens/s, Avg generation throughput: " + _NUM + r" tokens/s, "
    r"Running: (\d+) reqs, Waiting: (\d+) reqs, GPU KV cache usage: " + _NUM + r"%, "
    r"Prefix cache hit rate: " + _NUM + r"%(?:, External prefix cache hit rate: " + _NUM + r"%)?"
)
_STATS_MESSAGE = re.compile(_STATS_BODY)
# The whole line: a plain vLLM header behind at most one process prefix, then the message.
_STATS_LINE = re.compile(
    rb"(?:\(([A-Za-z_][A-Za-z0-9_\-]*) pid=(\d+)\) )?"
    rb"(INFO|DEBUG|WARNING) (\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))? \[[A-Za-z0-9_./\-]+:\d+\] "
    + _STATS_BODY.encode()
)
STATS_ENGINE_KEY = "_engine"  # private value: the engine named by the line itself
_HEADER_GROUPS = 6  # proc, pid, level, month-day, clock, fraction

StatsMatch = tuple  # the line regex's groups, in pattern order


def match_stats(raw: bytes) -> StatsMatch | None:
    """The groups of a common-shape stats line, or None when the general path must read it."""
    m = _STATS_LINE.fullmatch(raw)
    return m.groups() if m else None


def stats_values(groups: StatsMatch) -> dict:
    """Values in the order the general parser gives them, plus the engine the line names (or None)."""
    return _values(groups[_HEADER_GROUPS:])


def stats_message(msg: str) -> dict | None:
    """``stats_values`` for a message already out of its envelope (Dynamo-wrapped lines), or None."""
    m = _STATS_MESSAGE.fullmatch(msg)
    return _values(m.groups()) if m else None


def _values(body: tuple) -> dict:
    engine, prompt, generation, running, waiting, kv, prefix, external = body
    values = {
        "prompt_tps": float(prompt),
        "gen_tps": float(generation),
        "running": int(running),
        "waiting": int(waiting),
        "kv_usage_pct": float(kv),
        "prefix_hit_pct": float(prefix),
    }
    if external is not None:
        values["external_prefix_hit_pct"] = float(external)
    values[STATS_ENGINE_KEY] = int(engine) if engine is not None else None
    return values


_SPEC_DECODE = re.compile(
    r"Mean acceptance length: " + _NUM + r", Accepted throughput: " + _NUM + r" tokens/s, "
    r"Drafted throughput: " + _NUM + r" tokens/s, Accepted: (\d+) tokens, Drafted: (\d+) tokens, "
    r"Per-position acceptance rate: (\d+(?:\.\d+)?(?:, \d+(?:\.\d+)?)*), Avg Draft acceptance rate: " + _NUM + r"%"
)


def spec_decode_message(body: str) -> dict | None:
    """Values of the v0.10+ ``SpecDecoding metrics:`` body (text after that label), or None."""
    m = _SPEC_DECODE.fullmatch(body)
    if m is None:
        return None
    mean, accepted_tps, drafted_tps, accepted, drafted, per_position, rate = m.groups()
    return {
        "per_position_acceptance": [float(x) for x in per_position.split(", ")],
        "mean_acceptance_length": float(mean),
        "accepted_tps": float(accepted_tps),
        "drafted_tps": float(drafted_tps),
        "accepted_tokens": int(float(accepted)),  # as the general path converts them
        "drafted_tokens": int(float(drafted)),
        "acceptance_rate_pct": float(rate),
    }
