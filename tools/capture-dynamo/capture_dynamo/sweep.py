"""A real concurrency sweep, srt-slurm sa-bench style, against one Dynamo deployment.

One deployment (a frontend and one aggregated ``dynamo.vllm`` worker with a KV cache limited by
``--num-gpu-blocks-override``, brought up by ``deployment.Deployment``: the kit's own commands,
environment, ports and model folder), then for each concurrency C a warm-up and a measured run of
vLLM's own client, ``vllm bench serve`` from the Dynamo venv, against the frontend, the way
srt-slurm's ``sa-bench/bench.sh`` runs them: random dataset, ``--ignore-eos``, ``--max-concurrency
C``, the warm-up ``C x warmup_mult`` prompts at 250 requests/s and not saved, the measured run ``C x
prompts_mult`` prompts at an infinite rate saved with ``--save-result --save-detailed``. Written in
srt-slurm's layout, ``OUT/outputs/<job_id>/``:

- ``<job_id>.json`` (metadata version 2.0: ``resources`` with one aggregated worker of one "GPU"),
  ``config.yaml`` (the concurrencies, as srt-slurm keeps them), ``README.md`` and ``sweep.json`` (what
  happened, in UTC, and facts per point read with plain regular expressions, not pdwatch);
- ``logs/<node>_frontend_0.out``, ``logs/<node>_agg_w0.out``: each process's stdout and stderr, untouched;
- ``logs/benchmark.out``: sa-bench's markers (``Running benchmark with concurrency: C``, a ``date`` line,
  the ``+ vllm bench serve ...`` trace, the client's output, a ``date`` line, ``Completed benchmark with
  concurrency: C``, a dash line) around the client's own stdout and stderr;
- ``logs/sa-bench_isl_<ISL>_osl_<OSL>/results_concurrency_<C>_gpus_1.json``: the client's result files;
- ``logs/<node>_frontend_0.metrics.txt``, ``logs/<node>_agg_w0.metrics.txt``: each process's ``/metrics`` every 2 s as
  the kit records them, named as its log
  (``run.Scraper``; the header's ``phase=`` names the point: ``warmup_c8``, ``c8``, ``between``);
  with ``scrapes="raw-jsonl"`` (or ``"both"``) ``logs/raw_prometheus.jsonl`` instead (or too): srt-slurm's
  record shape, one JSON line per scrape and process.

The tokenizer: ``vllm bench serve`` loads the model folder's word-level tokenizer
(``word_tokenizer.py``; ``--tokenizer`` points at the folder), draws random token ids and decodes them
to words (``w17 w999 ...``); the frontend tokenizes them back one word one token, so the client's
prompt lengths are what the worker sees.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import shlex
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from capture_vllm.record import iso
from capture_vllm.run import say

from .deployment import Deployment
from .facts import ANSI, STATS, _machine, _versions
from .run import SCRAPE_EVERY_S, SERVED, Scraper
from .scenarios import Proc

VLLM_STAMP = re.compile(r"\b(?:INFO|WARNING|ERROR|DEBUG) (\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)\b")
GEN = re.compile(r"Avg generation throughput: ([\d.]+) tokens/s")
PREEMPT = re.compile(r"preempt", re.I)
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")
HEADER = re.compile(r"^# =====.*\bphase=(\S+) t=(\d+(?:\.\d+)?)")
RESULT_KEYS = ("date", "num_prompts", "completed", "failed", "max_concurrency", "duration", "total_input_tokens",
               "total_output_tokens", "request_throughput", "output_throughput", "total_token_throughput",
               "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "p99_tpot_ms",
               "mean_itl_ms", "mean_e2el_ms")


@dataclass
class SweepConfig:
    job_id: str
    concurrencies: tuple[int, ...] = (1, 4, 8, 16, 32)
    isl: int = 256
    osl: int = 128
    range_ratio: float = 0.8
    blocks: int = 24  # --num-gpu-blocks-override: 24 blocks of 128 tokens
    max_num_seqs: int = 64
    prompts_mult: int = 10  # sa-bench's NUM_PROMPTS_MULT
    warmup_mult: int = 2  # sa-bench's NUM_WARMUP_MULT
    node: str = field(default_factory=lambda: socket.gethostname().split(".")[0] or "node")
    run_timeout_s: float = 900.0  # one vllm bench serve run
    # how /metrics is recorded: "metrics-txt" (logs/<node>_<proc>.metrics.txt), "raw-jsonl" (srt-slurm's
    # logs/raw_prometheus.jsonl, one JSON record per scrape and process) or "both"
    scrapes: str = "metrics-txt"


def date_line(t: float) -> str:
    """``date '+%Y-%m-%d %H:%M:%S'`` as bench.sh prints it (the kit's processes run with TZ=UTC)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t))


class SweepCapture:
    def __init__(self, cfg: SweepConfig, venv: Path, out: Path):
        self.cfg, self.venv = cfg, venv
        self.job = out / "outputs" / cfg.job_id
        self.logs = self.job / "logs"
        self.result_dir = self.logs / f"sa-bench_isl_{cfg.isl}_osl_{cfg.osl}"
        self.timeline: list[dict] = []
        self.points: list[dict] = []
        self.phase = "start-up"
        self.commands: list[str] = []

    def note(self, what: str, **facts) -> None:
        self.timeline.append({"t": round(time.time(), 3), "utc": iso(time.time()), "what": what, **facts})
        say(what)

    # --- the client ---------------------------------------------------------------------------

    def _bench_argv(self, dep: Deployment, c: int, prompts: int, rate: str, save: bool) -> list[str]:
        cfg = self.cfg
        argv = [str(self.venv / "bin" / "vllm"), "bench", "serve",
                "--model", SERVED, "--tokenizer", str(dep._kit.model),
                "--host", "127.0.0.1", "--port", str(dep.http_port),
                "--backend", "openai", "--endpoint", "/v1/completions", "--disable-tqdm",
                "--dataset-name", "random", "--num-prompts", str(prompts),
                "--random-input-len", str(cfg.isl), "--random-output-len", str(cfg.osl),
                "--random-range-ratio", str(cfg.range_ratio), "--ignore-eos",
                "--request-rate", rate, "--percentile-metrics", "ttft,tpot,itl,e2el",
                "--max-concurrency", str(c)]
        if save:
            argv += ["--save-result", "--save-detailed", "--result-dir", str(self.result_dir),
                     "--result-filename", f"results_concurrency_{c}_gpus_1.json"]
        return argv

    def _run_bench(self, argv: list[str], bench_out, env: dict[str, str]) -> int | None:
        shown = " ".join(shlex.quote(a) for a in ["vllm", *argv[1:]])
        self.commands.append(shown)
        bench_out.flush()
        try:
            done = subprocess.run(argv, stdout=bench_out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  env=env, timeout=self.cfg.run_timeout_s)
            return done.returncode
        except subprocess.TimeoutExpired:
            return None

    # --- the run ------------------------------------------------------------------------------

    def run(self) -> Path:
        cfg = self.cfg
        if self.job.exists():
            raise FileExistsError(f"{self.job} exists; nothing is overwritten (move it away)")
        self.result_dir.mkdir(parents=True)
        worker = Proc("agg_w0", args=("--max-num-seqs", str(cfg.max_num_seqs),
                                      "--num-gpu-blocks-override", str(cfg.blocks)))
        dep = Deployment(self.venv, self.logs, (worker,), name=cfg.job_id)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TZ": "UTC"}
        raw = self.logs / "raw_prometheus.jsonl" if cfg.scrapes in ("raw-jsonl", "both") else None
        scraper = Scraper(cfg.job_id, self.logs, {"frontend": dep.http_port, "agg_w0": dep.system_port("agg_w0")},
                          lambda: self.phase, raw_jsonl=raw, metrics_txt=cfg.scrapes != "raw-jsonl")
        exits: dict = {}
        self.note("starting the frontend and the worker")
        try:
            took = dep.start(timeout_s=420)
            self.note(f"ready: the worker's /health 200 and the frontend lists {SERVED} after {took['listed']:.1f} s",
                      event="ready", took={k: round(v, 1) for k, v in took.items()})
            scraper.start()
            self.phase = "between"
            time.sleep(2 * SCRAPE_EVERY_S)
            with open(self.logs / "benchmark.out", "ab", buffering=0) as out:
                out.write((f"SA-Bench Config: endpoint=http://127.0.0.1:{dep.http_port}; isl={cfg.isl}; "
                           f"osl={cfg.osl}; concurrencies={'x'.join(map(str, cfg.concurrencies))}; req_rate=inf; "
                           f"model={SERVED}; dataset=random; client=vllm bench serve "
                           f"(written by tools/capture-dynamo sweep.py in sa-bench's shape)\n").encode())
                for c in cfg.concurrencies:
                    self.point(dep, c, out, env)
            self.phase = "stop"
            time.sleep(2 * SCRAPE_EVERY_S)
            scraper.done.set()
            scraper.join(10)
            self.note("stopping the worker, then the frontend (SIGINT)", event="stop")
            exits = dep.stop(grace_s=40.0)
            self.note(f"exit codes {exits}", event="exit", codes=exits)
        finally:
            scraper.done.set()
            dep.stop(grace_s=5.0)  # a no-op after a clean stop; kills what is left otherwise
            for proc, log in (("frontend", f"{cfg.node}_frontend_0.out"), ("agg_w0", f"{cfg.node}_agg_w0.out")):
                src = self.logs / f"{cfg.job_id}.{proc}.log"
                if src.exists():
                    src.rename(self.logs / log)
                # each process's scrapes named as its log (x.out, x.metrics.txt): one endpoint to a reader,
                # since a worker's log never prints the status port its /metrics was scraped on
                scrapes = self.logs / f"{cfg.job_id}.{proc}.metrics.txt"
                if scrapes.exists():
                    scrapes.rename(self.logs / log.replace(".out", ".metrics.txt"))
        self.describe(dep, scraper, exits)
        say(f"sweep written to {self.job}")
        return self.job

    def point(self, dep: Deployment, c: int, out, env: dict[str, str]) -> None:
        cfg = self.cfg
        self.phase = f"warmup_c{c}"
        t0 = time.time()
        self.note(f"C={c}: warm-up, {c * cfg.warmup_mult} prompts", event="warmup", concurrency=c)
        warm_rc = self._run_bench(self._bench_argv(dep, c, c * cfg.warmup_mult, "250", False), out, env)
        self.phase = f"c{c}"
        argv = self._bench_argv(dep, c, c * cfg.prompts_mult, "inf", True)
        start = time.time()
        out.write(f"Running benchmark with concurrency: {c}\n{date_line(start)}\n".encode())
        out.write(("+ " + " ".join(shlex.quote(a) for a in ["vllm", *argv[1:]]) + "\n").encode())
        self.note(f"C={c}: measured run, {c * cfg.prompts_mult} prompts", event="measured", concurrency=c)
        rc = self._run_bench(argv, out, env)
        end = time.time()
        out.write(f"{date_line(end)}\nCompleted benchmark with concurrency: {c}\n"
                  "-----------------------------------------\n".encode())
        self.phase = "between"
        self.note(f"C={c}: done (warm-up exit {warm_rc}, measured exit {rc}, {end - start:.1f} s measured)",
                  event="done", concurrency=c)
        self.points.append({"concurrency": c, "warmup_start": round(t0, 3), "start": round(start, 3),
                            "end": round(end, 3), "warmup_exit": warm_rc, "exit": rc,
                            "date_lines": [date_line(start), date_line(end)]})

    # --- what was written down ----------------------------------------------------------------

    def describe(self, dep: Deployment, scraper: Scraper, exits: dict) -> None:
        cfg = self.cfg
        year = time.gmtime(self.timeline[0]["t"]).tm_year
        worker_log = self.logs / f"{cfg.node}_agg_w0.out"
        frontend_log = self.logs / f"{cfg.node}_frontend_0.out"
        stats = worker_stats(worker_log, year) if worker_log.exists() else []
        scrapes = scrape_series(self.logs / f"{cfg.node}_agg_w0.metrics.txt") or \
            scrape_series_jsonl(self.logs / "raw_prometheus.jsonl", "agg", 0)
        for p in self.points:
            # The window as benchmark.out's date lines give it (whole seconds), as a reader of the job sees it.
            lo, hi = int(p["start"]), int(p["end"])
            p["stats_window"] = window_facts([s for s in stats if lo <= s["t"] <= hi])
            p["stats_warmup"] = window_facts([s for s in stats if p["warmup_start"] <= s["t"] < lo])
            p["scrapes_window"] = scrape_window(scrapes, p["start"], p["end"])
            p["result"] = result_facts(self.result_dir / f"results_concurrency_{p['concurrency']}_gpus_1.json")
        frontend = frontend_log.read_bytes().decode("utf-8", "replace") if frontend_log.exists() else ""
        d = {"job_id": cfg.job_id, "config": asdict(cfg), "captured_at": self.timeline[0]["utc"],
             "versions": _versions(self.venv), "machine": _machine(), "model": "tiny-qwen3 (dummy weights)",
             "processes": dep._kit.command_lines(), "bench_commands": self.commands,
             "timeline": self.timeline, "exit_codes": exits, "points": self.points,
             "scrapes": {"every_s": SCRAPE_EVERY_S, "taken": scraper.taken,
                         "failed": {k: len(v) for k, v in scraper.failed.items()}},
             "frontend_tokenize_404_lines": sum(1 for line in frontend.splitlines()
                                                if "/tokenize" in line and "404" in line),
             "worker_stats_lines": len(stats)}
        (self.job / "sweep.json").write_text(json.dumps(d, indent=1) + "\n", encoding="utf-8")
        (self.job / f"{cfg.job_id}.json").write_text(json.dumps(metadata(cfg, d), indent=2) + "\n", encoding="utf-8")
        (self.job / "config.yaml").write_text(
            f"# written by tools/capture-dynamo sweep.py (srt-slurm keeps the sweep's concurrencies here)\n"
            f"name: {metadata(cfg, d)['job_name']}\nbenchmark:\n  type: sa-bench\n  isl: {cfg.isl}\n  osl: {cfg.osl}\n"
            f"  concurrencies: \"{'x'.join(map(str, cfg.concurrencies))}\"\n  req_rate: inf\n", encoding="utf-8")
        (self.job / "README.md").write_text(readme(d), encoding="utf-8")


def metadata(cfg: SweepConfig, d: dict) -> dict:
    """srt-slurm's ``<job_id>.json``, version 2.0 (``submit.py``'s keys), for what this job was."""
    return {"version": "2.0", "orchestrator": False, "job_id": cfg.job_id,
            "job_name": f"cpu-tiny-qwen3-agg-c{'x'.join(map(str, cfg.concurrencies))}",
            "generated_at": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(d["timeline"][0]["t"])),
            "note": "written by pdwatch's tools/capture-dynamo sweep.py, not by srtctl: one machine, no Slurm",
            "model": {"path": "tiny-qwen3 (the kit's 2-layer Qwen3 config, dummy weights)", "container": None,
                      "precision": "bf16"},
            "resources": {"gpu_type": "cpu", "gpus_per_node": 1, "prefill_nodes": None, "decode_nodes": None,
                          "agg_nodes": 1, "prefill_workers": None, "decode_workers": None, "agg_workers": 1,
                          "gpus_per_prefill": None, "gpus_per_decode": None, "gpus_per_agg": 1},
            "backend_type": "vllm", "frontend_type": "dynamo",
            "benchmark": {"type": "sa-bench", "isl": cfg.isl, "osl": cfg.osl}}


