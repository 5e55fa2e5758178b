"""Rows of `audit_events`: added to a caller's transaction, listed newest first by keyset pages, pruned by age."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, delete, or_, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from server.audit.events import Actor, ActorType, AuditEvent, Outcome, Source
from server.errors import InvalidArgument
from server.store.db import as_utc
from server.store.models import AuditEventRow

__all__ = ["EventFilter", "Page", "add_event", "list_events", "prune_events", "row_of"]

MAX_PAGE_SIZE = 1000
DEFAULT_PAGE_SIZE = 100


def _clip(value: str, limit: int) -> str:
    return value[:limit]


def row_of(event: AuditEvent) -> AuditEventRow:
    # Clipped to the columns: a request may name a resource longer than a column holds, and the event still counts.
    return AuditEventRow(
        id=event.id,
        occurred_at=event.time,
        tenant_id=_clip(event.tenant_id, 64),
        actor_type=int(event.actor.type),
        user_id=_clip(event.actor.user_id, 128),
        service_account_id=_clip(event.actor.service_account_id, 64),
        api_key_id=_clip(event.actor.api_key_id, 64),
        peer_address=_clip(event.peer_address, 128),
        source=int(event.source),
        method=_clip(event.method, 200),
        resource_kind=_clip(event.resource_kind, 64),
        resource_name=_clip(event.resource_name, 256),
        outcome=int(event.outcome),
        code=_clip(event.code, 32),
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
    found: list[ColumnElement[bool]] = []
    if wanted.tenant_id is not None:
        found.append(AuditEventRow.tenant_id == wanted.tenant_id)
    if wanted.actor_id:
        a = wanted.actor_id
        found.append(
            or_(AuditEventRow.user_id == a, AuditEventRow.service_account_id == a, AuditEventRow.api_key_id == a)
        )
    for column, value in (
        (AuditEventRow.method, wanted.method),
        (AuditEventRow.resource_kind, wanted.resource_kind),
        (AuditEventRow.resource_name, wanted.resource_name),
    ):
        if value:
            found.append(column == value)
    if wanted.outcome is not None:
        found.append(AuditEventRow.outcome == int(wanted.outcome))
    if wanted.start is not None:
        found.append(AuditEventRow.occurred_at >= wanted.start)
    if wanted.end is not None:
        found.append(AuditEventRow.occurred_at < wanted.end)
    return found


def _token(row: AuditEventRow) -> str:
    at = as_utc(row.occurred_at) or row.occurred_at
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{row.id}".encode()).decode()


def _after(token: str) -> ColumnElement[bool]:
    """Rows after the page that ended at `token` (newest first: older, or as old with a smaller id)."""
    try:
        at_text, event_id = base64.urlsafe_b64decode(token.encode()).decode().split("|", 1)
        at = datetime.fromisoformat(at_text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidArgument("page_token is not a token this API returned", field="page_token") from None
    return or_(AuditEventRow.occurred_at < at, and_(AuditEventRow.occurred_at == at, AuditEventRow.id < event_id))


async def list_events(session: AsyncSession, wanted: EventFilter, *, page_size: int, page_token: str) -> Page:
    if page_size < 0 or page_size > MAX_PAGE_SIZE:
        raise InvalidArgument(f"page_size must be between 0 and {MAX_PAGE_SIZE}", field="page_size")
    size = page_size or DEFAULT_PAGE_SIZE
    conditions = _conditions(wanted)
    if page_token:
        conditions.append(_after(page_token))
    statement = (
        select(AuditEventRow)
        .where(*conditions)
        .order_by(AuditEventRow.occurred_at.desc(), AuditEventRow.id.desc())
        .limit(size + 1)
    )
    rows = list((await session.scalars(statement)).all())
    more = len(rows) > size
    rows = rows[:size]
    return Page([_event(r) for r in rows], _token(rows[-1]) if more else "")


async def prune_events(session: AsyncSession, *, before: datetime) -> int:
    """Deletes events recorded before `before` (the retention's edge); returns how many."""
    result = await session.execute(delete(AuditEventRow).where(AuditEventRow.occurred_at < before))
    return int(getattr(result, "rowcount", 0) or 0)
