"""Deployment topologies in srt-slurm recipe notation, shared by the simulator and the capacity planner.

``4xDEP2-1xDEP8`` is four prefill endpoints of DEP2 feeding one decode endpoint of DEP8;
a single part (``1xDEP8``, or just ``DEP8``) is an aggregated, non-PD deployment.
Parallelism kinds:

- ``DEPn`` / ``DPn``: data (+ expert) parallel over n GPUs: n engines (DP ranks), one GPU each;
- ``TEPn`` / ``TPn``: tensor (+ expert) parallel: one engine over n GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

_PART = regex.compile(r"(?:(?P<count>\d+)[x×*])?(?P<kind>DEP|TEP|TP|DP)(?P<size>\d+)", regex.IGNORECASE)
_DATA_PARALLEL = ("DEP", "DP")


@dataclass(frozen=True)
class Group:
    """``count`` endpoints of the same shape, e.g. ``4xDEP2``."""

    count: int
    kind: str  # DEP | TEP | TP | DP
    size: int  # GPUs per endpoint

    @property
    def engines_per_endpoint(self) -> int:
        return self.size if self.kind in _DATA_PARALLEL else 1

    @property
    def gpus_per_engine(self) -> int:
        return 1 if self.kind in _DATA_PARALLEL else self.size

    @property
    def engines(self) -> int:
        """Engines (DP ranks) over all endpoints of the group: each holds its own KV cache."""
        return self.count * self.engines_per_endpoint

    @property
    def tp(self) -> int:
        return self.gpus_per_engine

    @property
    def gpus(self) -> int:
        return self.count * self.size

    def __str__(self) -> str:
        return f"{self.count}x{self.kind}{self.size}"


@dataclass(frozen=True)
class Topology:
    prefill: Group | None
    decode: Group | None
    agg: Group | None = None

    @property
    def disaggregated(self) -> bool:
        return self.agg is None

    @property
    def serving(self) -> Group:
        """The group that generates tokens: decode in PD, the aggregated servers otherwise."""
        group = self.decode if self.agg is None else self.agg
        assert group is not None
        return group

    @property
    def groups(self) -> list[tuple[str, Group]]:
        if self.agg is not None:
            return [("agg", self.agg)]
        assert self.prefill is not None and self.decode is not None
        return [("prefill", self.prefill), ("decode", self.decode)]

    @property
    def gpus(self) -> int:
        return sum(g.gpus for _, g in self.groups)

    def __str__(self) -> str:
        return "-".join(str(g) for _, g in self.groups)


def parse_topology(text: str) -> Topology:
    """``NxKINDa-MxKINDb`` (prefill-decode) or ``NxKINDa`` (aggregated); ValueError with one line otherwise."""
    spec = text.strip()
    parts = spec.split("-") if spec else []
    if not 1 <= len(parts) <= 2:
        raise ValueError(f"topology {text!r}: expected NxDEPa-MxDEPb (prefill-decode) or NxDEPa (aggregated)")
    groups: list[Group] = []
    for part in parts:
        m = _PART.fullmatch(part)
        if m is None:
            raise ValueError(f"topology {text!r}: {part!r} is not of the form NxDEPn, NxTEPn, NxTPn or NxDPn")
        count, size = int(m["count"] or 1), int(m["size"])
        if count < 1 or size < 1:
            raise ValueError(f"topology {text!r}: counts and sizes must be at least 1")
        groups.append(Group(count, m["kind"].upper(), size))
    return Topology(groups[0], groups[1]) if len(groups) == 2 else Topology(None, None, groups[0])
