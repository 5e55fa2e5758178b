"""The process's limiter, from settings: Redis counters when SWITCHBOARD_REDIS_URL is set, else in-process ones."""

from __future__ import annotations

from gateway.limits.limiter import Limiter
from server.settings import Settings
from server.store.db import Database
from server.store.limit_counters import Counters, MemoryCounters, RedisCounters

__all__ = ["counters_from", "open_limiter"]


def counters_from(settings: Settings) -> Counters:
    url = settings.redis_url.reveal()
    if url:
        return RedisCounters(url, prefix=settings.limits_redis_prefix)
    return MemoryCounters()


def open_limiter(settings: Settings, db: Database) -> Limiter:
    return Limiter(
        db, counters_from(settings), ttl=settings.api_key_cache_seconds, fail_closed=settings.limits_fail_closed
    )
