"""Helpers shared by the dashboard's pilot tests."""

from __future__ import annotations

import asyncio


async def wait_for(pilot, predicate, timeout: float = 20.0) -> bool:
    """Let the app run until ``predicate()`` holds (True), or ``timeout`` seconds pass (False)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while loop.time() < deadline:
        if predicate():
            return True
        await pilot.pause(0.05)
    return predicate()


def plain(widget) -> str:
    """The text a widget shows, without its styles."""
    visual = widget.render()
    return getattr(visual, "plain", None) or str(visual)
