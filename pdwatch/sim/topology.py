"""Deployment topologies in srt-slurm recipe notation.

``4xDEP2-1xDEP8`` is four prefill endpoints of DEP2 feeding one decode endpoint of
DEP8; ``1xDEP8`` (one part) is a single aggregated, non-PD server. Parallelism kinds:

- ``DEPn``: data + expert parallel over n GPUs: n engines (DP ranks), one GPU each;
- ``TEPn`` / ``TPn``: tensor (+ expert) parallel: one engine over n GPUs.
"""

from __future__ import annotations

from pdwatch.model.topology import Group, Topology, parse_topology as parse_any

__all__ = ["Group", "Topology", "parse_topology", "MAX_GPUS"]
MAX_GPUS = 4096


def parse_topology(text: str) -> Topology:
    """Parse ``NxDEPa-MxDEPb`` (prefill-decode) or ``NxDEPa`` (aggregated) for the simulator.

    Raises:
        ValueError: with a one-line explanation when ``text`` is not a topology.
    """
    topo = parse_any(text)
    if topo.agg is not None and topo.agg.count != 1:
        raise ValueError(f"topology {text!r}: an aggregated deployment is a single server (1xDEPn)")
    if topo.gpus > MAX_GPUS:
        raise ValueError(f"topology {text!r}: {topo.gpus} GPUs is more than this simulator handles ({MAX_GPUS})")
    return topo
