"""A per-process cache of answers that may be at most `ttl` seconds old, loaded single-flight.

When an entry is missing or stale, one caller loads it and concurrent callers for the same key await that load
instead of stampeding the database (at 32 requests in flight, an expiring hot entry otherwise costs 32 identical
queries). Refusals (`SwitchboardError`) are cached like answers; unexpected failures are not. An entry's age counts
from the start of the load that produced it, so `ttl` is a true bound on how stale a served answer can be. The cache
is cleared wholesale when it grows past `max_entries` (no per-entry bookkeeping on the hot path). A named cache counts
its hits and misses (server.metrics, `switchboard_cache_lookups_total{cache=name}`) while metrics are on.

`forget()` drops entries before their time (a change announced by `server.invalidation`); a load already under way
when it is called may have read the old rows, so its answer reaches the callers waiting on it but is not kept, and
later callers start a load of their own. `expires(key, answer)` tells a caller that keeps what it derived from an
answer until when it may (-inf once the answer is no longer the cached one).
"""

from __future__ import annotations

import asyncio
import math
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
        self._generation = 0  # moved by forget(): a load that began before it is not kept

    def forget(self, match: Callable[[Hashable, T], bool] | None = None) -> None:
        """Drop every entry, or those whose key and answer `match` (refusals are dropped too: they name no one)."""
        self._generation += 1
        self._loading.clear()
        if match is None:
            self._entries.clear()
            return
        for key in [k for k, (_, v) in self._entries.items() if isinstance(v, SwitchboardError) or match(k, v)]:
            del self._entries[key]

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

    def fresh(self, key: Hashable) -> T | None:
        """The cached answer while it is fresh, without a coroutine (a hot path's first try); None when it is
        missing, stale or a refusal: `get` then loads or raises it (and counts the miss)."""
        hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic() or isinstance(hit[1], SwitchboardError):
            return None
        if self._hits is not None:
            metrics.BATCH.add(self._hits)
        return hit[1]

    def expires(self, key: Hashable, answer: T) -> float:
        """When `answer` goes stale (time.monotonic()), for a caller that keeps what it derives from it; -inf when it
        is not what the cache holds for `key` (forgotten while it loaded, or already replaced)."""
        hit = self._entries.get(key)
        return hit[0] if hit is not None and hit[1] is answer else -math.inf

    async def _load(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> tuple[float, T | SwitchboardError]:
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[tuple[float, T | SwitchboardError]] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        started, generation = time.monotonic(), self._generation
        try:
            try:
                value: T | SwitchboardError = await load()
            except SwitchboardError as exc:
                value = exc
            hit = (started + self._ttl, value)
            if generation == self._generation:
                if len(self._entries) >= self._max_entries:
                    self._entries.clear()
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
            if self._loading.get(key) is future:  # forget() may have let a newer load take its place
                del self._loading[key]
