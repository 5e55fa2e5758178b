"""The gateway's security-relevant events (refused keys, egress refusals, approval decisions, guardrail refusals),
written off the request path: `record` puts them in an outbox (server.audit.outbox), whose task writes each batch
in one transaction. These events record a refusal or a decision, not a change, so there is no transaction to share."""

from __future__ import annotations

import logging

from server.audit.calls import Published
from server.audit.events import AuditEvent
from server.audit.outbox import Outbox
from server.audit.store import add_event
from server.failure_log import RepeatedFailure
from server.store.db import Database

__all__ = ["APPROVAL_DECIDED", "EGRESS_REFUSED", "GUARDRAIL_REFUSED", "KEY_REFUSED", "SecurityEventWriter"]

log = logging.getLogger("switchboard.audit")

KEY_REFUSED = "gateway.key_refused"
EGRESS_REFUSED = "gateway.egress_refused"
APPROVAL_DECIDED = "gateway.approval_decided"
GUARDRAIL_REFUSED = "gateway.guardrail_refused"


def _published_nowhere(_event: AuditEvent) -> None:
    return None


class SecurityEventWriter:
    def __init__(self, db: Database, published: Published = _published_nowhere) -> None:
        self._db = db
        self._published = published
        self._outbox = Outbox(self._write, what="gateway audit events")
        self._failures = RepeatedFailure(log, "writing gateway audit events")

    def record(self, event: AuditEvent) -> None:
        self._outbox.put(event)

    def start(self) -> None:
        self._outbox.start()

    async def flush(self) -> None:
        await self._outbox.flush()

    async def _write(self, batch: list[AuditEvent]) -> None:
        try:
            async with self._db.transaction() as session:
                for event in batch:
                    add_event(session, event)
        except Exception:
            self._failures.failed("writing %d gateway audit events failed", len(batch))
            return
        self._failures.succeeded()
        for event in batch:
            self._published(event)

    async def close(self) -> None:
        await self._outbox.close()