# --- facts, with plain regular expressions --------------------------------------------------------

def worker_stats(path: Path, year: int) -> list[dict]:
    """Every vLLM stats line of a log: its time (vLLM's whole-second stamp, UTC here), line number,
    running, waiting, KV %, generation tokens/s."""
    out = []
    for n, raw in enumerate(path.read_bytes().decode("utf-8", "replace").splitlines(), 1):
        line = ANSI.sub("", raw)
        m = STATS.search(line)
        stamp = VLLM_STAMP.search(line)
        if not (m and stamp):
            continue
        mo, dd, hh, mi, ss = map(int, stamp.groups())
        t = calendar.timegm((year, mo, dd, hh, mi, ss, 0, 0, 0))  # vLLM's stamps are UTC here (TZ=UTC)
        gen = GEN.search(line)
        out.append({"t": t, "line": n, "running": int(m.group(1)), "waiting": int(m.group(2)),
                    "kv_pct": float(m.group(3)), "gen_tps": float(gen.group(1)) if gen else None})
    return out


def window_facts(rows: list[dict]) -> dict:
    if not rows:
        return {"stats_lines": 0}
    top_kv = max(rows, key=lambda r: r["kv_pct"])
    top_wait = max(rows, key=lambda r: r["waiting"])
    gens = [r["gen_tps"] for r in rows if r["gen_tps"] is not None]
    return {"stats_lines": len(rows), "first_line": rows[0]["line"], "last_line": rows[-1]["line"],
            "max_kv_pct": top_kv["kv_pct"], "max_kv_line": top_kv["line"],
            "max_waiting": top_wait["waiting"], "max_waiting_line": top_wait["line"],
            "max_running": max(r["running"] for r in rows),
            "lines_kv_ge_90_with_waiting": sum(1 for r in rows if r["kv_pct"] >= 90 and r["waiting"] > 0),
            "lines_with_waiting": sum(1 for r in rows if r["waiting"] > 0),
            "mean_gen_tps": round(sum(gens) / len(gens), 1) if gens else None}


