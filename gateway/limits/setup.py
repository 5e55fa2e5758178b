"""The process's limiter, from settings: Redis counters when SWITCHBOARD_REDIS_URL is set, else in-process ones.

In-process counters belong to one worker process: with several gateway workers (SWITCHBOARD_GATEWAY_WORKERS, one per
core by default) or replicas each counts on its own, so a limit admits up to that many times its value. Redis is
what makes the count exact across them; a worker says so in its log when it starts without it.
"""

from __future__ import annotations

import logging
import os

from gateway.limits.limiter import Limiter
from server.settings import Settings
from server.store.db import Database
from server.store.limit_counters import Counters, MemoryCounters, RedisCounters

__all__ = ["counters_from", "open_limiter"]


log = logging.getLogger("switchboard.gateway.limits")


def counters_from(settings: Settings) -> Counters:
    url = settings.redis_url.reveal()
    if url:
        return RedisCounters(url, prefix=settings.limits_redis_prefix)
    workers = settings.gateway_workers or os.cpu_count() or 1
    if workers > 1:
        log.warning(
            "rate limits are counted in each of the %d gateway worker processes on its own; set "
            "SWITCHBOARD_REDIS_URL to count them once across workers and replicas",
            workers,
        )
    return MemoryCounters()


def open_limiter(settings: Settings, db: Database) -> Limiter:
    return Limiter(
        db, counters_from(settings), ttl=settings.api_key_cache_seconds, fail_closed=settings.limits_fail_closed
    )
