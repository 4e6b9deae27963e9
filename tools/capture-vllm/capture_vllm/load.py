"""The load client: phases of streaming /v1/completions requests, every request timed.

Prompts are token ids (the server runs with --skip-tokenizer-init), or with ``words=True`` the
same ids written as the words of a word-level tokenizer (``w17 w999 w5``: one word, one token),
for servers that tokenize themselves (a Dynamo frontend). Every request sets ``ignore_eos``, so
a completed request's output length is exactly its ``max_tokens``: the client-side token counts
are an oracle that does not depend on what the server logs.

Standard library only: this runs beside the server, not inside the vLLM venv.
"""

from __future__ import annotations

import http.client
import json
import random
import threading
import time
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Phase:
    """One load phase. ``kind``:

    - ``idle``: no request for ``seconds``;
    - ``paced``: one request every ``every_s`` for ``seconds`` (at most ``concurrency`` in flight);
    - ``closed``: ``concurrency`` clients, each sending its next request when the last one ends,
      for ``seconds`` (a closed loop, like a benchmark client at a fixed concurrency);
    - ``burst``: ``requests`` requests with at most ``concurrency`` in flight, until all end.
    """

    name: str
    kind: str
    seconds: float = 0.0
    concurrency: int = 1
    every_s: float = 1.0
    requests: int = 0
    prompt_len: tuple[int, int] = (64, 128)
    max_tokens: tuple[int, int] = (64, 128)
    shared_prefix: int = 0  # the first N prompt tokens are the same for every request of the phase
    # False: one JSON answer per request, no first-token time. Reading hundreds of streamed
    # chunks per request in Python threads lags behind a busy server on 2 cores, and a
    # closed loop then sends in waves with idle gaps; a steady queue needs quick clients.
    stream: bool = True


@dataclass
class RequestRecord:
    phase: str
    index: int
    sent: float  # epoch seconds
    first_token: float | None = None  # first streamed chunk that carried a token
    end: float | None = None
    prompt_tokens: int = 0  # as sent
    max_tokens: int = 0
    output_tokens: int | None = None  # the server's usage count (== max_tokens when complete)
    chunks: int = 0  # streamed chunks that carried tokens
    status: int | None = None  # HTTP status; None when the connection failed
    error: str | None = None


@dataclass
class PhaseWindow:
    name: str
    kind: str
    start: float
    end: float
    spec: dict = field(default_factory=dict)


