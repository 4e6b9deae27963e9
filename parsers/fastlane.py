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

The other hot lines of a P/D deployment are read whole on the raw bytes the same way
(``LINE_LANES``, used by the scanner): a vLLM or coloured Dynamo header followed by a
KV-transfer (NIXL ``key=value`` form), spec-decode, stats or ``Selected worker`` message,
uvicorn access lines, and Dynamo's ``request completed`` lines. Every lane pattern admits
printable ASCII only, so a line it takes needs no cleaning: its text is its bytes.
"""

from __future__ import annotations

# Python's own ``re`` here, not ``regex``: on these anchored, backtrack-free patterns it
# matches 2-2.5x faster (measured: a stats line 2.1 us against 5.4 us).
import re
from typing import Callable, NamedTuple

import orjson

from .envelope import _DYNAMO_COLOURED

_NUM = r"(\d+(?:\.\d+)?)"
# The message of a common stats line: engine, prompt, generation, running, waiting, KV, prefix, external prefix.
_STATS_BODY = (
    r"(?:Engine (\d+): )?"
    r"Avg prompt throughput: " + _NUM + r" tokens/s, Avg generation throughput: " + _NUM + r" tokens/s, "
    r"Running: (\d+) reqs, Waiting: (\d+) reqs, GPU KV cache usage: " + _NUM + r"%, "
    r"Prefix cache hit rate: " + _NUM + r"%(?:, External prefix cache hit rate: " + _NUM + r"%)?"
)
_STATS_MESSAGE = re.compile(_STATS_BODY)
# On raw bytes the numbers of a line are read by one orjson call, 2-4x cheaper than a float()
# or int() each; so the byte lanes take them only in the forms orjson reads as the general path
# does: a float with its dot (vLLM prints ``.1f``), an int without, no leading zero, at most 18
# digits before the dot (well inside orjson's 64-bit ints).
_DECIMAL = rb"((?:0|[1-9]\d{0,17})\.\d+)"
_WHOLE = rb"(0|[1-9]\d{0,17})"
_STATS_BODY_BYTES = (
    rb"(?:Engine (\d+): )?"
    rb"Avg prompt throughput: " + _DECIMAL + rb" tokens/s, Avg generation throughput: " + _DECIMAL + rb" tokens/s, "
    rb"Running: " + _WHOLE + rb" reqs, Waiting: " + _WHOLE + rb" reqs, GPU KV cache usage: " + _DECIMAL + rb"%, "
    rb"Prefix cache hit rate: " + _DECIMAL + rb"%(?:, External prefix cache hit rate: " + _DECIMAL + rb"%)?"
)
# A plain vLLM header behind at most one process prefix; groups: proc, pid, level, month-day, clock, fraction.
VLLM_HEADER = re.compile(
    rb"(?:\(([A-Za-z_][A-Za-z0-9_\-]*) pid=(\d+)\) )?"
    rb"(INFO|DEBUG|WARNING) (\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))? \[[A-Za-z0-9_./\-]+:\d+\] "
)
# Dynamo's coloured compact header up to the message (``split_raw``'s lane, plus the space);
# groups: timestamp, gap, level, gap, target.
DYNAMO_HEADER = re.compile(_DYNAMO_COLOURED.pattern + rb" ")
# The whole stats line in one match: the vLLM header, then the message.
_STATS_LINE = re.compile(VLLM_HEADER.pattern + _STATS_BODY_BYTES)
STATS_ENGINE_KEY = "_engine"  # private value: the engine named by the line itself
VLLM_HEADER_GROUPS = 6  # proc, pid, level, month-day, clock, fraction
DYNAMO_HEADER_GROUPS = 5  # timestamp, gap, level, gap, target
# Bytes from the end of a Dynamo header's target to the message's leading space.
DYNAMO_TARGET_CLOSE = len(b"\x1b[0m\x1b[2m:\x1b[0m")

StatsMatch = tuple  # the line regex's groups, in pattern order


def match_stats(raw: bytes) -> StatsMatch | None:
    """The groups of a common-shape stats line, or None when the general path must read it."""
    m = _STATS_LINE.fullmatch(raw)
    return m.groups() if m else None


def stats_values(groups: StatsMatch) -> dict:
    """Values in the order the general parser gives them, plus the engine the line names (or None)."""
    return _raw_stats_values(groups[VLLM_HEADER_GROUPS:])


def _raw_stats_values(body: tuple) -> dict:
    engine, external = body[0], body[7]
    # Unpacked into a literal: dict(zip(...)) costs more than the six numbers (callgrind).
    prompt, generation, running, waiting, kv, prefix = orjson.loads(b"[" + b",".join(body[1:7]) + b"]")
    values = {"prompt_tps": prompt, "gen_tps": generation, "running": running, "waiting": waiting,
              "kv_usage_pct": kv, "prefix_hit_pct": prefix}
    if external is not None:
        values["external_prefix_hit_pct"] = float(external)
    values[STATS_ENGINE_KEY] = int(engine) if engine is not None else None
    return values


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
    return _spec_values(m.groups(), ", ") if m else None


def _spec_values(groups: tuple, list_separator: str | bytes) -> dict:
    # float() and int() read bytes as well as str: the line lanes pass the raw groups.
    mean, accepted_tps, drafted_tps, accepted, drafted, per_position, rate = groups
    return {
        "per_position_acceptance": [float(x) for x in per_position.split(list_separator)],
        "mean_acceptance_length": float(mean),
        "accepted_tps": float(accepted_tps),
        "drafted_tps": float(drafted_tps),
        "accepted_tokens": int(float(accepted)),  # as the general path converts them
        "drafted_tokens": int(float(drafted)),
        "acceptance_rate_pct": float(rate),
    }


def finite_number(text: str | bytes) -> float | None:
    """A printed float; ``nan`` and ``inf`` become None (JSON has no such numbers)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value and value not in (float("inf"), float("-inf")) else None


