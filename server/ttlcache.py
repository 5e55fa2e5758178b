"""A per-process cache of answers that may be at most `ttl` seconds old, loaded single-flight.

When an entry is missing or stale, one caller loads it and concurrent callers for the same key await that load
instead of stampeding the database (at 32 requests in flight, an expiring hot entry otherwise costs 32 identical
queries). Refusals (`SwitchboardError`) are cached like answers; unexpected failures are not. An entry's age counts
from the start of the load that produced it, so `ttl` is a true bound on how stale a served answer can be. The cache
is cleared wholesale when it grows past `max_entries` (no per-entry bookkeeping on the hot path). A named cache counts
its hits and misses (server.metrics, `switchboard_cache_lookups_total{cache=name}`) while metrics are on.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, Generic, TypeVar

from server import metrics
from server.errors import SwitchboardError

__all__ = ["TtlCache"]

T = TypeVar("T")


class TtlCache(Generic[T]):
    def __init__(self, ttl: float, max_entries: int = 50_000, *, name: str = "") -> None:
        self._ttl = ttl
        self._max_entries = max_entries
        counters = metrics.cache_counters(name) if name else None
        self._hits: Any = counters[0] if counters is not None else None
        self._misses: Any = counters[1] if counters is not None else None
        self._entries: dict[Hashable, tuple[float, T | SwitchboardError]] = {}
        self._loading: dict[Hashable, asyncio.Future[tuple[float, T | SwitchboardError]]] = {}

    async def get(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
        hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic():
            if self._misses is not None:
                metrics.BATCH.add(self._misses)
            hit = await self._load(key, load)
        elif self._hits is not None:
            metrics.BATCH.add(self._hits)
        if isinstance(hit[1], SwitchboardError):
            raise hit[1]
        return hit[1]

    async def _load(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> tuple[float, T | SwitchboardError]:
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[tuple[float, T | SwitchboardError]] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        started = time.monotonic()
        try:
            try:
                value: T | SwitchboardError = await load()
            except SwitchboardError as exc:
                value = exc
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            hit = (started + self._ttl, value)
            self._entries[key] = hit
            future.set_result(hit)
            return hit
        except asyncio.CancelledError:
            future.cancel()  # waiters retry on their next request; nothing is cached
            raise
        except Exception as exc:  # an unexpected failure is not cached; the waiters see it too
            future.set_exception(exc)
            future.exception()  # mark it retrieved when nobody waits
            raise
        finally:
            del self._loading[key]
