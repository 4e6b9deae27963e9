"""The headline numbers: tokens/s per endpoint, per role and per GPU over the steady state.

In PD, prompt tokens are counted once, on the prefill side, and generated tokens on the
decode side: decode workers before vLLM 0.16 report transferred prompts as their own
prompt throughput, so adding both roles would count prompts twice. An aggregated (or
role-less) server counts both. Each stats line is the average over its interval, so an
engine's mean over a window is its throughput there; engines and endpoints add up.

The steady state is found as an operator would: the longest stretch where the load is at
its level (requests in flight >= 80% of their 90th percentile, throughput >= half of its),
from the point where throughput and running requests have settled (the KV cache filling
after the ramp-up is not steady), minus the buckets straddling the edges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pdwatch.model.deployment import Endpoint

PLATEAU_BAND = 0.2  # throughput within +-20% of its settled level (closed-loop clients oscillate)
COUNTED = {"prefill": ("prompt_tps",), "decode": ("gen_tps",), "aggregated": ("prompt_tps", "gen_tps"),
           "unknown": ("prompt_tps", "gen_tps")}


@dataclass(frozen=True)
class Headline:
    start: pd.Timestamp | None
    end: pd.Timestamp | None
    prompt_tps: float | None
    gen_tps: float | None
    total_tps: float | None
    tps_per_gpu: float | None
    gpus: int | None
    gpus_inferred: bool
    per_role: dict[str, dict[str, float]]
    note: str | None  # why a number is null, or what is guessed
    # "CPU" when every serving endpoint runs vLLM's CPU backend (its KV cache is in host memory):
    # there is no GPU to divide by, so the headline is tokens/s per worker instead.
    device: str | None = None
    workers: int = 0  # serving endpoints (vLLM servers, Dynamo workers)
    tps_per_worker: float | None = None


def endpoint_rates(stats: pd.DataFrame, start: pd.Timestamp, end: pd.Timestamp) -> dict[str, float] | None:
    """Mean prompt/generation tokens/s of an endpoint over [start, end], summed over engines."""
    if stats.empty:
        return None
    window = stats[(stats["ts"] >= start) & (stats["ts"] <= end)]
    if window.empty:
        return None
    means = window.groupby("engine")[["prompt_tps", "gen_tps"]].mean()
    return {"prompt_tps": float(means["prompt_tps"].sum()), "gen_tps": float(means["gen_tps"].sum())}


def bucketed(frames: dict[str, tuple[Endpoint, pd.DataFrame]], bucket_s: float) -> pd.DataFrame:
    """Per time bucket: the deployment's counted tokens/s, requests in flight, requests running.

    Each engine's last line in a bucket stands for it; engines and endpoints add up.
    ``running`` is the decode side's when there is one (the KV-cache fill that follows the
    ramp-up shows there), else every endpoint's.
    """
    freq = f"{max(round(bucket_s), 1)}s"
    tokens, inflight, running, decode_running = [], [], [], []
    for endpoint, stats in frames.values():
        if endpoint.role not in COUNTED or stats.empty:
            continue
        keyed = stats.assign(bucket=stats["ts"].dt.floor(freq),
                             counted=stats[list(COUNTED[endpoint.role])].sum(axis=1, min_count=1),
                             inflight=stats["running"] + stats["waiting"].fillna(0.0))
        last = keyed.groupby(["bucket", "engine"])[["counted", "inflight", "running"]].last().groupby("bucket").sum()
        tokens.append(last["counted"])
        inflight.append(last["inflight"])
        (decode_running if endpoint.role == "decode" else running).append(last["running"])
    if not tokens:
        return pd.DataFrame(columns=["tokens", "inflight", "running"], dtype="float64")

    def add(parts: list[pd.Series]) -> pd.Series:
        return pd.concat(parts, axis=1, sort=True).sum(axis=1, min_count=1) if parts else pd.Series(dtype="float64")

    frame = pd.DataFrame({"tokens": add(tokens), "inflight": add(inflight),
                          "running": add(decode_running or running)})
    # After one side stopped reporting (an engine died, a server hung) the rest does not
    # describe the deployment: prefill may go on computing prompts no decode will take.
    last_lines = [stats["ts"].max() for endpoint, stats in frames.values()
                  if endpoint.role in COUNTED and not stats.empty]
    alive_until = min(last_lines).floor(freq) if last_lines else None
    frame = frame.sort_index()
    return frame[frame.index <= alive_until] if alive_until is not None else frame


def steady_window(buckets: pd.DataFrame) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    """The plateau: load at its level, throughput and running settled, ramps left out.

    A plateau with periodic dips is still one plateau: a closed-loop client's requests
    finish together and in-flight drops for a bucket, preemption waves come and go. So the
    load is judged on a rolling mean (5 buckets), dips of up to 2 buckets inside a run are
    bridged, and the window is the longest such run.
    """
    data = buckets.dropna(subset=["tokens"])
    if data.empty:
        return None
    if len(data) < 3:
        return data.index[0], data.index[-1]
    k = 5 if len(data) >= 15 else 3
    tokens = data["tokens"].rolling(k, center=True, min_periods=1).mean()
    inflight = data["inflight"].rolling(k, center=True, min_periods=1).mean()
    loaded = ((inflight >= 0.6 * np.percentile(inflight, 90))
              & (tokens >= 0.5 * np.percentile(tokens, 90))).to_numpy()
    first, last = _longest_run(_bridged(loaded, max_gap=2))
    if first is None:
        return data.index[0], data.index[-1]
    run = data.iloc[first:last + 1]
    settled = run.iloc[len(run) // 2:]
    level_tokens, level_running = settled["tokens"].median(), settled["running"].median()
    # Closed-loop clients make throughput oscillate: widen the band to the settled swing.
    swing = float(settled["tokens"].std(ddof=0) / level_tokens) if level_tokens else 0.0
    band = max(PLATEAU_BAND, 2 * swing)
    # Skip the transient after the ramp-up (e.g. the decode KV cache still filling): the
    # first bucket back at the settled level, judged on the raw buckets (a rolling mean
    # would average the ramp's swings into the level).
    steady = ((run["tokens"] - level_tokens).abs() <= band * level_tokens) & \
             (run["running"] >= 0.9 * level_running)
    offset = int(np.argmax(steady.to_numpy())) if steady.any() else 0
    first += offset
    if last - first >= 4:  # drop the buckets that straddle the edges
        first, last = first + 1, last - 1
    return data.index[first], data.index[last]


def _bridged(flags: np.ndarray, max_gap: int) -> np.ndarray:
    """``flags`` with runs of at most ``max_gap`` False between two True set to True."""
    out = flags.copy()
    true = np.flatnonzero(flags)
    for a, b in zip(true[:-1], true[1:]):
        if 1 < b - a <= max_gap + 1:
            out[a + 1:b] = True
    return out


def _longest_run(flags: np.ndarray) -> tuple[int | None, int]:
    best, start = (0, None, -1), None
    for i, flag in enumerate([*flags, False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            if i - start > best[0]:
                best = (i - start, start, i - 1)
            start = None
    return best[1], best[2]


def headline(endpoints: list[Endpoint], stats: dict[str, pd.DataFrame]) -> Headline:
    frames = {ep.name: (ep, stats.get(ep.name, pd.DataFrame())) for ep in endpoints if ep.role != "frontend"}
    intervals = [ep.facts.get("stats_interval_s") for ep, _ in frames.values() if ep.facts.get("stats_interval_s")]
    bucket = float(np.median(intervals)) if intervals else 10.0
    window = steady_window(bucketed(frames, bucket))
    serving = [ep for ep, _ in frames.values()]
    devices = {str(ep.facts.get("kv_device") or "").upper() for ep in serving}
    # GPUs declared in a topology file are the operator's word: they are counted whatever the logs say
    on_cpu = bool(serving) and devices == {"CPU"} and all(ep.declared_gpus is None for ep in serving)
    gpus = [ep.gpus for ep in serving]
    total_gpus = sum(g for g in gpus if g) if serving and all(gpus) and not on_cpu else None
    inferred = any(ep.gpus_inferred for ep in serving) and not on_cpu
    cpu = {"device": "CPU", "workers": len(serving)} if on_cpu else {"workers": len(serving)}
    silent = [ep.name for ep, frame in frames.values() if frame.empty and ep.role in COUNTED]
    causes = [f"{ep.name}: {ep.stats_silence}" for ep, frame in frames.values() if frame.empty and ep.stats_silence]
    if window is None:
        note = "no stats lines: nothing to measure" + (f" ({'; '.join(causes)})" if causes else "")
        return Headline(None, None, None, None, None, None, total_gpus, inferred, {}, note, **cpu)
    start, end = window[0], window[1] + pd.Timedelta(seconds=max(round(bucket), 1)) - pd.Timedelta(microseconds=1)
    per_role: dict[str, dict[str, float]] = {}
    prompt = gen = 0.0
    for ep, frame in frames.values():
        rates = endpoint_rates(frame, start, end)
        if rates is None:
            continue
        role = per_role.setdefault(ep.role, {"prompt_tps": 0.0, "gen_tps": 0.0})
        role["prompt_tps"] += rates["prompt_tps"]
        role["gen_tps"] += rates["gen_tps"]
        fields = COUNTED.get(ep.role, ())
        prompt += rates["prompt_tps"] if "prompt_tps" in fields else 0.0
        gen += rates["gen_tps"] if "gen_tps" in fields else 0.0
    if silent:
        note = f"{', '.join(silent)} printed no stats lines: the deployment's throughput is unknown" + (
            f" ({'; '.join(causes)})" if causes else "")
        return Headline(start, end, None, None, None, None, total_gpus, inferred, per_role, note, **cpu)
    roles = {ep.role for ep in serving}
    if ("prefill" in roles) != ("decode" in roles):
        missing = "decode" if "prefill" in roles else "prefill"
        note = f"no {missing} endpoint among the sources: the headline counts only one side"
    else:
        guessed = [f"{ep.name}: {ep.gpus_from}" for ep in serving if ep.gpus_inferred]
        note = f"GPU count partly guessed ({'; '.join(guessed[:3])}{'; ...' if len(guessed) > 3 else ''})" \
            if guessed else None
    total = prompt + gen
    per_gpu = total / total_gpus if total_gpus else None
    if on_cpu:
        note = (f"{note}; " if note else "") + "vLLM's CPU backend: no GPU, tokens/s per worker instead"
        return Headline(start, end, prompt, gen, total, None, None, False, per_role, note, "CPU", len(serving),
                        total / len(serving))
    return Headline(start, end, prompt, gen, total, per_gpu, total_gpus, inferred, per_role, note,
                    workers=len(serving))
