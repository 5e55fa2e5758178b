"""Capture policies and the capability's grants: the rules of turning capture on and off (who may: see
`server.permissions.capture`), and what the gateway reads of them.

A call is captured when capture is on for its tenant, its key's service account or its key: the widest scope that
is on wins, so a tenant-wide capture (a compliance duty) cannot be escaped by a key set off. Policies set off are
kept, naming who turned capture off and when. Every change is an audit event written in its own transaction (the
audit interceptor, server.audit.calls), and reaches every gateway process's cache at once (server.invalidation).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.capture.exchange import Covered, ScopeKind
from server.domain.principal import Principal
from server.errors import InvalidArgument, NotFound
from server.store.models import ApiKeyRow, CaptureGrantRow, CapturePolicyRow, ServiceAccountRow, utcnow

__all__ = [
    "Grant",
    "Policy",
    "Scope",
    "enabled_scopes",
    "get_policy",
    "grant_capture",
    "list_grants",
    "list_policies",
    "revoke_capture",
    "set_policy",
]


@dataclass(frozen=True)
class Scope:
    kind: ScopeKind
    id: str  # empty for the tenant


@dataclass(frozen=True)
class Policy:
    tenant_id: str
    scope: Scope
    enabled: bool
    updated_at: datetime | None = None
    updated_by: str = ""


@dataclass(frozen=True)
class Grant:
    tenant_id: str
    user_id: str
    granted_at: datetime
    granted_by: str


def scope_of(kind: int, scope_id: str) -> Scope:
    try:
        known = ScopeKind(kind)
    except ValueError:
        raise InvalidArgument("scope.kind must be set to one of its defined values", field="scope.kind") from None
    if known == ScopeKind.TENANT and scope_id:
        raise InvalidArgument("a tenant scope has no id", field="scope.id")
    if known != ScopeKind.TENANT and not scope_id:
        raise InvalidArgument("scope.id is required for a service account or API key scope", field="scope.id")
    return Scope(known, scope_id)


def _stored_id(tenant_id: str, scope: Scope) -> str:
    return tenant_id if scope.kind == ScopeKind.TENANT else scope.id


async def _require_scope(session: AsyncSession, tenant_id: str, scope: Scope) -> None:
    """A service account or key scope names one of the tenant's own."""
    if scope.kind == ScopeKind.TENANT:
        return
    table = ServiceAccountRow if scope.kind == ScopeKind.SERVICE_ACCOUNT else ApiKeyRow
    found = await session.scalar(select(table.id).where(table.id == scope.id, table.tenant_id == tenant_id))
    if found is None:
        what = "service account" if scope.kind == ScopeKind.SERVICE_ACCOUNT else "API key"
        raise NotFound(f"no {what} {scope.id!r} in tenant {tenant_id!r}", field="scope.id")


def _policy(row: CapturePolicyRow) -> Policy:
    kind = ScopeKind(row.scope_kind)
    return Policy(
        row.tenant_id,
        Scope(kind, "" if kind == ScopeKind.TENANT else row.scope_id),
        row.enabled,
        row.updated_at,
        row.updated_by,
    )


async def set_policy(
    session: AsyncSession, principal: Principal, *, tenant_id: str, scope: Scope, enabled: bool
) -> Policy:
    tenant_id = await permissions.require_capture_holder(session, principal, tenant_id)
    await _require_scope(session, tenant_id, scope)
    key = (tenant_id, int(scope.kind), _stored_id(tenant_id, scope))
    row = await session.get(CapturePolicyRow, key)
    if row is None:
        row = CapturePolicyRow(tenant_id=key[0], scope_kind=key[1], scope_id=key[2])
        session.add(row)
    row.enabled = enabled
    row.updated_at = utcnow()
    row.updated_by = principal.user_id or ""
    await session.flush()
    return _policy(row)


async def enabled_scopes(session: AsyncSession, tenant_id: str) -> Covered:
    """The scopes of a tenant whose capture is on (what the gateway caches per tenant)."""
    rows = await session.execute(
        select(CapturePolicyRow.scope_kind, CapturePolicyRow.scope_id).where(
            CapturePolicyRow.tenant_id == tenant_id, CapturePolicyRow.enabled.is_(True)
        )
    )
    return frozenset((int(kind), scope_id) for kind, scope_id in rows.all())


async def get_policy(
    session: AsyncSession, principal: Principal, *, tenant_id: str, scope: Scope
) -> tuple[Policy, bool]:
    """(the scope's own policy, off when never set; whether its calls are captured, by it or a wider scope)."""
    tenant_id = await permissions.require_capture_holder(session, principal, tenant_id)
    await _require_scope(session, tenant_id, scope)
    row = await session.get(CapturePolicyRow, (tenant_id, int(scope.kind), _stored_id(tenant_id, scope)))
    policy = _policy(row) if row is not None else Policy(tenant_id, scope, False)
    on = await enabled_scopes(session, tenant_id)
    wider: set[tuple[int, str]] = {(ScopeKind.TENANT, tenant_id)}
    if scope.kind == ScopeKind.API_KEY:
        account = await session.scalar(select(ApiKeyRow.service_account_id).where(ApiKeyRow.id == scope.id))
        if account:
            wider.add((ScopeKind.SERVICE_ACCOUNT, account))
    return policy, policy.enabled or bool(on & wider)


async def list_policies(session: AsyncSession, principal: Principal, *, tenant_id: str) -> list[Policy]:
    tenant_id = await permissions.require_capture_holder(session, principal, tenant_id)
    rows = await session.scalars(
        select(CapturePolicyRow)
        .where(CapturePolicyRow.tenant_id == tenant_id)
        .order_by(CapturePolicyRow.scope_kind, CapturePolicyRow.scope_id)
    )
    return [_policy(r) for r in rows.all()]


def _grant(row: CaptureGrantRow) -> Grant:
    return Grant(row.tenant_id, row.user_id, row.granted_at, row.granted_by)


async def grant_capture(session: AsyncSession, principal: Principal, *, tenant_id: str, user_id: str) -> Grant:
    tenant_id = await permissions.require_capture_granter(session, principal, tenant_id)
    if not user_id:
        raise InvalidArgument("user_id is required", field="user_id")
    await permissions.require_capture_grantee(session, tenant_id, user_id)
    row = await session.get(CaptureGrantRow, (tenant_id, user_id))
    if row is None:
        row = CaptureGrantRow(tenant_id=tenant_id, user_id=user_id, granted_at=utcnow(), granted_by=principal.user_id)
        session.add(row)
        await session.flush()
    return _grant(row)


async def revoke_capture(session: AsyncSession, principal: Principal, *, tenant_id: str, user_id: str) -> None:
    tenant_id = await permissions.require_capture_granter(session, principal, tenant_id)
    if not await permissions.end_capture_grant(session, tenant_id, user_id):
        raise NotFound(f"{user_id!r} holds no capture grant on tenant {tenant_id!r}", field="user_id")


async def list_grants(session: AsyncSession, principal: Principal, *, tenant_id: str) -> list[Grant]:
    tenant_id = await permissions.require_capture_holder(session, principal, tenant_id)
    rows = await session.scalars(
        select(CaptureGrantRow).where(CaptureGrantRow.tenant_id == tenant_id).order_by(CaptureGrantRow.user_id)
    )
    return [_grant(r) for r in rows.all()]
