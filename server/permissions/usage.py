"""Who reads the console's usage aggregates (switchboard.usage.v1.UsageService).

- Platform operators (the tenant manager role): any tenant, or every tenant at once (no tenant named).
- Tenant admins: their tenant, every call in it.
- Other members: their own calls only (made with their personal keys or their own session), because a tenant's
  usage by key and by user tells who works on what; that is the admin's to see, as ListApiKeys shows members their
  own keys only. Calls of service-account keys are the admin's.
- API keys: nothing (usage is read by people through the console; a key holder reads its own limits' use through
  LimitService).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import Principal
from server.errors import PermissionDenied
from server.permissions.tenancy import TenantRole, reads_every_tenant, require_tenant_member, resolve_tenant

__all__ = ["UsageReach", "usage_reach"]


@dataclass(frozen=True)
class UsageReach:
    """What a usage read may count: one tenant's calls (None: every tenant's), and only one user's (None: all)."""

    tenant_id: str | None
    user_id: str | None = None


async def usage_reach(session: AsyncSession, principal: Principal, tenant_id: str) -> UsageReach:
    if principal.api_key is not None:
        raise PermissionDenied("API keys cannot read usage aggregates")
    if reads_every_tenant(principal, tenant_id):
        return UsageReach(None)
    tenant = resolve_tenant(principal, tenant_id)
    role = await require_tenant_member(session, principal, tenant)  # refuses non-members; None for operators
    if role is None or role == TenantRole.ADMIN:
        return UsageReach(tenant)
    if principal.user_id is None:  # a member always has one; refuse rather than read "no user" as everyone
        raise PermissionDenied("the caller is not a member of this tenant")
    return UsageReach(tenant, principal.user_id)
