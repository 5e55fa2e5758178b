"""Rows of `audit_events`: added to a caller's transaction, listed newest first by keyset pages, pruned by age."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from server.audit.events import Actor, ActorType, AuditEvent, Outcome, Source
from server.nul_text import without_nul
from server.store.db import as_utc
from server.store.keyset import filtered, newest_first
from server.store.models import AuditEventRow

__all__ = ["EventFilter", "Page", "add_event", "list_events", "prune_events", "row_of", "stored"]


def _clip(value: str, limit: int) -> str:
    return without_nul(value[:limit])


def stored(event: AuditEvent) -> AuditEvent:
    """The event as its row keeps it, which is what ListAuditEvents and the SIEM export answer alike.

    Clipped to the columns: a request may name a resource longer than a column holds, and the event still counts.
    Without NUL: PostgreSQL's text cannot hold it, and a refused key's request path (`%00`) may; its driver refused
    the row, and the whole batch of events with it."""
    actor = event.actor
    return replace(
        event,
        tenant_id=_clip(event.tenant_id, 64),
        actor=Actor(
            actor.type,
            user_id=_clip(actor.user_id, 128),
            service_account_id=_clip(actor.service_account_id, 64),
            api_key_id=_clip(actor.api_key_id, 64),
        ),
        peer_address=_clip(event.peer_address, 128),
        method=_clip(event.method, 200),
        resource_kind=_clip(event.resource_kind, 64),
        resource_name=_clip(event.resource_name, 256),
        code=_clip(event.code, 32),
    )


def row_of(event: AuditEvent) -> AuditEventRow:
    kept = stored(event)
    return AuditEventRow(
        id=kept.id,
        occurred_at=kept.time,
        tenant_id=kept.tenant_id,
        actor_type=int(kept.actor.type),
        user_id=kept.actor.user_id,
        service_account_id=kept.actor.service_account_id,
        api_key_id=kept.actor.api_key_id,
        peer_address=kept.peer_address,
        source=int(kept.source),
        method=kept.method,
        resource_kind=kept.resource_kind,
        resource_name=kept.resource_name,
        outcome=int(kept.outcome),
        code=kept.code,
    )


def add_event(session: AsyncSession, event: AuditEvent) -> None:
    """Adds the event to the session's transaction: it commits (or not) with everything else there."""
    session.add(row_of(event))


def _event(row: AuditEventRow) -> AuditEvent:
    return AuditEvent(
        id=row.id,
        time=as_utc(row.occurred_at) or row.occurred_at,
        tenant_id=row.tenant_id,
        actor=Actor(ActorType(row.actor_type), row.user_id, row.service_account_id, row.api_key_id),
        peer_address=row.peer_address,
        source=Source(row.source),
        method=row.method,
        resource_kind=row.resource_kind,
        resource_name=row.resource_name,
        outcome=Outcome(row.outcome),
        code=row.code,
    )


@dataclass(frozen=True)
class EventFilter:
    """Every set field narrows the list; `tenant_id` None means every tenant (operators only)."""

    tenant_id: str | None = None
    actor_id: str = ""
    method: str = ""
    resource_kind: str = ""
    resource_name: str = ""
    outcome: Outcome | None = None
    start: datetime | None = None
    end: datetime | None = None


@dataclass(frozen=True)
class Page:
    events: list[AuditEvent]
    next_token: str


def _conditions(wanted: EventFilter) -> list[ColumnElement[bool]]:
    row = AuditEventRow
    found = filtered(
        (
            (row.method, wanted.method),
            (row.resource_kind, wanted.resource_kind),
            (row.resource_name, wanted.resource_name),
        ),
        row.occurred_at,
        wanted.start,
        wanted.end,
    )
    if wanted.tenant_id is not None:
        found.append(row.tenant_id == wanted.tenant_id)
    if wanted.actor_id:
        a = wanted.actor_id
        found.append(or_(row.user_id == a, row.service_account_id == a, row.api_key_id == a))
    if wanted.outcome is not None:
        found.append(row.outcome == int(wanted.outcome))
    return found


async def list_events(session: AsyncSession, wanted: EventFilter, *, page_size: int, page_token: str) -> Page:
    row = AuditEventRow
    query = select(row).where(*_conditions(wanted))
    rows, token = await newest_first(
        session, query, row.occurred_at, row.id, page_size=page_size, page_token=page_token
    )
    return Page([_event(r) for r in rows], token)


async def prune_events(session: AsyncSession, *, before: datetime) -> int:
    """Deletes events recorded before `before` (the retention's edge); returns how many."""
    result = await session.execute(delete(AuditEventRow).where(AuditEventRow.occurred_at < before))
    return int(getattr(result, "rowcount", 0) or 0)
