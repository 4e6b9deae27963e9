"""Map one vLLM ``/metrics`` exposition onto the ``stats`` events the log parsers produce.

Pure: text, time and the previous scrape's counters in; events out. Parsing is done by
``prometheus_client.parser.text_string_to_metric_families``.

``events_from_exposition(text, source=..., ts=..., line_no=..., state=CounterState())``
returns one ``Event(kind="stats")`` per engine (label ``engine``; an exposition without the
label is engine None) with these ``values`` (a key is absent when its metric is missing):

- ``running``      <- ``vllm:num_requests_running``
- ``waiting``      <- ``vllm:num_requests_waiting``
- ``kv_usage_pct`` <- 100 x ``vllm:kv_cache_usage_perc`` (or the older ``vllm:gpu_cache_usage_perc``; else
  a Dynamo worker's ``dynamo_component_gpu_cache_usage_percent`` / ``..._kvstats_gpu_cache_usage_percent``)
- ``prompt_tps`` / ``gen_tps`` <- rate of ``vllm:prompt_tokens_total`` / ``vllm:generation_tokens_total``
  since the previous scrape of the same series (same source, same labels). When the server
  also exposes ``vllm:prompt_tokens_by_source_total`` (vLLM >= 0.16), ``prompt_tps`` is the rate
  of its ``source="local_compute"`` series instead: since 0.16 the log's "Avg prompt throughput"
  counts only locally computed tokens, while ``prompt_tokens_total`` also counts prefix-cache
  hits and, on a PD decode worker, the prompts received from prefill. Always present
  when the counter is: ``None`` on the first scrape of a series, after a counter reset (the
  value went down: the new value becomes the baseline, never a negative rate) or when the
  clock did not move forward.
- ``preemptions``  <- increase of ``vllm:num_preemptions_total`` since the previous scrape
  (absent on a first scrape or after a reset).
- ``prefix_hit_pct`` <- 100 x the increase of ``vllm:prefix_cache_hits_total`` over that of
  ``vllm:prefix_cache_queries_total`` since the previous scrape (the older ``vllm:gpu_prefix_cache_*``
  pair when the newer is missing): the hit rate of the tokens looked up in that interval, where
  the log line's is over vLLM's recent requests. ``None`` when no token was looked up, on a
  first scrape or after a reset; absent when the counters are. ``external_prefix_hit_pct`` the same
  from ``vllm:external_prefix_cache_*`` (a KV connector's cache, vLLM >= 0.11).

``events_from_samples(samples, ...)`` does the same for samples already parsed, as a Prometheus
server returns them (``pdwatch.sources.prometheus``); ``WANTED`` is the set of sample names
mapped, the one list the scrape, recorded and server paths read.

Several series for one engine (e.g. two ``model_name`` values) are summed. ``state`` keeps
the counters per (source, series); pass the same ``CounterState`` for consecutive scrapes of
one source (and a fresh one, or another ``source``, for another server).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import regex
from prometheus_client.parser import text_string_to_metric_families

from pdwatch.parsers import Event

from . import dynamo_metrics as dynamo

RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
# KV usage as a fraction, the first name exposed wins: vLLM's, newest first, then what a Dynamo
# worker publishes of its engine (1.x emits ``dynamo_component_gpu_cache_usage_percent``, its
# documentation names ``dynamo_component_kvstats_gpu_cache_usage_percent``; both 0..1, by dp_rank).
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
            "dynamo_component_kvstats_gpu_cache_usage_percent", "dynamo_component_gpu_cache_usage_percent")
PROMPT_TOKENS = "vllm:prompt_tokens_total"
GENERATION_TOKENS = "vllm:generation_tokens_total"
PROMPT_TOKENS_BY_SOURCE = "vllm:prompt_tokens_by_source_total"
PREEMPTIONS = "vllm:num_preemptions_total"
# Hit-rate fields from (queries, hits) counters, in tokens, newest names first (the gpu_ ones:
# vLLM <= 0.10); the external one is the KV connector's cache (vLLM >= 0.11).
HIT_RATES = {
    "prefix_hit_pct": (("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"),
                       ("vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_hits_total")),
    "external_prefix_hit_pct": (("vllm:external_prefix_cache_queries_total",
                                 "vllm:external_prefix_cache_hits_total"),),
}
_HIT_RATE_NAMES = {name: (pair, i) for pairs in HIT_RATES.values() for pair in pairs for i, name in enumerate(pair)}

_GAUGES = {RUNNING: "running", WAITING: "waiting"}
# the log's prompt throughput counts local compute only (vLLM >= 0.16, when the by-source counter exists)
_LOCAL_PROMPT = "_local_prompt_tps"
_RATES = {PROMPT_TOKENS: "prompt_tps", GENERATION_TOKENS: "gen_tps", PROMPT_TOKENS_BY_SOURCE: _LOCAL_PROMPT}
_VLLM_WANTED = frozenset({RUNNING, WAITING, *KV_USAGE, PROMPT_TOKENS, PROMPT_TOKENS_BY_SOURCE, GENERATION_TOKENS,
                          PREEMPTIONS, *_HIT_RATE_NAMES})
_WANTED = _VLLM_WANTED | dynamo.WANTED
# Every sample name pdwatch maps, vLLM's and a Dynamo frontend's: a Prometheus source asks its
# server for exactly these series (one table for the scrape, the recorded and the server paths).
WANTED = _WANTED


class ExpositionError(ValueError):
    """The text is not a Prometheus exposition prometheus_client can parse."""


SeriesKey = tuple[str, str, tuple[tuple[str, str], ...]]  # (source, sample name, sorted labels)


@dataclass
class CounterState:
    """Last value and time of each counter series seen, across scrapes."""

    last: dict[SeriesKey, tuple[float, float]] = field(default_factory=dict)  # key -> (epoch s, value)

    def delta(self, key: SeriesKey, epoch: float, value: float) -> float | None:
        """Increase since the previous sample of ``key`` (None: first sample, reset or no time passed)."""
        prev = self.last.get(key)
        if prev is not None and epoch < prev[0]:
            return None  # an older scrape arriving late: keep the newer baseline
        self.last[key] = (epoch, value)
        if prev is None or value < prev[1] or epoch == prev[0]:
            return None
        return value - prev[1]

    def previous_time(self, key: SeriesKey) -> float | None:
        prev = self.last.get(key)
        return prev[0] if prev else None


def parse_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(sample name, labels, value) of the vLLM samples pdwatch maps; ExpositionError if unparsable."""
    out = []
    try:
        for family in text_string_to_metric_families(_without_unmapped_lines(text)):
            for sample in family.samples:
                if sample.name in _WANTED:
                    out.append((sample.name, dict(sample.labels), float(sample.value)))
    except (ValueError, TypeError, IndexError) as exc:
        raise ExpositionError(f"not a Prometheus exposition: {exc}") from exc
    return out


