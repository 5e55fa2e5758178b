"""The gateway's security-relevant events (refused keys, egress refusals, approval decisions, guardrail refusals),
written off the request path: `record` appends to a bounded buffer, and one task writes what gathered in one
transaction. These events record a refusal or a decision, not a change, so there is no transaction to share."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from server.audit.calls import Published
from server.audit.events import AuditEvent
from server.audit.store import add_event
from server.store.db import Database

__all__ = ["APPROVAL_DECIDED", "EGRESS_REFUSED", "GUARDRAIL_REFUSED", "KEY_REFUSED", "SecurityEventWriter"]

log = logging.getLogger("switchboard.audit")

KEY_REFUSED = "gateway.key_refused"
EGRESS_REFUSED = "gateway.egress_refused"
APPROVAL_DECIDED = "gateway.approval_decided"
GUARDRAIL_REFUSED = "gateway.guardrail_refused"

_MAX_PENDING = 10_000  # a flood of bad keys costs bounded memory; what does not fit is counted and logged
_BATCH = 500


def _published_nowhere(_event: AuditEvent) -> None:
    return None


class SecurityEventWriter:
    def __init__(self, db: Database, published: Published = _published_nowhere) -> None:
        self._db = db
        self._published = published
        self._pending: list[AuditEvent] = []
        self._dropped = 0
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    def record(self, event: AuditEvent) -> None:
        if len(self._pending) >= _MAX_PENDING:
            self._dropped += 1
            return
        self._pending.append(event)
        if self._wakeup is not None:
            self._wakeup.set()

    def start(self) -> None:
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
            log.warning("%d gateway audit events were dropped (too many pending)", self._dropped)
            self._dropped = 0
        while self._pending:
            batch, self._pending = self._pending[:_BATCH], self._pending[_BATCH:]
            try:
                async with self._db.transaction() as session:
                    for event in batch:
                        add_event(session, event)
            except Exception:
                log.exception("writing %d gateway audit events failed", len(batch))
                continue
            for event in batch:
                self._published(event)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.flush()
