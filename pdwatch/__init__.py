"""pdwatch: bottleneck analyzer for prefill/decode-disaggregated vLLM deployments."""

__version__ = "0.1.0"
