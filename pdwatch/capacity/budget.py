"""The memory left for the KV cache on one GPU, the article's way.

    KV memory = total × gpu_memory_utilization − CUDA context − non-torch memory (NCCL buffers,
                allocator) − weights − peak activations − CUDA-graph estimate

Every term is a :class:`~pdwatch.capacity.sourced.Sourced` so the table can say where it came
from. Terms nobody gave count as 0 and are reported as such (the result is then an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass

from pdwatch.capacity.sourced import Sourced


@dataclass(frozen=True)
class GpuPreset:
    usable_gib: float
    basis: str


# The device total vLLM starts from, GiB. Except for gb300 these are the totals printed by
# vLLM's own "Free memory on device (free/TOTAL GiB)" line (torch's view of the device, a little
# below nvidia-smi's MiB / 1024); check them against your logs.
GPU_PRESETS: dict[str, GpuPreset] = {
    "h100": GpuPreset(79.19, "H100 SXM 80 GB as vLLM reports it (…/79.19 GiB)"),
    "h200": GpuPreset(139.81, "H200 141 GB as vLLM reports it (…/139.81 GiB)"),
    "b200": GpuPreset(178.35, "B200 180 GB as vLLM reports it (…/178.35 GiB)"),
    # Inferred, not seen next to the word GB200: a 184.31 GiB total fits GB200's 189,471 MiB less
    # the ~0.7 GiB B200 shows between nvidia-smi and vLLM.
    "gb200": GpuPreset(184.31, "GB200 186 GB, inferred (…/184.31 GiB); check your logs"),
    # The article: "GB300 gives us 279 GB; driver overhead takes 2.28 GiB; vLLM starts with 276.62 GiB".
    "gb300": GpuPreset(276.62, "GB300 per the article: 279 GB less 2.28 GiB driver overhead"),
}

ARTICLE = "article (GB300)"
ARTICLE_UTILIZATION = 0.92  # the article's (vLLM's) default gpu_memory_utilization
ARTICLE_CUDA_CONTEXT_GIB = 3.13  # "about 3.13 GiB taken by the CUDA context before vLLM starts"
ARTICLE_NON_TORCH_GIB = 2.90  # "2.90 GiB to NCCL buffers, the allocator and other non-PyTorch things"
# The article's per-topology tables of weights, peak activations and CUDA-graph memory did not
# survive in the source text, so those three have no default: pass them or give LOGS.


@dataclass(frozen=True)
class Budget:
    total: Sourced  # GiB
    utilization: Sourced  # 0–1
    deductions: tuple[tuple[str, Sourced | None], ...]  # (label, GiB); None = not given, counted as 0

    @property
    def requested_gib(self) -> float:
        return self.total.value * self.utilization.value

    @property
    def deducted_gib(self) -> float:
        return sum(amount.value for _, amount in self.deductions if amount is not None)

    @property
    def kv_gib(self) -> float:
        return self.requested_gib - self.deducted_gib

    @property
    def missing(self) -> list[str]:
        return [label for label, amount in self.deductions if amount is None]


def memory_budget(total: Sourced, utilization: Sourced, *, cuda_context: Sourced | None,
                  non_torch: Sourced | None, weights: Sourced | None, activations: Sourced | None,
                  cudagraph: Sourced | None) -> Budget:
    return Budget(total, utilization, (
        ("CUDA context", cuda_context),
        ("non-torch memory", non_torch),
        ("weights", weights),
        ("peak activations", activations),
        ("CUDA-graph estimate", cudagraph),
    ))
