"""Who holds the content capture capability (issue 26): it turns capture on and off and reads what was captured.

- Platform operators (`can_manage_tenants`) hold it for every tenant, in a signed-in session.
- A tenant admin holds it for their tenant once an operator granted it to them (`capture_grants`), and only while
  they are still the tenant's admin: the grant ends with the role (`end_capture_grant`, when they are demoted or
  leave the tenant), so being made admin again, which any tenant admin may do, does not bring it back.
- Granting and revoking it: platform operators only, and only to a user who is the tenant's admin at the time.
- API keys never hold it, whoever owns them (the whole CaptureService is closed to keys, see `credentials`).

Everyone else is refused (permission_denied). A captured exchange of another tenant answers not_found to a tenant's
holder, so its existence does not leak across tenants.
"""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import Principal
from server.errors import FailedPrecondition, PermissionDenied
from server.permissions.tenancy import (
    TenantRole,
    can_admin_tenant,
    reads_every_tenant,
    require_platform_role,
    require_session,
    require_tenant_admin,
    resolve_tenant,
)
from server.store.models import CaptureGrantRow, TenantMemberRow

__all__ = [
    "capture_reach",
    "end_capture_grant",
    "holds_capture",
    "require_capture_grantee",
    "require_capture_granter",
    "require_capture_holder",
]


async def _granted(session: AsyncSession, tenant_id: str, user_id: str) -> bool:
    found = await session.scalar(
        select(CaptureGrantRow.user_id).where(
            CaptureGrantRow.tenant_id == tenant_id, CaptureGrantRow.user_id == user_id
        )
    )
    return found is not None


async def holds_capture(session: AsyncSession, principal: Principal, tenant_id: str) -> bool:
    """Whether the caller holds capture on an existing tenant it may act in (what the console shows)."""
    if principal.api_key is not None:
        return False
    if principal.can_manage_tenants:
        return True
    return (
        principal.user_id is not None
        and await can_admin_tenant(session, principal, tenant_id)
        and await _granted(session, tenant_id, principal.user_id)
    )


async def require_capture_holder(session: AsyncSession, principal: Principal, tenant_id: str) -> str:
    """The tenant the caller acts on (the request's, or its session's scope), once it holds capture there."""
    require_session(principal, "manage or read content capture")
    tenant_id = resolve_tenant(principal, tenant_id)
    if principal.can_manage_tenants:
        await require_tenant_admin(session, principal, tenant_id)  # operators: only that the tenant exists
        return tenant_id
    if not await holds_capture(session, principal, tenant_id):
        raise PermissionDenied("content capture needs the capture capability on the tenant, granted by an operator")
    return tenant_id


async def capture_reach(session: AsyncSession, principal: Principal, tenant_id: str) -> str | None:
    """The tenant whose captured exchanges the caller may list: `tenant_id` (or its scope) once it holds capture
    there; None (every tenant) for an operator naming none."""
    require_session(principal, "read captured content")
    if reads_every_tenant(principal, tenant_id):
        return None
    return await require_capture_holder(session, principal, tenant_id)


async def require_capture_granter(session: AsyncSession, principal: Principal, tenant_id: str) -> str:
    """Granting or revoking the capability on a tenant: platform operators, on a tenant that exists."""
    require_session(principal, "grant content capture")
    require_platform_role(principal, "can_manage_tenants")
    tenant_id = resolve_tenant(principal, tenant_id)
    await require_tenant_admin(session, principal, tenant_id)  # the tenant exists (operators are its admins)
    return tenant_id


async def require_capture_grantee(session: AsyncSession, tenant_id: str, user_id: str) -> None:
    """Only a tenant's admin can be granted capture on it (operators hold it already).

    The membership row stays locked until the grant is written (PostgreSQL), so a demotion committed meanwhile
    cannot leave behind a grant to someone who is no longer admin, waiting for them to be made admin again."""
    role = await session.scalar(
        select(TenantMemberRow.role)
        .where(TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.user_id == user_id)
        .with_for_update()
    )
    if role != TenantRole.ADMIN:
        raise FailedPrecondition("content capture is granted to the tenant's admins only", field="user_id")


async def end_capture_grant(session: AsyncSession, tenant_id: str, user_id: str) -> bool:
    """Drop a user's grant on the tenant (revoked, or they stopped being its admin); whether there was one.

    Call in the transaction that lowers or removes a membership: the permission check alone (admin now and granted)
    would let a grant made to an earlier admin-ship come back whenever a tenant admin restores the role."""
    result = await session.execute(
        delete(CaptureGrantRow).where(CaptureGrantRow.tenant_id == tenant_id, CaptureGrantRow.user_id == user_id)
    )
    return bool(getattr(result, "rowcount", 0))
