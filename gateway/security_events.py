"""The gateway's audit events (server.audit.security): who was refused or decided what, from where. Never the
key's secret (a refused key is recorded without it) nor model content (an approval names its server and tool)."""

from __future__ import annotations

from contextvars import ContextVar

from aiohttp import web

from server.audit.events import AuditEvent, Outcome, Source, actor_of
from server.audit.export import AuditExport
from server.audit.security import (
    APPROVAL_DECIDED,
    EGRESS_REFUSED,
    GUARDRAIL_REFUSED,
    KEY_REFUSED,
    SecurityEventWriter,
)
from server.domain.networks import Reach
from server.domain.principal import Principal
from server.egress import EgressGuard
from server.settings import Settings
from server.store.db import Database

__all__ = [
    "SECURITY_EVENTS",
    "approval_decided",
    "audit_trail",
    "authenticated",
    "egress_refused",
    "guardrail_refused",
    "key_refused",
]

SECURITY_EVENTS = web.AppKey("security_events", SecurityEventWriter)

# Who the request being served is, for events raised below the handler (the egress guard knows no request).
_CALLER: ContextVar[tuple[Principal, str] | None] = ContextVar("switchboard_gateway_caller", default=None)


def audit_trail(settings: Settings, db: Database) -> tuple[SecurityEventWriter, AuditExport]:
    """The worker's event writer and the SIEM export it feeds (OTLP posts pass an egress guard of their own)."""
    guard = EgressGuard.from_settings(settings, db)
    export = AuditExport(
        settings.audit_export,
        service="switchboard-gateway",
        session_factory=lambda: guard.session(Reach.PLATFORM),
    )
    return SecurityEventWriter(db, export.publish), export


def _peer(request: web.Request) -> str:
    return request.remote or ""


def authenticated(request: web.Request, principal: Principal) -> None:
    _CALLER.set((principal, _peer(request)))


def _tenant(principal: Principal | None) -> str:
    if principal is None or principal.api_key is None:
        return ""
    return principal.api_key.tenant_id


def _event(
    method: str, outcome: Outcome, code: str, principal: Principal | None, *, peer: str, kind: str, name: str
) -> AuditEvent:
    return AuditEvent(
        method=method,
        outcome=outcome,
        source=Source.GATEWAY,
        code=code,
        tenant_id=_tenant(principal),
        actor=actor_of(principal),
        peer_address=peer,
        resource_kind=kind,
        resource_name=name,
    )


def key_refused(request: web.Request) -> None:
    event = _event(
        KEY_REFUSED, Outcome.REFUSED, "unauthenticated", None, peer=_peer(request), kind="Route", name=request.path
    )
    request.app[SECURITY_EVENTS].record(event)


def guardrail_refused(request: web.Request, principal: Principal, agent: str) -> None:
    event = _event(
        GUARDRAIL_REFUSED, Outcome.REFUSED, "guardrail", principal, peer=_peer(request), kind="PresetAgent", name=agent
    )
    request.app[SECURITY_EVENTS].record(event)


def approval_decided(request: web.Request, principal: Principal, server_label: str, tool: str, approved: bool) -> None:
    outcome, code = (Outcome.ALLOWED, "") if approved else (Outcome.REFUSED, "declined")
    name = f"{server_label}/{tool}"
    request.app[SECURITY_EVENTS].record(
        _event(APPROVAL_DECIDED, outcome, code, principal, peer=_peer(request), kind="McpTool", name=name)
    )


def egress_refused(writer: SecurityEventWriter, host: str) -> None:
    """The egress guard's refusal callback: names the host, and the caller when a request is being served."""
    caller = _CALLER.get()
    principal, peer = caller if caller is not None else (None, "")
    writer.record(
        _event(EGRESS_REFUSED, Outcome.REFUSED, "failed_precondition", principal, peer=peer, kind="Host", name=host)
    )
