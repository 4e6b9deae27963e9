"""Read the article's topology names: ``4xDEP2-1xDEP8`` = 4 prefill endpoints of DEP2, 1 decode
endpoint of DEP8. A single tier (``1xTEP8``) is an aggregated deployment.

DEP n (data + expert parallel) and DP n: n engines (DP ranks) of one GPU each, attention not
sharded. TEP n (tensor + expert parallel) and TP n: one engine over n GPUs, attention sharded n ways.
"""

from __future__ import annotations

from dataclasses import dataclass

import regex

_TIER = regex.compile(r"(?:(?P<count>\d+)\s*[x×*]\s*)?(?P<kind>DEP|TEP|TP|DP)(?P<size>\d+)", regex.IGNORECASE)


@dataclass(frozen=True)
class Tier:
    count: int  # endpoints
    kind: str  # DEP | TEP | TP | DP
    size: int  # GPUs per endpoint

    @property
    def engines(self) -> int:
        """Engines (DP ranks) over all endpoints of the tier: each holds its own KV cache."""
        return self.count * (self.size if self.kind in ("DEP", "DP") else 1)

    @property
    def tp(self) -> int:
        return self.size if self.kind in ("TEP", "TP") else 1

    @property
    def gpus(self) -> int:
        return self.count * self.size

    def __str__(self) -> str:
        return f"{self.count}x{self.kind}{self.size}"


@dataclass(frozen=True)
class Topology:
    prefill: Tier | None
    decode: Tier

    def __str__(self) -> str:
        return f"{self.prefill}-{self.decode}" if self.prefill else str(self.decode)


def parse_topology(text: str) -> Topology:
    """``NxKINDn-MxKINDm`` (prefill-decode) or ``MxKINDm`` (aggregated); ValueError otherwise."""
    parts = [p.strip() for p in text.split("-")]
    if not 1 <= len(parts) <= 2:
        raise ValueError(f"topology {text!r}: expected PREFILL-DECODE such as 4xDEP2-1xDEP8")
    tiers = []
    for part in parts:
        m = _TIER.fullmatch(part)
        if not m:
            raise ValueError(f"topology {text!r}: cannot read {part!r} (expected e.g. 4xDEP2, 1xTEP8, TP4)")
        count, size = int(m["count"] or 1), int(m["size"])
        if count < 1 or size < 1:
            raise ValueError(f"topology {text!r}: counts and sizes must be at least 1")
        tiers.append(Tier(count, m["kind"].upper(), size))
    return Topology(tiers[0], tiers[1]) if len(tiers) == 2 else Topology(None, tiers[0])