def scrape_series(path: Path) -> list[tuple[float, dict[str, float]]]:
    """(t, {series: value summed over label sets}) per scrape of a ``*.metrics.txt``."""
    out: list[tuple[float, dict[str, float]]] = []
    if not path.exists():
        return out
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        m = HEADER.match(line)
        if m:
            out.append((float(m.group(2)), {}))
            continue
        m = SAMPLE.match(line)
        if m and out and m.group(1) in ("vllm:kv_cache_usage_perc", "vllm:num_requests_waiting",
                                         "vllm:num_requests_running", "vllm:num_preemptions_total"):
            try:
                out[-1][1][m.group(1)] = out[-1][1].get(m.group(1), 0.0) + float(m.group(3))
            except ValueError:
                pass
    return out


def scrape_series_jsonl(path: Path, role: str, worker_id: int) -> list[tuple[float, dict[str, float]]]:
    """``scrape_series`` of one process's records in a ``raw_prometheus.jsonl`` (plain json, not pdwatch)."""
    out: list[tuple[float, dict[str, float]]] = []
    if not path.exists():
        return out
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("role") != role or record.get("worker_id") != worker_id or not record.get("text"):
                continue
            series: dict[str, float] = {}
            for sample in record["text"].splitlines():
                m = SAMPLE.match(sample)
                if m and m.group(1) in ("vllm:kv_cache_usage_perc", "vllm:num_requests_waiting",
                                        "vllm:num_requests_running", "vllm:num_preemptions_total"):
                    try:
                        series[m.group(1)] = series.get(m.group(1), 0.0) + float(m.group(3))
                    except ValueError:
                        pass
            out.append((record["timestamp_ns"] / 1e9, series))
    return out


