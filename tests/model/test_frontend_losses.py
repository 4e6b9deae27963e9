"""Which process a peer's line says was lost (pdwatch/model/frontend_losses.py), through the store.

Hand-made events in the shapes the parsers give for real Dynamo 1.6 lines (the real captures in
tests/data/real/dynamo test the whole path): a frontend's broken streams, removed worker sets and
restarts, a worker's reset request-plane connection, against workers that went silent, kept
printing, were stopped, or were idle.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from pdwatch.model.store import Store
from pdwatch.parsers import Event

T0 = datetime(2026, 12, 3, 16, 24, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def stats(source: str, t: float, running: int = 4, waiting: int = 0) -> Event:
    return Event("stats", source, int(t * 10), at(t), 0, "INFO",
                 {"prompt_tps": 500.0, "gen_tps": 500.0, "running": running, "waiting": waiting, "kv_usage_pct": 50.0})


def event(kind: str, source: str, t: float, **values) -> Event:
    return Event(kind, source, int(t * 10) + 1, at(t), None, "INFO", values, text=f"{kind} at {t}")


FRONTEND = [event("dynamo_process", "fe.log", 0, process="frontend", stage="start", port=8000)]
WORKER_START = [event("dynamo_process", "w.log", 0, process="worker", stage="register", serves="chat,completions")]


def store_of(*groups: list[Event]) -> Store:
    store = Store()
    for events in groups:
        store.add(events)
    store.flush()
    return store


def derived(store: Store, name: str, kind: str) -> list[float]:
    events = store.events(name)
    rows = events[events["kind"] == kind]
    return [(pd_ts - T0).total_seconds() for pd_ts in rows["ts"]]


def worker_lines(until: float, every: float = 2.0, start: float = 2.0, **kw) -> list[Event]:
    out, t = [], start
    while t <= until:
        out.append(stats("w.log", t, **kw))
        t += every
    return out


def broken_stream(t: float) -> list[Event]:
    return [event("backend_error", "fe.log", t, reason="worker_disconnected", error_type="disconnected",
                  worker_id=None, target=None)]


def test_a_worker_silent_across_a_broken_stream_is_lost():
    store = store_of(FRONTEND, WORKER_START, worker_lines(20), broken_stream(20.5),
                     [event("frontend_response", "fe.log", 30, status=503, inference=True)])
    assert derived(store, "w", "lost_by_frontend") == [20.5]
    assert derived(store, "fe", "frontend_lost") == []


def test_a_worker_that_keeps_printing_is_not_lost():
    store = store_of(FRONTEND, WORKER_START, worker_lines(40), broken_stream(20.5))
    assert derived(store, "w", "lost_by_frontend") == []


def test_a_worker_stopped_on_purpose_is_not_lost():
    store = store_of(FRONTEND, WORKER_START, worker_lines(20),
                     [event("stop_requested", "w.log", 20.2, how="dynamo_graceful_shutdown")], broken_stream(20.5),
                     [event("worker_set", "fe.log", 21, action="removed", mode="aggregated", component="backend",
                            remaining=0)])
    assert derived(store, "w", "lost_by_frontend") == []


def test_an_idle_worker_is_no_candidate_for_a_broken_stream():
    # its last stats line shows nothing to do: no stream of its can have broken
    idle = [Event("stats", "w.log", t * 10, at(t), 0, "INFO", {"prompt_tps": 0.0, "gen_tps": 0.0, "running": 0,
                                                               "waiting": 0}) for t in (2, 4)]
    store = store_of(FRONTEND, WORKER_START, idle, broken_stream(5),
                     [event("frontend_response", "fe.log", 30, status=200, inference=True)])
    busy = [e for e in store.stats("w")["running"]]
    assert busy == [0, 0]
    assert derived(store, "w", "lost_by_frontend") == []


def test_a_removed_worker_set_names_the_role():
    prefill = [event("dynamo_process", "p.log", 0, process="worker", stage="register", serves="prefill")]
    p_lines = [Event("stats", "p.log", int(t * 10), at(t), 0, "INFO", {"prompt_tps": 900.0, "running": 0,
                                                                        "waiting": 0}) for t in range(2, 21, 2)]
    removed = [event("worker_set", "fe.log", 30, action="removed", mode="prefill", component="prefill", remaining=1)]
    store = store_of(FRONTEND, WORKER_START, prefill, worker_lines(60), p_lines, removed)
    assert derived(store, "p", "lost_by_frontend") == [30]
    assert derived(store, "w", "lost_by_frontend") == []  # the aggregated worker is not of that mode


def test_live_the_decision_waits_for_the_silence():
    # Fed as a watch reads: the frontend's line comes before the worker has been silent long enough.
    store = Store()
    store.add(FRONTEND + WORKER_START + worker_lines(20) + broken_stream(20.5))
    store.flush()
    assert derived(store, "w", "lost_by_frontend") == []  # the store has seen nothing after 20.5 s yet
    store.add([event("frontend_response", "fe.log", 21.5, status=503, inference=True)])
    store.flush()
    assert derived(store, "w", "lost_by_frontend") == []  # 1.5 s of silence: under 1.5 intervals (3 s)
    store.add([event("frontend_response", "fe.log", 23.5, status=503, inference=True)])
    store.flush()
    assert derived(store, "w", "lost_by_frontend") == [20.5]  # 3.5 s: decided


def test_back_when_its_log_speaks_again():
    store = store_of(FRONTEND, WORKER_START, worker_lines(20), broken_stream(20.5),
                     [event("dynamo_process", "w.log", 70, process="worker", stage="start")],
                     worker_lines(90, start=80))
    assert derived(store, "w", "lost_by_frontend") == [20.5]
    assert derived(store, "w", "seen_again") == [70]


def test_a_frontend_whose_workers_lose_their_connection_is_lost():
    requests = [Event("frontend_response", "fe.log", int(t * 10), at(t), None, "INFO",
                      {"status": 200, "inference": True, "latency_ms": 5.0}) for t in (5.2, 6.4, 7.3, 8.1)]
    reset = [event("request_plane_error", "w.log", 9.0, error="Connection reset by peer (os error 104)")]
    store = store_of(FRONTEND, WORKER_START, requests, worker_lines(8), reset, worker_lines(40, start=10))
    # the frontend's last request row covers the second 8: it was last seen alive at 8 s
    assert derived(store, "fe", "frontend_lost") == [9.0]
    assert derived(store, "w", "lost_by_frontend") == []


def test_a_frontend_started_again_with_no_stop_died_after_its_last_line():
    requests = [Event("frontend_response", "fe.log", int(t * 10), at(t), None, "INFO",
                      {"status": 200, "inference": True, "latency_ms": 5.0}) for t in (5.2, 6.4)]
    again = [event("dynamo_process", "fe.log", 15, process="frontend", stage="start", port=8000)]
    store = store_of(FRONTEND, requests, again)
    assert derived(store, "fe", "frontend_lost") == [6.0]  # the start of the last second it answered in
    assert derived(store, "fe", "seen_again") == [15]


def test_a_frontend_stopped_then_started_is_no_death():
    stop = [event("stop_requested", "fe.log", 10, how="frontend_shutdown")]
    again = [event("dynamo_process", "fe.log", 15, process="frontend", stage="start", port=8000)]
    store = store_of(FRONTEND, stop, again)
    assert derived(store, "fe", "frontend_lost") == []


def test_a_worker_writing_request_lines_is_alive_though_its_stats_line_is_late():
    # Live, a worker's request lines are read but not kept: a stats line late on a busy machine
    # does not make a worker that still writes lost.
    requests = [Event("request_completed", "w.log", 300 + k, at(20.8 + k), None, "INFO", {"status": None})
                for k in range(5)]
    store = store_of(FRONTEND, WORKER_START, worker_lines(20), broken_stream(20.5), requests,
                     [event("frontend_response", "fe.log", 26, status=200, inference=True)])
    assert derived(store, "w", "lost_by_frontend") == []
