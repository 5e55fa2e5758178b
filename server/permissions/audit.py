"""Who reads the audit trail: platform operators (the tenant manager role) read every tenant's events, tenant admins
their own tenant's. API keys read none (they are closed to the whole service, see `credentials`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import Principal
from server.errors import PermissionDenied
from server.permissions.tenancy import reads_every_tenant, require_tenant_admin, resolve_tenant

__all__ = ["audit_reach"]


async def audit_reach(session: AsyncSession, principal: Principal, tenant_id: str) -> str | None:
    """The tenant whose events the caller may read: None (every tenant) for an operator naming none from platform
    scope; else the request's tenant or the session's scope, which must agree, of which the caller is an admin."""
    if principal.api_key is not None:
        raise PermissionDenied("API keys cannot read the audit trail")
    if reads_every_tenant(principal, tenant_id):
        return None
    tenant = resolve_tenant(principal, tenant_id)
    await require_tenant_admin(session, principal, tenant)  # operators are every tenant's admins
    return tenant
