"""The export's options, its levels, and the recording rules of pdwatch's stats fields.

``ExportOptions`` (the scrape interval, the ``--fact`` values, the vLLM targets, the
deployment labels) and the label sets of each level (engine, endpoint, deployment);
``field_rules``: each stats field pdwatch reads off a ``/metrics`` page as a recording rule
(``pdwatch:running``, ...), and the universes of the engines and the endpoints; ``number`` and
``by``: how a number and a label list are spelt in PromQL.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from pdwatch.parsers import dynamo_metrics as dynamo
from pdwatch.parsers.exposition import (GENERATION_TOKENS, KV_USAGE, HIT_RATES, PREEMPTIONS, PROMPT_TOKENS,
                                        PROMPT_TOKENS_BY_SOURCE, RUNNING, WAITING)
from pdwatch.sources.promql import Matcher
from pdwatch.units import fmt_compact_duration

ENGINES = "pdwatch:engines"  # one series per engine (value 1): the instances of engine scope
ENDPOINTS = "pdwatch:endpoints"  # one per endpoint, a Dynamo frontend's with role="frontend"
RANK = {"const": -1, "deployment": 0, "endpoint": 1, "engine": 2}


# -- options ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FactValue:
    name: str
    value: float
    job: str | None = None
    instance: str | None = None


@dataclass(frozen=True)
class ExportOptions:
    interval_s: float = 10.0  # the scrape interval = the group's evaluation interval = one stats line
    facts: tuple[FactValue, ...] = ()
    match: tuple[Matcher, ...] = ()  # the vLLM targets (stats_missing: up == 1 without a vllm: series)
    deployment_labels: tuple[str, ...] = ()  # peers are the endpoints sharing these labels

    @property
    def endpoint_labels(self) -> tuple[str, ...]:
        return (*self.deployment_labels, "job", "instance", "role")

    @property
    def engine_labels(self) -> tuple[str, ...]:
        return (*self.endpoint_labels, "engine")

    def labels(self, level: str) -> tuple[str, ...]:
        return {"deployment": self.deployment_labels, "endpoint": self.endpoint_labels,
                "engine": self.engine_labels}[level]


def label_list(labels: Iterable[str]) -> str:
    """The labels of a ``by (...)`` or ``on(...)``."""
    return ", ".join(labels)


# -- the fields ---------------------------------------------------------------------------------------------
def field_rules(o: ExportOptions) -> list[tuple[str, str, str]]:
    """(record name, PromQL, level) of each stats field pdwatch maps from /metrics, and the universes."""
    e, p = label_list(o.engine_labels), label_list(o.endpoint_labels)
    r = fmt_compact_duration(3 * o.interval_s)  # irate's range: the last two scrapes, one missed scrape allowed
    kv_now, kv_old = KV_USAGE[:2]  # vLLM's; a Dynamo worker's own gauge is read by the log path only
    out = [
        (ENGINES, f"group by ({e}) ({RUNNING})", "engine"),
        (ENDPOINTS, f'group by ({p}) ({ENGINES}) or label_replace(group by ({p}) ({dynamo.INFLIGHT}), '
                    f'"role", "frontend", "role", "")', "endpoint"),
        ("pdwatch:running", f"sum by ({e}) ({RUNNING})", "engine"),
        ("pdwatch:waiting", f"sum by ({e}) ({WAITING})", "engine"),
        ("pdwatch:kv_usage_pct", f"100 * sum by ({e}) ({kv_now}) or 100 * sum by ({e}) ({kv_old})", "engine"),
        # vLLM >= 0.16: the log's prompt throughput counts locally computed tokens only
        ("pdwatch:prompt_tps", f'sum by ({e}) (irate({PROMPT_TOKENS_BY_SOURCE}{{source="local_compute"}}[{r}])) '
                               f"or sum by ({e}) (irate({PROMPT_TOKENS}[{r}]))", "engine"),
        ("pdwatch:gen_tps", f"sum by ({e}) (irate({GENERATION_TOKENS}[{r}]))", "engine"),
        ("pdwatch:preemptions", f"sum by ({e}) (clamp_min(idelta({PREEMPTIONS}[{r}]), 0))", "engine"),
    ]
    # the interval's hits over its queries (tokens); none when nothing was looked up (0/0 is NaN)
    for key, pairs in HIT_RATES.items():
        out.append((f"pdwatch:{key}", " or ".join(
            f"(100 * sum by ({e}) (irate({hits}[{r}])) / sum by ({e}) (irate({queries}[{r}])) > -Inf)"
            for queries, hits in pairs), "engine"))
    # A Dynamo frontend's page: role "frontend" unless its target says another (as pdwatch reads such a page).
    def frontend(q: str) -> str:
        return f'label_replace({q}, "role", "frontend", "role", "")'

    for histogram, name in dynamo.HISTOGRAMS.items():  # mean over the scrape interval; none when nothing ended
        out.append((f"pdwatch:{name}", frontend(f"(sum by ({p}) (irate({histogram}_sum[{r}])) / sum by ({p}) "
                                                f"(irate({histogram}_count[{r}]))) > -Inf"), "endpoint"))
    out.append(("pdwatch:request_rate", frontend(f"sum by ({p}) (irate({dynamo.REQUESTS}[{r}]))"), "endpoint"))
    for gauge, name in dynamo.GAUGES.items():
        out.append((f"pdwatch:{name}", frontend(f"sum by ({p}) ({gauge})"), "endpoint"))
    return out


def field_levels(o: ExportOptions) -> dict[str, str]:
    """The level (engine or endpoint) of each stats field a rule may read."""
    return {name.removeprefix("pdwatch:"): level for name, _, level in field_rules(o)
            if name not in (ENGINES, ENDPOINTS)}


def number(x: float) -> str:
    """``x`` as a PromQL number literal."""
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    return repr(float(x))
