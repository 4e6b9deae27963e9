"""Values kept while what they were computed from is the same (``KeptWhile``)."""

from __future__ import annotations

from typing import Any, Callable, Hashable


class KeptWhile:
    """One value per key, computed once and kept while its token (what it was computed from,
    e.g. an endpoint's ``Store.version``) compares equal; a new token computes it again. Past
    ``max_keys`` keys, all are forgotten (keys that come and go, such as episodes' windows)."""

    def __init__(self, max_keys: int = 4096) -> None:
        self.max_keys = max_keys
        self._held: dict[Hashable, tuple[Any, Any]] = {}

    def get(self, key: Hashable, token: Any, compute: Callable[[], Any]) -> Any:
        held = self._held.get(key)
        if held is None or held[0] != token:
            if held is None and len(self._held) >= self.max_keys:
                self._held.clear()
            held = self._held[key] = (token, compute())
        return held[1]

    def clear(self) -> None:
        self._held.clear()
