"""One module per sub-command; ``SUMMARIES`` is their one-line help, read without importing them."""

SUMMARIES = {
    "parse": "print the events found in logs (one per line)",
    "report": "diagnose finished logs: bottlenecks with evidence and fixes (md, html, json)",
    "rules": "list the active rules; export them for Prometheus; run rule test cases",
    "simulate": "write the logs of a simulated prefill/decode vLLM deployment",
    "demo": "simulate a PD deployment (no cluster needed) and watch it live on the dashboard",
    "capacity": "KV block size, KV per request and max concurrency from config.json (vs vLLM's log)",
    "watch": "follow live logs: dashboard, or one line per finding as it fires and clears",
    "replay": "play finished logs on their own clock: dashboard, or findings as they fire",
    "record": "save timestamped /metrics scrapes of vLLM servers for later analysis",
    "sweep": "srt-slurm benchmark sweeps: the Pareto frontier, with what limits each point (md, html, json)",
}