# A well-formed sample or HELP/TYPE line, and the metric it names.
_WELL_FORMED = regex.compile(
    r"(?:# (?:HELP|TYPE) (?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?: .*)?"
    r"|(?P<name>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{[^{}\n]*\})? (?:[-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|Inf)|NaN)"
    r"(?: -?[0-9]+)?)\s*")


def _without_unmapped_lines(text: str) -> str:
    """The text minus the well-formed lines of metrics pdwatch does not map.

    prometheus_client's parser costs milliseconds per exposition, most of it spent on the
    histogram buckets of a vLLM page that pdwatch never reads. Anything that is not clearly
    such a line (malformed text included) still reaches the parser, which judges it.
    """
    kept = []
    for line in text.splitlines():
        m = _WELL_FORMED.fullmatch(line)
        if m is None or m["name"] in _WANTED:
            kept.append(line)
    return "\n".join(kept) + "\n"


def _engine(labels: dict[str, str]) -> int | None:
    """vLLM's ``engine`` label, else Dynamo's ``dp_rank``."""
    for key in ("engine", "dp_rank"):
        try:
            return int(labels[key])
        except (KeyError, ValueError):
            continue
    return None


def events_from_exposition(text: str, *, source: str, ts: datetime, line_no: int = 0,
                           state: CounterState | None = None, header: str = "") -> list[Event]:
    """``stats`` events (one per engine, ordered by engine) for the scrape ``text`` taken at ``ts``.

    ``ts`` must be timezone-aware. ``header`` (e.g. the recorded banner) starts each event's ``text``.
    """
    return events_from_samples(parse_samples(text), source=source, ts=ts, line_no=line_no, state=state,
                               header=header)


