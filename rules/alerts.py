"""An alert of the rule engine: one rule on one scope instance while pending or firing, and the
firing periods kept for ``findings()``. Shared by the step engine (``rules.engine``) and the
whole-clock sweep (``rules.sweep``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .evidence import EvidenceLog
from .layout import Layout
from .template import EnginesHole

Key = tuple[str | None, int | None]  # (endpoint name, engine) of a scope instance


@dataclass
class _Alert:
    """One rule on one instance while pending or firing (then frozen in its period)."""

    key: Key
    state: str
    active_at: int  # absolute us
    engines: list[int]
    fired_at: int | None = None
    resolved_at: int | None = None
    keep_since: int | None = None
    value: float | None = None
    severity: str | None = None  # of the rule, or of the variant that words it
    texts: dict[str, tuple[str | EnginesHole, ...]] = field(default_factory=dict)
    evidence: EvidenceLog | None = None
    # What was true when it fired: the summary and value of that evaluation. A replay or a
    # report reads a finding after its end; what live printed at the moment is these.
    fired_texts: dict[str, tuple[str | EnginesHole, ...]] | None = None
    fired_value: float | None = None


@dataclass
class _Period:
    rule: int
    alert: _Alert


def _engines_of(lay: Layout, i: int) -> list[int]:
    """Engines a finding names: the engine, or all the endpoint's (declared or seen)."""
    if lay.kind == "engine":
        return [int(lay.engine[i])]
    if lay.kind != "endpoint":
        return []
    e = lay.view.endpoints[i]
    s = lay.stats
    return sorted(set(int(x) for x in e.engines) | set(int(x) for x in np.unique(s.engine[s.ep == i])))
