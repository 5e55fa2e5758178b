"""Audit events waiting for one background task that hands them on in batches, off the request path.

Bounded: when the task falls behind, what does not fit is counted and logged rather than held (a flood of refused
keys costs bounded memory). Used by the gateway's security events (written to the database) and by the SIEM export.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from server.audit.events import AuditEvent

__all__ = ["Outbox"]

log = logging.getLogger("switchboard.audit")

_MAX_PENDING = 10_000
_BATCH = 500

Deliver = Callable[[list[AuditEvent]], Awaitable[None]]


class Outbox:
    """`deliver(batch)` hands one batch on and handles its own failures; `what` names the events in log lines."""

    def __init__(self, deliver: Deliver, *, what: str) -> None:
        self._deliver = deliver
        self._what = what
        self._pending: list[AuditEvent] = []
        self._dropped = 0
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def put(self, event: AuditEvent) -> None:
        if len(self._pending) >= _MAX_PENDING:
            self._dropped += 1
            return
        self._pending.append(event)
        if self._wakeup is not None:
            self._wakeup.set()

    def start(self) -> None:
        if self._task is None:
            self._wakeup = asyncio.Event()
            self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        assert self._wakeup is not None  # set by start()
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            await self.flush()

    async def flush(self) -> None:
        if self._dropped:
            log.warning("%d %s were dropped (too many pending)", self._dropped, self._what)
            self._dropped = 0
        while self._pending:
            batch, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
            await self._deliver(batch)

    async def close(self) -> None:
        """Stop the task, then hand on what is still pending."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()
