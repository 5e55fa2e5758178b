"""Audit events are kept for `audit_retention_days` (captured exchanges, with the same sweeper, for
`capture_retention_days`): each management process prunes older ones at start and then periodically (replicas
pruning at once delete the same rows; nothing else is touched)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from server.audit.store import prune_events
from server.failure_log import RepeatedFailure
from server.store.db import Database

__all__ = ["Retention"]

log = logging.getLogger("switchboard.audit")

_MAX_PAUSE_SECONDS = 3600.0


# Deletes the rows older than `before` in the session's transaction; returns how many.
Prune = Callable[..., Awaitable[int]]


async def _prune_audit(session: AsyncSession, before: datetime) -> int:
    return await prune_events(session, before=before)


class Retention:
    def __init__(self, db: Database, days: float, prune: Prune = _prune_audit, what: str = "audit events") -> None:
        self._db = db
        self._prune = prune
        self._what = what
        self._kept = timedelta(days=days)
        # A short retention (tests, strict policies) is kept to within a tenth of itself.
        self._pause = min(_MAX_PAUSE_SECONDS, self._kept.total_seconds() / 10)
        self._task: asyncio.Task[None] | None = None
        self._failures = RepeatedFailure(log, f"pruning {what}")

    async def prune_once(self, now: datetime | None = None) -> int:
        edge = (now or datetime.now(UTC)) - self._kept
        async with self._db.transaction() as session:
            return await self._prune(session, edge)

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        while True:
            try:
                pruned = await self.prune_once()
            except Exception:
                self._failures.failed("pruning %s failed; retried at the next pass", self._what)
            else:
                self._failures.succeeded()
                if pruned:
                    log.info("pruned %d %s older than the retention", pruned, self._what)
            await asyncio.sleep(self._pause)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