# --- whole lines read on the raw bytes (the scanner's line lanes) -----------------------------


class MessageLane(NamedTuple):
    """A message read in one match behind a vLLM or coloured Dynamo header."""

    kind: str
    pattern: re.Pattern  # the message, on the raw bytes after the header
    values: Callable[[tuple], dict]  # the pattern's groups -> the family's values
    # The whole line, header and message, in one fullmatch: a regex call less per line than
    # matching the header, then the message (a NIXL line: 1.5 us against 1.7 us). Both headers
    # match a line's start in one way only, so the split is the two-step one.
    vllm_line: re.Pattern  # groups: VLLM_HEADER's, then the message's
    dynamo_line: re.Pattern  # groups: DYNAMO_HEADER's, then the message's


def message_lane(kind: str, message: bytes, values: Callable[[tuple], dict]) -> MessageLane:
    return MessageLane(kind, re.compile(message), values, re.compile(VLLM_HEADER.pattern + message),
                       re.compile(DYNAMO_HEADER.pattern + message))


def _spec_values_of(groups: tuple) -> dict:
    return _spec_values(groups, b", ")


# vLLM's NixlConnector metrics since PR #25388 (v0.11.1+), each ``round(x, 3)``; snake-cased
# as ``families._snake`` does (a test checks the names).
_NIXL_FIELDS = (
    ("Num successful transfers", "num_successful_transfers"),
    ("Avg xfer time (ms)", "avg_xfer_time_ms"),
    ("P90 xfer time (ms)", "p90_xfer_time_ms"),
    ("Avg post time (ms)", "avg_post_time_ms"),
    ("P90 post time (ms)", "p90_post_time_ms"),
    ("Avg MB per transfer", "avg_mb_per_transfer"),
    ("Throughput (MB/s)", "throughput_mb_s"),
    ("Avg number of descriptors", "avg_descriptors"),
)
NIXL_KEYS = tuple(key for _, key in _NIXL_FIELDS)  # as ``_nixl_values`` spells them out
# A JSON number that ``orjson`` reads as ``families._metric_value`` does: with a dot a float,
# else an int (no leading zero, at most 18 digits: well inside 64 bits).
_JSON_NUMBER = rb"((?:0|[1-9]\d{0,17})(?:\.\d+)?)"
_NIXL_BODY = (
    rb"KV Transfer metrics: "
    + b", ".join(re.escape(label.encode()) + b"=" + _JSON_NUMBER for label, _ in _NIXL_FIELDS)
)