class LoadClient:
    """Sends the phases to ``host:port`` and keeps one ``RequestRecord`` per request."""

    def __init__(self, port: int, model: str, *, host: str = "127.0.0.1", vocab: int = 2048, seed: int = 7,
                 timeout_s: float = 120.0, words: bool = False):
        self.host, self.port, self.model, self.vocab, self.timeout_s = host, port, model, vocab, timeout_s
        self.words = words
        self.random = random.Random(seed)
        self.records: list[RequestRecord] = []
        self.windows: list[PhaseWindow] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.in_flight = 0

    # --- phases -------------------------------------------------------------------------------

    def run(self, phase: Phase, on_tick=None) -> PhaseWindow:
        """Run one phase to its end; ``on_tick(elapsed_s)`` is called about every 0.25 s."""
        start = time.time()
        prefix = [self._token() for _ in range(phase.shared_prefix)]
        if phase.kind == "idle":
            self._sleep_until(start + phase.seconds, start, on_tick)
        elif phase.kind == "paced":
            gate = threading.Semaphore(phase.concurrency)
            n = 0
            while time.time() < start + phase.seconds and not self._stop.is_set():
                gate.acquire()
                self._spawn(phase, n, prefix, gate.release)
                n += 1
                self._sleep_until(start + n * phase.every_s, start, on_tick)
            self._join(start, on_tick)
        elif phase.kind == "closed":
            deadline = start + phase.seconds
            counter = iter(range(10**9))

            def loop():
                while time.time() < deadline and not self._stop.is_set():
                    with self._lock:
                        i = next(counter)
                    if not self._request(phase, i, prefix):
                        time.sleep(0.5)  # a server that refuses is not hammered

            self._threads = [threading.Thread(target=loop, daemon=True) for _ in range(phase.concurrency)]
            for t in self._threads:
                t.start()
            self._join(start, on_tick)
        elif phase.kind == "burst":
            gate = threading.Semaphore(phase.concurrency)
            for n in range(phase.requests):
                if self._stop.is_set():
                    break
                gate.acquire()
                self._spawn(phase, n, prefix, gate.release)
            self._join(start, on_tick)
        else:
            raise ValueError(f"unknown phase kind {phase.kind!r}")
        window = PhaseWindow(phase.name, phase.kind, start, time.time(), asdict(phase))
        self.windows.append(window)
        return window

    def stop(self) -> None:
        """Send nothing new (requests in flight finish or fail on their own)."""
        self._stop.set()

    def stop_at(self, when: float) -> None:
        timer = threading.Timer(max(0.0, when - time.time()), self.stop)
        timer.daemon = True
        timer.start()

    # --- requests -----------------------------------------------------------------------------

    def _token(self) -> int:
        # 0-2 are pad/bos/eos in the tiny config; 3 is the word tokenizer's <unk>
        return self.random.randrange(4 if self.words else 3, self.vocab)

    def _spawn(self, phase: Phase, index: int, prefix: list[int], done) -> None:
        def work():
            try:
                self._request(phase, index, prefix)
            finally:
                done()

        t = threading.Thread(target=work, daemon=True)
        self._threads.append(t)
        t.start()

    def _request(self, phase: Phase, index: int, prefix: list[int]) -> bool:
        with self._lock:
            n_prompt = self.random.randint(*phase.prompt_len)
            n_out = self.random.randint(*phase.max_tokens)
            prompt = prefix[:n_prompt] + [self._token() for _ in range(max(0, n_prompt - len(prefix)))]
            self.in_flight += 1
        request = {"model": self.model, "prompt": " ".join(f"w{t}" for t in prompt) if self.words else prompt,
                   "max_tokens": n_out, "ignore_eos": True, "temperature": 0.0,
                   "stream": phase.stream}
        if phase.stream:
            request["stream_options"] = {"include_usage": True}
        body = json.dumps(request)
        rec = RequestRecord(phase.name, index, time.time(), prompt_tokens=n_prompt, max_tokens=n_out)
        try:
            conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
            resp = conn.getresponse()
            rec.status = resp.status
            if resp.status != 200:
                rec.error = resp.read(500).decode("utf-8", "replace").strip()
            elif phase.stream:
                self._read_stream(resp, rec)
            else:
                rec.output_tokens = (json.loads(resp.read()).get("usage") or {}).get("completion_tokens")
            conn.close()
        except (OSError, http.client.HTTPException) as exc:
            rec.error = f"{type(exc).__name__}: {exc}"
        rec.end = time.time()
        with self._lock:
            self.in_flight -= 1
            self.records.append(rec)
        return rec.error is None

    @staticmethod
    def _read_stream(resp, rec: RequestRecord) -> None:
        for raw in resp:
            line = raw.strip()
            if not line.startswith(b"data:"):
                continue
            data = line[5:].strip()
            if data == b"[DONE]":
                return
            chunk = json.loads(data)
            if chunk.get("error"):
                rec.error = json.dumps(chunk["error"])[:500]
            if chunk.get("usage"):
                rec.output_tokens = chunk["usage"].get("completion_tokens")
            if chunk.get("choices"):
                rec.chunks += 1
                if rec.first_token is None:
                    rec.first_token = time.time()
        rec.error = rec.error or "stream ended before [DONE]"

    # --- waiting ------------------------------------------------------------------------------

    def _sleep_until(self, when: float, start: float, on_tick) -> None:
        while not self._stop.is_set():
            left = when - time.time()
            if left <= 0:
                return
            time.sleep(min(left, 0.25))
            if on_tick:
                on_tick(time.time() - start)

    def _join(self, start: float, on_tick) -> None:
        while any(t.is_alive() for t in self._threads):
            time.sleep(0.25)
            if on_tick:
                on_tick(time.time() - start)
        self._threads = []


def phase_totals(records: list[RequestRecord], window: PhaseWindow) -> dict:
    """The client-side figures of one phase (the table in each capture's README)."""
    rs = [r for r in records if r.phase == window.name]
    ok = [r for r in rs if r.status == 200 and r.error is None]
    lat = [r.end - r.sent for r in ok if r.end]
    return {"phase": window.name, "kind": window.kind, "start": window.start, "end": window.end,
            "seconds": round(window.end - window.start, 3), "sent": len(rs), "ok": len(ok),
            "failed": len(rs) - len(ok),
            "prompt_tokens": sum(r.prompt_tokens for r in ok),
            "output_tokens": sum(r.output_tokens or 0 for r in ok),
            "latency_mean_s": round(sum(lat) / len(lat), 3) if lat else None,
            "latency_max_s": round(max(lat), 3) if lat else None}
