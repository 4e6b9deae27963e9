"""A value together with where it came from (an option, a log line, config.json, a default)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sourced:
    value: Any
    source: str


def pick(*candidates: tuple[Any, str]) -> Sourced | None:
    """The first candidate whose value is not None, with its source; None when all are None."""
    for value, source in candidates:
        if value is not None:
            return Sourced(value, source)
    return None