def _nixl_values(groups: tuple) -> dict:
    # One orjson call for the eight numbers: a third of the instructions of eight float()/int().
    transfers, xfer, xfer_p90, post, post_p90, mb, throughput, descriptors = orjson.loads(
        b"[" + b",".join(groups) + b"]")
    return {"connector": None, "metrics": {
        "num_successful_transfers": transfers, "avg_xfer_time_ms": xfer, "p90_xfer_time_ms": xfer_p90,
        "avg_post_time_ms": post, "p90_post_time_ms": post_p90, "avg_mb_per_transfer": mb,
        "throughput_mb_s": throughput, "avg_descriptors": descriptors}}


# Dynamo's router line, the shape of ``families._SELECTED`` that every current Dynamo prints.
_SELECTED_BODY = (
    rb"Selected worker: worker_type=(\w+), worker_id=(\w+),? dp_rank=(\d+)(?:, logit: (-?\d+\.\d+))?"
    rb"(?:, cached blocks: (\d+))?(?:, tree size: (\d+))?(?:, total blocks: (\d+))?"
)


def _selected_values(groups: tuple) -> dict:
    worker_type, worker_id, dp_rank, logit, cached, tree, total = groups
    return {
        "worker_type": worker_type.decode(), "worker_id": worker_id.decode(), "dp_rank": int(dp_rank),
        "logit": float(logit) if logit else None,
        "cached_blocks": int(cached) if cached else None,
        "tree_size": int(tree) if tree else None,
        "total_blocks": int(total) if total else None,
    }


STATS_LANE = message_lane("stats", _STATS_BODY_BYTES, _raw_stats_values)
SPEC_DECODE_LANE = message_lane("spec_decode", rb"SpecDecoding metrics: " + _SPEC_DECODE.pattern.encode(),
                                _spec_values_of)
KV_TRANSFER_LANE = message_lane("kv_transfer", _NIXL_BODY, _nixl_values)
WORKER_SELECTED_LANE = message_lane("worker_selected", _SELECTED_BODY, _selected_values)

# uvicorn's access line behind at most one process prefix. No bracket outside the path, so
# the general path's ``VLLM_LOGGING_PREFIX`` attempt (tried on `` [`` or ``] ``) cannot match.
# Groups: proc, pid, level, client, port, method, path, status.
UVICORN_ACCESS = re.compile(
    rb"(?:\(([A-Za-z_][A-Za-z0-9_\-]*) pid=(\d+)\) ?)?(INFO|WARNING|ERROR|DEBUG|CRITICAL): +"
    rb"([A-Za-z0-9_.:\-]+?):(\d+) - \"([A-Z]+) ([!-~]+) HTTP/[0-9.]+\" (\d{3})(?: [ -Z\\^-~]*)?"
)

