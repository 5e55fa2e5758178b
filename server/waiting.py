"""Waiting for something to come up, by a deadline: never by a count of attempts, since one attempt may itself take
its whole timeout (a port that accepts and never answers), and a count of them then waits many times longer than
it says."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

__all__ = ["until"]


async def until(ready: Callable[[], Awaitable[bool]], seconds: float, *, every: float = 0.1) -> bool:
    """Whether `ready()` came true within `seconds`, asked at once and then every `every` seconds. Each call bounds
    itself (a request's own timeout), so the wait may pass the deadline by one call; a call raises to stop waiting
    early (the process waited for has died)."""
    deadline = time.monotonic() + seconds
    while not await ready():
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(every)
    return True
