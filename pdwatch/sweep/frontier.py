"""The Pareto frontier of a sweep: the points no other point beats on both axes, and where the
limit named by the points' verdicts changes along it.

Pure: points come in as (key, x, y) with x = tokens/s per user and y = tokens/s per GPU (both
"more is better"); invalid points are the caller's to leave out.
"""

from __future__ import annotations

from typing import Hashable, Sequence


def frontier(points: Sequence[tuple[Hashable, float, float]]) -> list[Hashable]:
    """The keys of the non-dominated points, by x ascending (a point is dominated when another is
    at least as good on both axes and better on one)."""
    kept = []
    for key, x, y in points:
        if not any((x2 >= x and y2 >= y) and (x2 > x or y2 > y) for _, x2, y2 in points):
            kept.append((x, y, key))
    return [key for _, _, key in sorted(kept, key=lambda t: (t[0], -t[1]))]


def limit_changes(labelled: Sequence[tuple[int, str]]) -> str:
    """Points as (concurrency, what limits it), concurrency ascending -> one sentence:
    "up to C=256 no bottleneck; from C=512 decode KV cache exhausted"."""
    if not labelled:
        return ""
    runs: list[tuple[int, int, str]] = []  # (first C, last C, label)
    for c, label in sorted(labelled):
        if runs and runs[-1][2] == label:
            runs[-1] = (runs[-1][0], c, label)
        else:
            runs.append((c, c, label))
    if len(runs) == 1:
        return f"C={runs[0][0]}" + (f"–{runs[0][1]}" if runs[0][1] != runs[0][0] else "") + f": {runs[0][2]}"
    said = []
    for i, (first, last, label) in enumerate(runs):
        if i == 0:
            said.append(f"up to C={last} {label}")
        elif i == len(runs) - 1:
            said.append(f"from C={first} {label}")
        else:
            said.append(f"C={first}" + (f"–{last}" if last != first else "") + f" {label}")
    return "; ".join(said)