# Dynamo's ``request completed`` line: coloured header with at most one span, then italic
# ``key`` dim ``=`` value fields. Values hold no quote, comma or ``=``, so the general path's
# ``key=value`` split reads each one whole. Groups: timestamp, gap, level, gap, span, target, fields.
_FIELD_VALUE = rb'[^\x00-\x20",=\x7f-\xff]+'
_ITALIC_KEY, _DIM_EQUALS = rb"\x1b\[3m", rb"\x1b\[0m\x1b\[2m=\x1b\[0m"
REQUEST_COMPLETED = re.compile(
    rb"\x1b\[2m(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)\x1b\[0m( +)\x1b\[[0-9;]*m"
    rb"( *(?:TRACE|DEBUG|INFO|WARN|ERROR))\x1b\[0m( +)(?:\x1b\[1m([!-~]+)\x1b\[0m\x1b\[2m:\x1b\[0m)?"
    rb"\x1b\[2m([!-~]+)\x1b\[0m\x1b\[2m:\x1b\[0m request completed"
    rb"((?: " + _ITALIC_KEY + rb"\w+" + _DIM_EQUALS + _FIELD_VALUE + rb")*)"
)
COLOURED_FIELD = re.compile(_ITALIC_KEY + rb"(\w+)" + _DIM_EQUALS + rb"(" + _FIELD_VALUE + rb")")


def request_completed_values(fields: dict[str, str]) -> dict:
    """``families.parse_request_completed``'s values from the fields of the line."""
    latency, ttft = fields.get("latency_ms"), fields.get("ttft_ms")
    return {"status": fields.get("status"),
            "latency_ms": finite_number(latency) if latency is not None else None,
            "ttft_ms": finite_number(ttft) if ttft is not None else None,
            "fields": fields}


# --- direct JSON lines (``pdwatch parse`` only) -------------------------------------------------
#
# ``pdwatch parse`` needs no ``Event`` of a lane's line, only its JSON line. The patterns below
# are the lanes' own, with every number narrowed to a form whose printed text is exactly what
# orjson writes for the value the general path reads from it, so the scanner copies the groups
# into the line (``LogScanner(json_lines=True)``). A line with any other number (``nan``,
# ``007`` as a float, 17 digits, ``1e-05`` ...) does not match and takes its lane as before.
# Measured on 50 MB of the benchmark's log (21k lane lines): ~5.9 us of CPU per event for
# lane + Event + render, ~2.4 us for a direct line.
#
# A decimal with at most 15 significant digits and no trailing zero is the shortest text that
# reads back as its float (15 digits round-trip through a double), which is what orjson writes
# from 0.001 up to 1e16; trailing zeros are matched outside the group (``8.010`` -> ``8.01``, as
# ``round(x, 3)`` printed by ``%s`` never has them but ``.2f`` has). The lookahead bounds the
# whole printed run to 16 characters (15 digits and the dot); below 0.001 falls back.
#
# Each first tries a cheaper form with no lookahead over the whole run, for what vLLM prints
# most (``%.1f``; NIXL's ``%.3f`` and counts): at most 12 integer digits and 1 decimal (3 for a
# number, the last not 0), so at most 15 digits, which orjson writes back as printed. It saves
# ~0.4 us per stats line; anything else takes the general form, as before.
_CANONICAL_FLOAT = (rb"((?:0|[1-9]\d{0,11})\.\d(?![\d.])"
                    rb"|(?=[\d.]{3,16}(?![\d.]))(?!0\.000+[1-9])(?:0|[1-9]\d*)\.(?:\d*[1-9]|0))0*")
_CANONICAL_SIGNED_FLOAT = rb"(?=-?[\d.]{3,16}(?![\d.]))(?!-?0\.000+[1-9])(-?(?:0|[1-9]\d*)\.(?:\d*[1-9]|0))0*"
# ``int(text)`` of ``\d+``: leading zeros are matched outside the group, at most 18 digits.
_CANONICAL_INT = rb"0*(0|[1-9]\d{0,17})"
# ``int(float(text))`` of ``\d+``: exact below 2**53, so at most 15 digits.
_CANONICAL_FLOAT_INT = rb"0*(0|[1-9]\d{0,14})"
# ``_JSON_NUMBER`` (an int without a dot, a float with one) in the forms above.
_CANONICAL_NUMBER = (rb"((?:0|[1-9]\d{0,11})(?:\.(?:\d\d[1-9]|\d[1-9]?)|)(?![\d.])"
                     rb"|(?=[\d.]{1,16}(?![\d.]))(?!0\.000+[1-9])(?:0|[1-9]\d*)(?!\d)(?:\.(?:\d*[1-9]|0))?)0*")


