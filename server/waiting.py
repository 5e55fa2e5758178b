"""Waiting for something to come up, by a deadline: never by a count of attempts, since one attempt may itself take
its whole timeout (a port that accepts and never answers), and a count of them then waits many times longer than
it says."""

from __future__ import annotations

import asyncio
import time
import urllib.request
from collections.abc import Awaitable, Callable

__all__ = ["answers", "until"]


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


async def answers(url: str) -> bool:
    """Whether a GET of `url` (one of our own servers' probes, on loopback) answers 200 within 2 s."""
    return await asyncio.to_thread(_answers, url)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback URL we built
            return bool(resp.status == 200)
    except OSError:
        return False
