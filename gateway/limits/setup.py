"""The process's limiter, from settings: Redis counters when SWITCHBOARD_REDIS_URL is set; else the table the
gateway's parent shared with its workers before forking them (server.store.shared_counters); else (one process on
its own: tests, benchmarks, a single worker) in-process ones.

Without Redis the count is exact across the workers of one gateway, not across replicas: each replica (another host,
another `python -m gateway`) counts on its own, so a limit admits up to that many times its value. Redis is what
makes the count exact across replicas; the gateway says so in its log when it starts without it.
"""

from __future__ import annotations

import logging

from gateway.limits.limiter import Limiter
from server.settings import Settings
from server.store.db import Database
from server.store.limit_counters import Counters, MemoryCounters
from server.store.redis_counters import RedisCounters
from server.store.shared_counters import SharedCounters
from server.store.shared_permits import SharedPermits

__all__ = ["counters_from", "open_limiter", "shared_counters_for"]


log = logging.getLogger("switchboard.gateway.limits")


def shared_counters_for(settings: Settings, workers: int) -> SharedCounters | None:
    """The table a gateway's parent makes before forking `workers` workers (None when Redis counts, or when one
    process counts alone)."""
    if settings.redis_url.reveal() or workers < 2:
        return None
    log.info(
        "rate limits are counted in memory shared by the %d gateway workers; replicas count on their own unless "
        "SWITCHBOARD_REDIS_URL is set",
        workers,
    )
    return SharedCounters(slots=settings.limits_shared_slots, workers=workers)


def counters_from(settings: Settings, shared: SharedCounters | None = None) -> Counters:
    url = settings.redis_url.reveal()
    if url:
        # Local permits: most calls of a busy worker are admitted and settled without a round trip (docs/limits.md).
        return RedisCounters(
            url, prefix=settings.limits_redis_prefix, permits=True, idle_seconds=settings.limits_permit_idle_seconds
        )
    if shared is not None:
        # Worker-local permits on the shared table, as on Redis (server.store.shared_permits).
        return SharedPermits(shared, idle_seconds=settings.limits_permit_idle_seconds)
    return MemoryCounters()


def open_limiter(settings: Settings, db: Database, shared: SharedCounters | None = None) -> Limiter:
    return Limiter(
        db, counters_from(settings, shared), ttl=settings.api_key_cache_seconds, fail_closed=settings.limits_fail_closed
    )