class JsonLane(NamedTuple):
    """A message lane whose match is written straight to a JSON line."""

    kind: str
    vllm_line: re.Pattern  # groups: VLLM_HEADER's, then the message's
    dynamo_line: re.Pattern  # groups: DYNAMO_HEADER's, then the message's
    values: Callable[[tuple], bytes]  # the message's groups -> the values' JSON members
    events: MessageLane  # the lane that reads a line this one leaves (an odd number)


def _json_lane(kind: str, message: bytes, values: Callable[[tuple], bytes], events: MessageLane) -> JsonLane:
    return JsonLane(kind, re.compile(VLLM_HEADER.pattern + message), re.compile(DYNAMO_HEADER.pattern + message),
                    values, events)


# Deferred (v0.20) and Preemptions (v0.12, omitted when 0) sit between Waiting and the KV usage.
_STATS_BODY_JSON = (
    rb"(?:Engine (\d+): )?"
    rb"Avg prompt throughput: " + _CANONICAL_FLOAT + rb" tokens/s, Avg generation throughput: " + _CANONICAL_FLOAT
    + rb" tokens/s, Running: " + _WHOLE + rb" reqs, Waiting: " + _WHOLE + rb" reqs, "
    + rb"(?:Deferred: " + _WHOLE + rb" reqs, )?(?:Preemptions: " + _WHOLE + rb", )?GPU KV cache usage: "
    + _CANONICAL_FLOAT + rb"%, Prefix cache hit rate: " + _CANONICAL_FLOAT
    + rb"%(?:, External prefix cache hit rate: " + _CANONICAL_FLOAT + rb"%)?"
)


def _stats_json(body: tuple) -> bytes:
    """The stats values in the line's order, as the general path reads them; ``body[0]``, the
    engine, is the scanner's."""
    _, prompt, gen, running, waiting, deferred, preemptions, kv, hit, external = body
    values = b'"prompt_tps":%s,"gen_tps":%s,"running":%s,"waiting":%s' % (prompt, gen, running, waiting)
    if deferred is not None:
        values += b',"deferred":' + deferred
    if preemptions is not None:
        values += b',"preemptions":' + preemptions
    values += b',"kv_usage_pct":%s,"prefix_hit_pct":%s' % (kv, hit)
    return values if external is None else values + b',"external_prefix_hit_pct":' + external


_PER_POSITION = rb"(\d+(?:\.\d+)?(?:, \d+(?:\.\d+)?)*)"
_SPEC_DECODE_BODY_JSON = (
    rb"SpecDecoding metrics: Mean acceptance length: " + _CANONICAL_FLOAT + rb", Accepted throughput: "
    + _CANONICAL_FLOAT + rb" tokens/s, Drafted throughput: " + _CANONICAL_FLOAT + rb" tokens/s, Accepted: "
    + _CANONICAL_FLOAT_INT + rb" tokens, Drafted: " + _CANONICAL_FLOAT_INT + rb" tokens, Per-position acceptance rate: "
    + _PER_POSITION + rb", Avg Draft acceptance rate: " + _CANONICAL_FLOAT + rb"%"
)


def _spec_decode_json(groups: tuple) -> bytes:
    mean, accepted_tps, drafted_tps, accepted, drafted, per_position, rate = groups
    # The list as the general path reads it (floats, ``1`` -> 1.0), written by orjson.
    positions = orjson.dumps([float(x) for x in per_position.split(b", ")])
    return (b'"per_position_acceptance":%s,"mean_acceptance_length":%s,"accepted_tps":%s,"drafted_tps":%s,'
            b'"accepted_tokens":%s,"drafted_tokens":%s,"acceptance_rate_pct":%s'
            % (positions, mean, accepted_tps, drafted_tps, accepted, drafted, rate))


