"""Dynamo's frontend ``/metrics`` (``dynamo_frontend_*``) as the user-facing figures of a PD run.

For a Dynamo deployment the frontend's time to first token and inter-token latency are
what the users of the service feel: TTFT growing while prefill queues is the prefill-bound
signature, ITL growing with the decode batch the decode side's. Names are those of Dynamo's
``lib/runtime/src/metrics/prometheus_names.rs`` (``frontend_service``), with the fixed
``dynamo_frontend_`` prefix; see docs/metrics-formats.md.

``frontend_values(samples, state, source, epoch)`` turns one scrape's samples into the
values of one frontend stats row (a key is absent when its metric is):

- ``ttft_s`` / ``itl_s``            <- mean of the TTFT / inter-token latency histograms over the
  scrape interval (increase of ``_sum`` / increase of ``_count``; none when no request ended)
- ``isl_tokens`` / ``osl_tokens``  <- the same for the input / output sequence length histograms
- ``ttft_p99_s`` / ``itl_p99_s``   <- the 99th percentile of the same histograms over the scrape
  interval, from the increase of each ``_bucket`` (linear within a bucket, as PromQL's
  ``histogram_quantile``; the last finite bound when it falls in ``+Inf``)
- ``request_rate``                 <- requests/s from ``requests_total`` (every status)
- ``frontend_inflight``            <- ``inflight_requests`` (requests at the engines)
- ``frontend_queued``              <- ``queued_requests`` (waiting for their first response)

Series of several models or label sets are summed (histograms: sums and counts added). A
labelled series appears with the first request that has its labels: on a page scraped before,
a new series counts from 0 at the previous scrape.
"""

from __future__ import annotations

from typing import Any

PREFIX = "dynamo_frontend_"
REQUESTS = PREFIX + "requests_total"
INFLIGHT = PREFIX + "inflight_requests"
QUEUED = PREFIX + "queued_requests"
HISTOGRAMS = {
    PREFIX + "time_to_first_token_seconds": "ttft_s",
    PREFIX + "inter_token_latency_seconds": "itl_s",
    PREFIX + "input_sequence_tokens": "isl_tokens",
    PREFIX + "output_sequence_tokens": "osl_tokens",
}
GAUGES = {INFLIGHT: "frontend_inflight", QUEUED: "frontend_queued"}
QUANTILES = {PREFIX + "time_to_first_token_seconds": "ttft_p99_s", PREFIX + "inter_token_latency_seconds": "itl_p99_s"}
FIELDS = ("ttft_s", "itl_s", "isl_tokens", "osl_tokens", "request_rate", "frontend_inflight", "frontend_queued",
          "ttft_p99_s", "itl_p99_s")

# The sample names read: counters as prometheus_client reports them, histogram sums and counts, and
# the buckets of the latencies whose 99th percentile is given.
WANTED = frozenset({REQUESTS, *GAUGES, *(h + suffix for h in HISTOGRAMS for suffix in ("_sum", "_count")),
                    *(h + "_bucket" for h in QUANTILES)})


def frontend_values(samples: list[tuple[str, dict[str, str], float]], state: Any, source: str,
                    epoch: float) -> dict[str, Any] | None:
    """The frontend row of one scrape, or None when the page has no ``dynamo_frontend_`` series.

    ``state`` is the exposition's ``CounterState`` (the previous value of each series)."""
    mine = [s for s in samples if s[0] in WANTED]
    page_seen = (source, "dynamo-page", ())  # when this page was scraped last
    previous_scrape = state.previous_time(page_seen)
    state.delta(page_seen, epoch, 0.0)
    if not mine:
        return None
    values: dict[str, Any] = {}
    increases: dict[str, list[float]] = {}  # histogram sample name -> increases of its series
    rate: float | None = 0.0
    buckets: dict[str, dict[float, float]] = {}  # histogram -> upper bound -> increase (label sets summed)
    for name, labels, value in mine:
        if name in GAUGES:
            values[GAUGES[name]] = values.get(GAUGES[name], 0.0) + value
            continue
        series = (source, name, tuple(sorted(labels.items())))
        before = state.previous_time(series)
        increase = state.delta(series, epoch, value)
        if before is None and previous_scrape is not None and previous_scrape < epoch:
            # A labelled series appears with its first request: since the last scrape, from 0.
            before, increase = previous_scrape, value
        if name == REQUESTS:
            if increase is None or before is None or rate is None:
                rate = None  # one series without a rate makes the sum unknown
            else:
                rate += increase / (epoch - before)
        elif name.endswith("_bucket"):
            if increase is not None and "le" in labels:
                bound = float(labels["le"])
                per_bound = buckets.setdefault(name[:-len("_bucket")], {})
                per_bound[bound] = per_bound.get(bound, 0.0) + increase
        elif increase is not None:
            increases.setdefault(name, []).append(increase)
    if any(s[0] == REQUESTS for s in mine):
        values["request_rate"] = rate
    for histogram, key in HISTOGRAMS.items():
        total, count = increases.get(histogram + "_sum"), increases.get(histogram + "_count")
        if total is not None and count is not None and sum(count) > 0:
            values[key] = sum(total) / sum(count)
    for histogram, key in QUANTILES.items():
        if histogram in buckets:
            q = bucket_quantile(0.99, buckets[histogram])
            if q is not None:
                values[key] = q
    return values


def bucket_quantile(q: float, cumulative: dict[float, float]) -> float | None:
    """The q-quantile of a histogram's cumulative bucket counts (upper bound -> count), as PromQL's
    ``histogram_quantile``: linear within the bucket it falls in (from 0 for the first), the last
    finite bound when it falls in +Inf; None without observations."""
    bounds = sorted(cumulative)
    if not bounds or cumulative[bounds[-1]] <= 0:
        return None
    total = cumulative[bounds[-1]]
    rank = q * total
    lower, below = 0.0, 0.0
    for bound in bounds:
        count = cumulative[bound]
        if count >= rank:
            if bound == float("inf"):
                return lower
            if count == below:
                return bound
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower
