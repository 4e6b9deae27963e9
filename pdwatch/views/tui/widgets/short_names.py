"""Endpoint names as the dashboard's narrow columns show them: what every endpoint shares dropped.

Endpoint names come from file names, so a job's endpoints share its name
(``s10b_pd_example_connector_short_prompts.prefill`` / ``.decode``): said once per endpoint it
pushes the columns after it off an 80-column table. The shared part is cut at a separator
(``.``, ``_``, ``-``) only, never inside a word; what is left is never empty, and since the same
prefix comes off every name, two endpoints never get one short name. A bare number is not a
name: ``job_worker_0`` / ``job_worker_1`` become ``worker_0`` / ``worker_1``, not ``0`` / ``1``.
The detail views keep the full name. Pure: no Textual.
"""

from __future__ import annotations

import re
from typing import Iterable

_PIECES = re.compile(r"[^._-]+|[._-]+")  # words and the separators between them


def short_names(names: Iterable[str]) -> dict[str, str]:
    """Each name -> its display name (itself when there is nothing to drop: one endpoint, or
    endpoints that share no word)."""
    unique = list(dict.fromkeys(names))
    if len(unique) < 2:
        return {n: n for n in unique}
    pieces = [_PIECES.findall(n) for n in unique]
    shared = 0  # pieces every name starts with, ending with a separator, leaving a word in each
    for i in range(min(len(p) for p in pieces) - 1):
        if any(p[i] != pieces[0][i] for p in pieces):
            break
        if _is_separator(pieces[0][i]):
            shared = i + 1
    while shared > 0 and any(_only_number(p[shared:]) for p in pieces):
        shared -= 1  # a word and its separator back: "worker_0", not "0"
        while shared > 0 and not _is_separator(pieces[0][shared - 1]):
            shared -= 1
    return {n: "".join(p[shared:]) for n, p in zip(unique, pieces)}


def _is_separator(piece: str) -> bool:
    return piece[0] in "._-"


def _only_number(rest: list[str]) -> bool:
    return "".join(rest).isdigit()