_NIXL_BODY_JSON = (
    rb"KV Transfer metrics: "
    + b", ".join(re.escape(label.encode()) + b"=" + _CANONICAL_NUMBER for label, _ in _NIXL_FIELDS)
)
_NIXL_JSON = (b'"connector":null,"metrics":{'
              + b",".join(b'"%s":%%s' % key.encode() for key in NIXL_KEYS) + b"}")


def _nixl_json(groups: tuple) -> bytes:
    return _NIXL_JSON % groups


_SELECTED_BODY_JSON = (
    rb"Selected worker: worker_type=(\w+), worker_id=(\w+),? dp_rank=" + _CANONICAL_INT
    + rb"(?:, logit: " + _CANONICAL_SIGNED_FLOAT + rb")?(?:, cached blocks: " + _CANONICAL_INT
    + rb")?(?:, tree size: " + _CANONICAL_INT + rb")?(?:, total blocks: " + _CANONICAL_INT + rb")?"
)


# The router line's JSON members; the scanner's router lane writes them too, in one format with the rest.
SELECTED_MEMBERS = (b'"worker_type":"%s","worker_id":"%s","dp_rank":%s,"logit":%s,"cached_blocks":%s,"tree_size":%s,'
                    b'"total_blocks":%s')


def _selected_json(groups: tuple) -> bytes:
    # ``\w`` of a bytes pattern is ASCII letters, digits and ``_``: nothing to escape.
    worker_type, worker_id, dp_rank, logit, cached, tree, total = groups
    return SELECTED_MEMBERS % (worker_type, worker_id, dp_rank, logit or b"null", cached or b"null",
                               tree or b"null", total or b"null")


STATS_JSON_LANE = _json_lane("stats", _STATS_BODY_JSON, _stats_json, STATS_LANE)
SPEC_DECODE_JSON_LANE = _json_lane("spec_decode", _SPEC_DECODE_BODY_JSON, _spec_decode_json, SPEC_DECODE_LANE)
KV_TRANSFER_JSON_LANE = _json_lane("kv_transfer", _NIXL_BODY_JSON, _nixl_json, KV_TRANSFER_LANE)
WORKER_SELECTED_JSON_LANE = _json_lane("worker_selected", _SELECTED_BODY_JSON, _selected_json, WORKER_SELECTED_LANE)

# ``REQUEST_COMPLETED`` in the shape Dynamo's frontend prints it, ``status`` then ``latency_ms``
# (whole milliseconds, read as a float: orjson writes ``43168.0`` for ``43168`` below 1e15).
# Groups: timestamp, gap, level, gap, span, target, status, latency.
REQUEST_COMPLETED_JSON = re.compile(
    REQUEST_COMPLETED.pattern[:REQUEST_COMPLETED.pattern.index(b" request completed") + len(b" request completed")]
    + b" " + _ITALIC_KEY + b"status" + _DIM_EQUALS + rb"(\d{1,18}) " + _ITALIC_KEY + b"latency_ms" + _DIM_EQUALS
    + rb"(0|[1-9]\d{0,14})"
)


# ``UVICORN_ACCESS`` with a path that needs no JSON escape (no ``"`` or ``\``) and a status
# without a leading zero. Groups: proc, pid, level, client, port, method, path, status.
UVICORN_ACCESS_JSON = re.compile(
    rb"(?:\(([A-Za-z_][A-Za-z0-9_\-]*) pid=(\d+)\) ?)?(INFO|WARNING|ERROR|DEBUG|CRITICAL): +"
    rb"([A-Za-z0-9_.:\-]+?):(\d+) - \"([A-Z]+) ([!#-\[\]-~]+) HTTP/[0-9.]+\" ([1-9]\d\d)(?: [ -Z\\^-~]*)?"
)