def scrape_window(scrapes: list[tuple[float, dict[str, float]]], start: float, end: float) -> dict:
    inside = [s for t, s in scrapes if start <= t <= end]
    if not inside:
        return {"scrapes": 0}
    before = [s for t, s in scrapes if t < start]
    pre0 = before[-1].get("vllm:num_preemptions_total", 0.0) if before else inside[0].get("vllm:num_preemptions_total", 0.0)
    return {"scrapes": len(inside),
            "max_kv_cache_usage_perc": max(s.get("vllm:kv_cache_usage_perc", 0.0) for s in inside),
            "max_num_requests_waiting": max(s.get("vllm:num_requests_waiting", 0.0) for s in inside),
            "max_num_requests_running": max(s.get("vllm:num_requests_running", 0.0) for s in inside),
            "preemptions_in_window": inside[-1].get("vllm:num_preemptions_total", 0.0) - pre0}


def result_facts(path: Path) -> dict:
    if not path.exists():
        return {"file": path.name, "missing": True}
    data = json.loads(path.read_text(encoding="utf-8"))
    out = {"file": path.name, "bytes": path.stat().st_size}
    out.update({k: data[k] for k in RESULT_KEYS if k in data})
    errors = [e for e in data.get("errors", []) if e]
    out["errors_nonempty"] = len(errors)
    return out


