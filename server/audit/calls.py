"""One audit event per state-changing management call, in the transaction of the change it records.

The interceptor (`server.audit.interceptor`) opens a `Call` for every method that is not marked side-effect free,
before authentication, and ends it after the handler. In between, the first transaction the handler commits (in
the call's own task, after authentication) gets the event added before its COMMIT (`Database.before_commit`): the
change and its event are written together or not at all. A call that ends without such a commit (refused, failed,
or allowed without touching the database) gets its event written on its own then, when nothing else was written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from server.audit.events import AuditEvent, actor_of, outcome_of
from server.audit.store import add_event
from server.domain.principal import Principal
from server.store.db import AFTER_COMMIT, Database

__all__ = ["Call", "CallRecorder", "Describe", "Published"]

log = logging.getLogger("switchboard.audit")

# The request's (tenant id, resource name), read from the request message only when an event is built.
Describe = Callable[[], tuple[str, str]]
Published = Callable[[AuditEvent], None]  # told of every committed event (the SIEM export)


def _nothing() -> tuple[str, str]:
    return "", ""


@dataclass
class Call:
    method: str
    resource_kind: str
    peer_address: str
    task: asyncio.Task[object] | None
    principal: Principal | None = None
    describe: Describe = _nothing
    armed: bool = False  # authenticated: the handler's transactions may carry the event from now on
    written: bool = False
    owner: str | None = None  # the tenant owning the resource the call acted on ("" the platform), once known

    def event(self, code: str) -> AuditEvent:
        try:
            tenant_id, resource_name = self.describe()
        except Exception:  # a request the reader does not understand still gets its event, unnamed
            log.exception("the request of %s could not be described", self.method)
            tenant_id, resource_name = "", ""
        if not tenant_id and self.owner is not None:
            tenant_id = self.owner
        elif not tenant_id and self.principal is not None:
            key = self.principal.api_key
            tenant_id = key.tenant_id if key is not None else self.principal.scoped_tenant_id or ""
        return AuditEvent(
            method=self.method,
            outcome=outcome_of(code),
            code=code,
            tenant_id=tenant_id,
            actor=actor_of(self.principal),
            peer_address=self.peer_address,
            resource_kind=self.resource_kind,
            resource_name=resource_name,
        )


_CALL: ContextVar[Call | None] = ContextVar("switchboard_audit_call", default=None)


def _published_nowhere(_event: AuditEvent) -> None:
    return None


class CallRecorder:
    """Records management calls into `db` (and hooks its transactions); `published` hears of committed events."""

    def __init__(self, db: Database, published: Published = _published_nowhere) -> None:
        self._db = db
        self._published = published
        db.before_commit = self._before_commit

    def begin(self, method: str, resource_kind: str, peer_address: str) -> Token[Call | None]:
        call = Call(method, resource_kind, peer_address, asyncio.current_task())
        return _CALL.set(call)

    @staticmethod
    def authenticated(principal: Principal) -> None:
        call = _CALL.get()
        if call is not None:
            call.principal = principal
            call.armed = True

    @staticmethod
    def described(describe: Describe) -> None:
        call = _CALL.get()
        if call is not None:
            call.describe = describe

    @staticmethod
    def acted_on(owner_tenant_id: str | None) -> None:
        """The call's resource is owned by this tenant (None: the platform). A request that names only a resource
        says nothing of its tenant, and the session's scope is not it; the first resource a call is let at is the
        one it acts on (its own gate runs before any it names)."""
        call = _CALL.get()
        if call is not None and call.owner is None:
            call.owner = owner_tenant_id or ""

    async def _before_commit(self, session: AsyncSession) -> None:
        call = _CALL.get()
        # Another task (one the handler started, which copied this context) is not the call's unit of work.
        if call is None or not call.armed or call.written or call.task is not asyncio.current_task():
            return
        event = call.event("")
        add_event(session, event)

        def committed() -> None:
            call.written = True
            self._published(event)

        session.info.setdefault(AFTER_COMMIT, []).append(committed)

    async def end(self, token: Token[Call | None], code: str) -> None:
        """`code`: the Connect code the call answered with, empty on success."""
        call = _CALL.get()
        _CALL.reset(token)
        if call is None or call.written:
            return
        event = call.event(code)
        try:
            async with self._db.transaction() as session:
                add_event(session, event)
        except Exception:
            # The answer stands; the missing event is what an operator must hear of (no detail of the call).
            log.exception("audit event of %s could not be written", call.method)
            return
        self._published(event)
