"""The KV cache as the server's log states it: the capacity, each figure with the line it came from.

vLLM prints at start-up what it allocated ("GPU KV cache size: N tokens", "Maximum concurrency for X
tokens per request: Yx", the block count, "Overriding num_gpu_blocks=N with num_gpu_blocks_override=M"),
whatever the model's shape and the memory would give. Those figures are the capacity; the arithmetic
of :mod:`pdwatch.capacity.estimate` is the estimate set beside them (:mod:`pdwatch.capacity.gap`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class Figure:
    """A value the log printed, and where: ``source`` (the file) and ``line_no`` (None when unknown)."""

    value: Any
    source: str | None = None
    line_no: int | None = None

    def where(self) -> str:
        return "the log" if self.line_no is None else f"line {self.line_no}"


@dataclass(frozen=True)
class LoggedCapacity:
    blocks: Figure | None  # block ids vLLM allocated (the override's when one was set)
    tokens: Figure | None  # "KV cache size: N tokens"
    max_concurrency: Figure | None  # "Maximum concurrency for X tokens per request: Yx"
    request_tokens: int | None  # the X of that line
    override: Figure | None  # num_gpu_blocks_override
    memory_blocks: Figure | None  # what the KV memory would have held, as vLLM counted before the override

    def origin(self) -> str:
        """Where the capacity is read: the size line first, as people quote it."""
        first = next(f for f in (self.tokens, self.max_concurrency, self.blocks) if f is not None)
        return "as the log says" + ("" if first.line_no is None else f", line {first.line_no}")


def logged_capacity(facts: Mapping[str, Any]) -> LoggedCapacity | None:
    """The capacity ``facts`` (see :mod:`pdwatch.model.log_facts`) give, or None when the log printed none."""
    lines = facts.get("fact_lines") or {}

    def figure(name: str) -> Figure | None:
        if facts.get(name) is None:
            return None
        source, line_no = lines.get(name, (None, None))
        return Figure(facts[name], source, line_no)

    override = figure("num_gpu_blocks_override")
    blocks = figure("kv_blocks") or override  # vLLM allocates exactly the override's blocks
    tokens, concurrency = figure("kv_capacity_tokens"), figure("max_concurrency")
    if blocks is None and tokens is None and concurrency is None:
        return None
    return LoggedCapacity(blocks, tokens, concurrency, facts.get("max_concurrency_tokens"), override,
                          figure("kv_blocks_from_memory"))