def events_from_samples(samples: list[tuple[str, dict[str, str], float]], *, source: str, ts: datetime,
                        line_no: int = 0, state: CounterState | None = None, header: str = "") -> list[Event]:
    """``events_from_exposition`` for samples already parsed: ``(sample name, labels, value)``
    of one scrape, as ``parse_samples`` gives them or as a Prometheus server returns the
    same series (``pdwatch.sources.prometheus``). Names outside ``WANTED`` are ignored."""
    state = state if state is not None else CounterState()
    epoch = ts.timestamp()
    per_engine: dict[int | None, dict[str, Any]] = {}
    raw: dict[int | None, list[str]] = {}
    kv: dict[int | None, dict[str, float]] = {}
    # engine -> counter pair -> {0: queries increase, 1: hits increase} (None: unknown in this interval)
    hit_counts: dict[int | None, dict[tuple[str, str], dict[int, float | None]]] = {}
    samples = [s for s in samples if s[0] in _WANTED]
    frontend = dynamo.frontend_values(samples, state, source, epoch)
    for name, labels, value in samples:
        if name not in _VLLM_WANTED:
            continue
        if name == PROMPT_TOKENS_BY_SOURCE and labels.get("source") != "local_compute":
            continue
        engine = _engine(labels)
        values = per_engine.setdefault(engine, {})
        raw.setdefault(engine, []).append(f"{name.removeprefix('vllm:')}={value:g}")
        if name in _GAUGES:
            key = _GAUGES[name]
            values[key] = values.get(key, 0.0) + value
        elif name in KV_USAGE:
            by_name = kv.setdefault(engine, {})
            by_name[name] = by_name.get(name, 0.0) + value
        else:
            series = (source, name, tuple(sorted(labels.items())))
            before = state.previous_time(series)
            increase = state.delta(series, epoch, value)
            if name == PREEMPTIONS:
                if increase is not None:
                    values["preemptions"] = values.get("preemptions", 0.0) + increase
                continue
            if name in _HIT_RATE_NAMES:
                pair, i = _HIT_RATE_NAMES[name]
                sums = hit_counts.setdefault(engine, {}).setdefault(pair, {})
                so_far = sums.get(i, 0.0)
                sums[i] = None if increase is None or so_far is None else so_far + increase
                continue
            key = _RATES[name]
            if increase is None or before is None:
                values["_no_rate_" + key] = True
                values.setdefault(key, None)
            else:
                values[key] = (values.get(key) or 0.0) + increase / (epoch - before)
    events = []
    for engine in sorted(per_engine, key=lambda e: (e is None, e or 0)):
        values = per_engine[engine]
        fractions = kv.get(engine, {})
        for name in KV_USAGE:  # the newer name wins when both are exposed (vLLM 0.9 - 0.11)
            if name in fractions:
                values["kv_usage_pct"] = 100.0 * fractions[name]
                break
        counted = hit_counts.get(engine, {})
        for key, pairs in HIT_RATES.items():
            for pair in pairs:  # the newer names win when both are exposed
                if pair in counted:
                    queries, hits = counted[pair].get(0), counted[pair].get(1)  # one of the two missing: unknown
                    values[key] = 100.0 * hits / queries if queries and hits is not None else None
                    break
        for key in ("prompt_tps", "gen_tps", _LOCAL_PROMPT):
            if values.pop("_no_rate_" + key, False):
                values[key] = None  # one series without a rate makes the engine's sum unknown
        if _LOCAL_PROMPT in values:
            values["prompt_tps"] = values.pop(_LOCAL_PROMPT)
        for key in ("running", "waiting", "preemptions"):
            if key in values:
                values[key] = _int_if_whole(values[key])
        text_line = " ".join(filter(None, [header, f"engine={engine}", *raw[engine]]))
        events.append(Event(kind="stats", source=source, line_no=line_no, ts=ts, engine=engine,
                            level=None, values=values, text=text_line))
    if frontend is not None:  # a Dynamo frontend's page: its user-facing latencies, one row
        shown = " ".join(f"{k}={v:g}" for k, v in frontend.items() if v is not None)
        text_line = " ".join(filter(None, [header, "dynamo frontend", shown]))
        events.append(Event(kind="role_hint", source=source, line_no=line_no, ts=ts, engine=None, level=None,
                            values={"role": "frontend"}, text=text_line))
        events.append(Event(kind="stats", source=source, line_no=line_no, ts=ts, engine=None, level=None,
                            values=frontend, text=text_line))
    return events


def recognised(text: str) -> bool:
    """Whether a page has any series pdwatch reads (vLLM's or a Dynamo frontend's)."""
    return bool(parse_samples(text))


def _int_if_whole(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x
