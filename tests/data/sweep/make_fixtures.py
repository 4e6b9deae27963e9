"""Writes the sweep fixtures of this folder (run once; the files are committed). See README.md.

The result files have the keys of vLLM 0.32's `vllm bench serve --save-result --save-detailed`, in the
order it writes them (vllm/benchmarks/serve.py: the setup keys, then benchmark()'s result dict, then
mean/median/std/p99 per metric). Aggregates are self-consistent (throughput = tokens / duration);
per-request arrays are cut to 4 entries of the run's requests.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent


def result(concurrency: int, date: str, duration: float, completed: int, num_prompts: int, failed: int = 0,
           isl: int = 256, osl: int = 128, tpot_ms: float = 20.0, ttft_ms: float = 40.0) -> dict:
    total_in, total_out = completed * isl, completed * osl
    itl = [[round(tpot_ms / 1000, 5)] * 3 for _ in range(4)]
    metrics = {}
    for name, mean in (("ttft", ttft_ms), ("tpot", tpot_ms), ("itl", tpot_ms * 0.98), ("e2el", ttft_ms + tpot_ms * (osl - 1))):
        metrics |= {f"mean_{name}_ms": mean, f"median_{name}_ms": mean * 0.97, f"std_{name}_ms": mean * 0.1,
                    f"p99_{name}_ms": mean * 1.6}
    return {
        "date": date, "endpoint_type": "openai", "backend": "openai", "label": None, "model_id": "tiny-qwen3",
        "tokenizer_id": "../../model", "num_prompts": num_prompts, "request_rate": "inf", "burstiness": 1.0,
        "max_concurrency": concurrency,
        "duration": duration, "completed": completed, "failed": failed,
        "total_input_tokens": total_in, "total_output_tokens": total_out,
        "request_throughput": completed / duration, "request_goodput": None,
        "output_throughput": total_out / duration, "total_token_throughput": (total_in + total_out) / duration,
        "input_lens": [isl - 3, isl, isl + 7, isl - 11], "output_lens": [osl] * 4,
        "ttfts": [ttft_ms / 1000] * 4, "itls": itl, "latencies": [(ttft_ms + tpot_ms * osl) / 1000] * 4,
        "start_times": [1796295262.4 + i * 0.01 for i in range(4)], "queue_times": [0.0] * 4,
        "generated_texts": [" w5 w6 w7 \"w8\"\n w9"] * 4, "errors": [""] * 4,
        "max_output_tokens_per_s": total_out / duration * 1.3, "max_concurrent_requests": concurrency, "rtfx": 0.0,
        **metrics,
        "mean_client_queue_time_ms": 0.05, "median_client_queue_time_ms": 0.04, "std_client_queue_time_ms": 0.01,
        "p99_client_queue_time_ms": 0.2,
    }


LEAK_TAIL = ('nanobind: leaked 4 instances!\n - leaked instance 0x7fbfb3240be8 of type "triton._C.libtriton.ir.attribute"\n'
             "nanobind: this is likely caused by a reference counting issue in the binding code.\n"
             "See https://nanobind.readthedocs.io/en/latest/refleaks.html")


def serving_block(r: dict) -> str:
    lines = ["{s:{c}^{n}}".format(s=" Serving Benchmark Result ", n=50, c="="),
             "{:<40} {:<10}".format("Successful requests:", r["completed"]),
             "{:<40} {:<10}".format("Failed requests:", r["failed"]),
             "{:<40} {:<10}".format("Maximum request concurrency:", r["max_concurrency"]),
             "{:<40} {:<10.2f}".format("Benchmark duration (s):", r["duration"]),
             "{:<40} {:<10}".format("Total input tokens:", r["total_input_tokens"]),
             "{:<40} {:<10}".format("Total generated tokens:", r["total_output_tokens"]),
             "{:<40} {:<10.2f}".format("Request throughput (req/s):", r["request_throughput"]),
             "{:<40} {:<10.2f}".format("Output token throughput (tok/s):", r["output_throughput"]),
             "{:<40} {:<10.2f}".format("Total token throughput (tok/s):", r["total_token_throughput"])]
    for name, header in (("ttft", "Time to First Token"), ("tpot", "Time per Output Token (excl. 1st token)")):
        lines += ["{s:{c}^{n}}".format(s=header, n=50, c="-"),
                  "{:<40} {:<10.2f}".format(f"Mean {name.upper()} (ms):", r[f"mean_{name}_ms"]),
                  "{:<40} {:<10.2f}".format(f"P99 {name.upper()} (ms):", r[f"p99_{name}_ms"])]
    return "\n".join(lines + ["=" * 50]) + "\n"


def client_run(r: dict, warmup: bool) -> str:
    head = (f"Starting main benchmark run...\nTraffic request rate: {250.0 if warmup else 'inf'}\n"
            f"Burstiness factor: 1.0 (Poisson process)\nMaximum request concurrency: {r['max_concurrency']}\n")
    return head + serving_block(r) + LEAK_TAIL  # no newline: the next line is glued to it


def benchmark_out(points: list[tuple[dict, str, str]], glue_first: bool = True, unfinished: dict | None = None) -> str:
    out = ["SA-Bench Config: endpoint=http://127.0.0.1:8700; isl=256; osl=128; concurrencies=...; req_rate=inf; "
           "model=tiny-qwen3; dataset=random; client=vllm bench serve", "Verifying endpoint...",
           '{"id":"chatcmpl-1","choices":[{"message":{"content":"w5 w6"}}]}']
    text = "\n".join(out) + "\n"
    for r, start, end in points:
        warm = dict(r, duration=r["duration"] / 5, completed=r["max_concurrency"] * 2)
        text += client_run(warm, warmup=True)
        text += f"Running benchmark with concurrency: {r['max_concurrency']}\n{start}\n"
        text += (f"+ vllm bench serve --model tiny-qwen3 --max-concurrency {r['max_concurrency']} --save-result\n"
                 + client_run(r, warmup=False) + "+ set +x\n")
        text += f"{end}\nCompleted benchmark with concurrency: {r['max_concurrency']}\n-----------------------------------------\n"
    if unfinished:
        text += client_run(dict(unfinished, completed=unfinished["max_concurrency"] * 2), warmup=True)
        text += (f"Running benchmark with concurrency: {unfinished['max_concurrency']}\n2026-12-03 11:12:40\n"
                 f"+ vllm bench serve --model tiny-qwen3 --max-concurrency {unfinished['max_concurrency']} --save-result\n"
                 "Starting main benchmark run...\n")
    return text


def write_json(path: Path, document: dict, indent: int | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=indent))


def main() -> None:
    for name in ("srt-slurm", "legacy", "rollup-only"):
        shutil.rmtree(HERE / name, ignore_errors=True)

    # Current layout, aggregated: 1 worker = 1 "GPU"; concurrency 2 and 8.
    agg = HERE / "srt-slurm" / "outputs" / "4242001"
    logs = agg / "logs"
    c2 = result(2, "20261203-105512", 41.37, 20, 20, tpot_ms=14.2, ttft_ms=31.0)
    c8 = result(8, "20261203-105650", 58.91, 80, 80, tpot_ms=37.5, ttft_ms=88.0)
    for r in (c2, c8):
        write_json(logs / "sa-bench_isl_256_osl_128" / f"results_concurrency_{r['max_concurrency']}_gpus_1.json", r)
    (logs / "benchmark.out").write_text(benchmark_out([(c2, "2026-12-03 10:54:31", "2026-12-03 10:55:12"),
                                                       (c8, "2026-12-03 10:55:51", "2026-12-03 10:56:50")]))
    (logs / "cpunode1_agg_w0.out").write_text(
        "INFO 12-03 10:55:02 [loggers.py:259] Engine 000: Avg prompt throughput: 1290.3 tokens/s, Avg generation "
        "throughput: 630.1 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 12.5%, Prefix cache hit rate: 0.0%\n")
    (logs / "cpunode1_frontend_0.out").write_text(
        "2026-12-03T10:54:20.511Z  INFO dynamo_llm::http::service::service_v2: Starting HTTP service on: 127.0.0.1:8700\n")
    with gzip.GzipFile(logs / "raw_prometheus.jsonl.gz", "wb", mtime=0) as scrapes:  # mtime 0: same bytes each run
        scrapes.write(json.dumps({"timestamp_ns": 1796295271000000000, "endpoint_url": "http://127.0.0.1:8701/metrics",
                                  "role": "agg", "worker_id": "agg_w0", "text": "vllm:num_requests_running 2.0\n"}).encode() + b"\n")
    write_json(agg / "4242001.json", {
        "job_id": "4242001", "job_name": "cpu-tiny-qwen3-agg-sa-bench",
        "resources": {"gpu_type": "cpu", "gpus_per_node": 1, "prefill_nodes": 0, "decode_nodes": 0, "agg_nodes": 1,
                      "prefill_workers": 0, "decode_workers": 0, "agg_workers": 1, "total_gpus_counted": 1},
        "benchmark": {"type": "sa-bench", "isl": 256, "osl": 128, "concurrencies": "2x8"}}, indent=2)

    # Current layout, prefill/decode: c=8 fine; c=24 killed mid-write (truncated file, no Completed marker).
    disagg = HERE / "srt-slurm" / "outputs" / "4242002"
    logs = disagg / "logs"
    d8 = result(8, "20261203-111205", 64.02, 78, 80, failed=2, tpot_ms=41.0, ttft_ms=120.0)
    d24 = result(24, "20261203-111400", 90.0, 240, 240, tpot_ms=66.0, ttft_ms=310.0)
    write_json(logs / "sa-bench_isl_256_osl_128" / "results_concurrency_8_gpus_2_ctx_1_gen_1.json", d8)
    whole = json.dumps(d24)
    (logs / "sa-bench_isl_256_osl_128" / "results_concurrency_24_gpus_2_ctx_1_gen_1.json").write_text(
        whole[:whole.index('"itls"') + 40])
    (logs / "benchmark.out").write_text(benchmark_out([(d8, "2026-12-03 11:11:01", "2026-12-03 11:12:05")], unfinished=d24))
    for role in ("prefill", "decode"):
        (logs / f"cpunode1_{role}_w0.out").write_text("INFO 12-03 11:10:58 [core.py:93] Initializing a V1 LLM engine\n")
    (logs / "cpunode1_frontend_0.out").write_text("")
    write_json(disagg / "4242002.json", {
        "job_id": "4242002", "resources": {"gpu_type": "cpu", "gpus_per_node": 2, "prefill_nodes": 1, "decode_nodes": 1,
                                           "total_gpus_counted": 2}}, indent=2)

    # Legacy layout: <job_id>_<P>P_<D>D_<timestamp>/, result names without GPU counts -> metadata.
    legacy = HERE / "legacy" / "3100_1P_1D_20250901_120000"
    r16 = result(16, "20250901-121530", 120.5, 160, 160, isl=1024, osl=1024, tpot_ms=25.0, ttft_ms=450.0)
    write_json(legacy / "sa-bench_isl_1024_osl_1024" / "concurrency_16.json", r16)
    write_json(legacy / "sa-bench_isl_1024_osl_1024" / "concurrency_16.pytorch.json",
               [{"benchmark": {"name": "vLLM benchmark"}, "metric": {"name": "request_throughput"}}])  # type: ignore[arg-type]
    (legacy / "benchmark.out").write_text(benchmark_out([(r16, "2025-09-01 12:13:29", "2025-09-01 12:15:30")]))
    (legacy / "gpu-01_prefill_w0.out").write_text("")
    (legacy / "gpu-01_prefill_w0.err").write_text("")
    (legacy / "gpu-02_decode_w0.out").write_text("")
    write_json(legacy / "3100.json", {"run_metadata": {"job_id": "3100", "gpus_per_node": 4, "prefill_nodes": 1,
                                                       "decode_nodes": 1, "gpu_type": "h100"},
                                      "profiler_metadata": {"type": "sa-bench", "isl": 1024, "osl": 1024,
                                                            "concurrencies": "16"}}, indent=2)

    # Rollup only (the per-point files were removed): srt-slurm's rollup.py keys.
    rollup_job = HERE / "rollup-only" / "outputs" / "4242003"
    runs = []
    for r in (c2, c8):
        runs.append({"concurrency": r["max_concurrency"], "throughput_toks": r["output_throughput"],
                     "request_throughput": r["request_throughput"], "ttft_mean_ms": r["mean_ttft_ms"],
                     "ttft_p99_ms": r["p99_ttft_ms"], "tpot_mean_ms": r["mean_tpot_ms"], "tpot_p99_ms": r["p99_tpot_ms"],
                     "itl_mean_ms": r["mean_itl_ms"], "itl_p99_ms": r["p99_itl_ms"], "e2el_mean_ms": r["mean_e2el_ms"],
                     "completed_requests": r["completed"], "total_input_tokens": r["total_input_tokens"],
                     "total_output_tokens": r["total_output_tokens"]})
    write_json(rollup_job / "logs" / "benchmark-rollup.json", {
        "benchmark_type": "sa-bench", "timestamp": "2026-12-03T11:00:02", "config": {"model": "tiny-qwen3", "isl": 256,
                                                                                     "osl": 128}, "runs": runs}, indent=2)
    write_json(rollup_job / "4242003.json", {"job_id": "4242003", "resources": {
        "gpus_per_node": 4, "prefill_nodes": 1, "decode_nodes": 2, "agg_nodes": None}}, indent=2)


if __name__ == "__main__":
    main()