def _f(x, fmt="{:.1f}") -> str:
    return "–" if x is None else fmt.format(x)


def readme(d: dict) -> str:
    cfg, v = d["config"], d["versions"]
    conc = "x".join(map(str, cfg["concurrencies"]))
    lines = [f"# Sweep job {d['job_id']}: Dynamo + vLLM (CPU), one aggregated worker, C = {conc.replace('x', ', ')}", "",
             f"Captured {d['captured_at']} by `tools/capture-dynamo/capture_sweep.py` (pdwatch's Dynamo capture kit): "
             f"ai-dynamo {v.get('ai-dynamo')} (runtime {v.get('ai-dynamo-runtime')}) on vLLM {v.get('vllm')} for CPU "
             f"(torch {v.get('torch')}), {d['machine']}. Model: the kit's tiny random-weight Qwen3 (2 layers) with a "
             "word-level tokenizer (one word, one token).",
             "",
             f"A Dynamo frontend and one aggregated `dynamo.vllm` worker with its KV cache limited to "
             f"{cfg['blocks']} blocks of 128 tokens (`--num-gpu-blocks-override {cfg['blocks']}`, "
             f"{cfg['blocks'] * 128} tokens) and `--max-num-seqs {cfg['max_num_seqs']}`. For each concurrency C, "
             f"srt-slurm sa-bench's procedure with vLLM's own client, `vllm bench serve` (random dataset, ISL "
             f"{cfg['isl']}, OSL {cfg['osl']}, `--random-range-ratio {cfg['range_ratio']}`, `--ignore-eos`, "
             f"`--max-concurrency C`): a warm-up of {cfg['warmup_mult']}×C prompts at 250 requests/s, not saved, "
             f"then the measured run of {cfg['prompts_mult']}×C prompts at an infinite rate, saved as "
             f"`logs/sa-bench_isl_{cfg['isl']}_osl_{cfg['osl']}/results_concurrency_C_gpus_1.json`.",
             "",
             "All times are UTC (every process ran with TZ=UTC; `benchmark.out`'s `date` lines are UTC). The logs "
             "are each process's stdout and stderr, untouched; "
             + (f"`logs/*.metrics.txt` each process's `/metrics` every "
                "2 s after a `# ===== ... phase=P t=EPOCH (ISO) port=N =====` line (`phase=c8` the measured run at C=8, "
                "`warmup_c8` its warm-up)" if cfg.get("scrapes", "metrics-txt") != "raw-jsonl" else "")
             + (" and " if cfg.get("scrapes") == "both" else "")
             + ("`logs/raw_prometheus.jsonl` each process's `/metrics` every 2 s as srt-slurm's scraper records them, "
                "one JSON line per scrape and process (`timestamp_ns`, `endpoint_url`, `role`, `worker_id`, `text`)"
                if cfg.get("scrapes") in ("raw-jsonl", "both") else "")
             + ". The facts below are read with plain regular expressions from the logs, the "
             "scrapes and the result files, not with pdwatch.", "",
             "## Processes", ""]
    for p in d["processes"]:
        lines += [f"`{p['log']}` (renamed `{cfg['node']}_{'frontend_0' if p['name'] == 'frontend' else p['name']}.out`):",
                  "", "```", p["command"], "```", ""]
    lines += ["Benchmark client (one line per run, warm-up then measured, in order):", "", "```",
              *d["bench_commands"], "```", "", "## What happened", "", "| UTC | event |", "|---|---|"]
    lines += [f"| {e['utc'][11:23]} | {e['what']} |" for e in d["timeline"]]
    lines += ["", f"Exit codes: {d['exit_codes']}. Scrapes taken {d['scrapes']['taken']}, failed "
              f"{d['scrapes']['failed']}. Frontend log lines about `/tokenize` with 404 (the client's probe): "
              f"{d['frontend_tokenize_404_lines']}.", "",
              "## Measured facts per point", "",
              "The window of a point is its measured run: from the `date` line after `Running benchmark with "
              "concurrency: C` to the one before `Completed benchmark with concurrency: C` (whole seconds). "
              "Worker stats lines (`Running: N reqs, Waiting: N reqs, CPU KV cache usage: X%`, every 2 s) are counted "
              "when vLLM's whole-second stamp is inside it; scrapes when their `t=` is.", "",
              "| C | window (UTC) | completed / prompts | output tok/s | mean TTFT ms | mean TPOT ms | stats lines "
              "(worker log lines) | max running | max waiting | max KV % | lines KV ≥ 90% with waiting | "
              "scrapes: max KV % / waiting / preemptions |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p in d["points"]:
        r, s, sc = p["result"], p["stats_window"], p["scrapes_window"]
        lines.append(
            f"| {p['concurrency']} | {p['date_lines'][0][11:]} – {p['date_lines'][1][11:]} | "
            f"{r.get('completed', '–')} / {r.get('num_prompts', '–')} | {_f(r.get('output_throughput'))} | "
            f"{_f(r.get('mean_ttft_ms'))} | {_f(r.get('mean_tpot_ms'))} | {s['stats_lines']}"
            f"{' (' + str(s['first_line']) + '–' + str(s['last_line']) + ')' if s['stats_lines'] else ''} | "
            f"{s.get('max_running', '–')} | {s.get('max_waiting', '–')} | {s.get('max_kv_pct', '–')} | "
            f"{s.get('lines_kv_ge_90_with_waiting', '–')} | "
            + (f"{sc['max_kv_cache_usage_perc'] * 100:.1f} / {sc['max_num_requests_waiting']:g} / "
               f"{sc['preemptions_in_window']:g} |" if sc.get("scrapes") else "– |"))
    lines += ["", "During each point's warm-up (before its window):", ""]
    for p in d["points"]:
        w = p["stats_warmup"]
        lines.append(f"- C={p['concurrency']}: {w['stats_lines']} stats lines"
                     + (f", max KV {w['max_kv_pct']}%, max waiting {w['max_waiting']}, max running "
                        f"{w['max_running']}" if w["stats_lines"] else ""))
    lines += ["", "Per-point details (the result's own figures, the client's exit codes) are in `sweep.json`.", ""]
    return "\n".join(lines)
