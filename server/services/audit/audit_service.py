"""/switchboard.audit.v1.AuditService/* — who may read what: server.permissions.audit; the rows: server.audit.store."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.switchboard.audit.v1 import audit_event_pb2 as event_pb
from gen.switchboard.audit.v1 import audit_service_pb2 as pb
from gen.switchboard.audit.v1.audit_service_connect import AuditService
from server import permissions
from server.audit.events import AuditEvent, Outcome
from server.audit.store import EventFilter, list_events
from server.errors import InvalidArgument
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants.convert import time_field, timestamp

__all__ = ["AuditServiceHandler"]

Ctx = RequestContext[Any, Any]


def _outcome(value: int) -> Outcome | None:
    if value == 0:
        return None
    try:
        return Outcome(value)
    except ValueError:
        raise InvalidArgument("outcome is not a known outcome", field="outcome") from None


def _event(event: AuditEvent) -> event_pb.AuditEvent:
    return event_pb.AuditEvent(
        id=event.id,
        time=timestamp(event.time),
        tenant_id=event.tenant_id,
        actor=event_pb.Actor(
            type=int(event.actor.type),  # type: ignore[arg-type]
            user_id=event.actor.user_id,
            service_account_id=event.actor.service_account_id,
            api_key_id=event.actor.api_key_id,
        ),
        peer_address=event.peer_address,
        source=int(event.source),  # type: ignore[arg-type]
        method=event.method,
        resource_kind=event.resource_kind,
        resource_name=event.resource_name,
        outcome=int(event.outcome),  # type: ignore[arg-type]
        code=event.code,
    )


class AuditServiceHandler(AuditService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def list_audit_events(self, request: pb.ListAuditEventsRequest, ctx: Ctx) -> pb.ListAuditEventsResponse:
        wanted = EventFilter(
            actor_id=request.actor_id,
            method=request.method,
            resource_kind=request.resource_kind,
            resource_name=request.resource_name,
            outcome=_outcome(int(request.outcome)),
            start=time_field(request, "start_time", "startTime"),
            end=time_field(request, "end_time", "endTime"),
        )
        async with self._db.transaction() as s:
            tenant = await permissions.audit_reach(s, current_principal(), request.tenant_id)
            page = await list_events(
                s,
                EventFilter(**{**wanted.__dict__, "tenant_id": tenant}),
                page_size=request.page_size,
                page_token=request.page_token,
            )
        return pb.ListAuditEventsResponse(events=[_event(e) for e in page.events], next_page_token=page.next_token)
