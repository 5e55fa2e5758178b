"""Who may set limit policies and read the use of limits (issue 25).

- Platform-tier policies: platform operators (can_manage_tenants), in a signed-in session.
- Tenant-tier policies: tenant admins (operators included), in a signed-in session. The tightest limit wins at
  enforcement, so a tenant admin can narrow but never widen what the operator set.
- API keys never set limits, whoever owns them (also refused earlier by `credentials`: these are writes).
- Use of the limits applying to a key: the key itself, the user who owns it, the tenant's admins and operators.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import Principal
from server.errors import InvalidArgument, NotFound, PermissionDenied
from server.permissions.tenancy import (
    can_admin_tenant,
    require_platform_role,
    require_session,
    require_tenant_admin,
    require_tenant_member,
    resolve_tenant,
)
from server.store.models import ApiKeyRow

__all__ = ["KeyHolder", "require_limit_writer", "require_usage_reader"]

KeyHolder = tuple[str, str | None]  # (key id, its service account id)


async def require_limit_writer(
    session: AsyncSession, principal: Principal, tenant_id: str, *, platform_tier: bool
) -> str:
    """The tenant a policy write acts on, once the caller may write that tier's policies there."""
    require_session(principal, "set limits")
    tenant_id = resolve_tenant(principal, tenant_id)
    if platform_tier:
        require_platform_role(principal, "can_manage_tenants")
    else:
        await require_tenant_admin(session, principal, tenant_id)
    return tenant_id


async def require_usage_reader(session: AsyncSession, principal: Principal, tenant_id: str, key_id: str) -> KeyHolder:
    """The key (id, service account) whose limits the caller may read: its own key when `key_id` is empty; else the
    key itself, its owner, or a tenant admin. Only a tenant admin learns whether a key exists."""
    tenant_id = resolve_tenant(principal, tenant_id)
    own = principal.api_key
    if not key_id:
        if own is None:
            # Who could read some key's limits here (a member, an operator) is told the field is missing; anyone
            # else is refused as for a key they name, so a missing field never answers in place of the gate.
            await require_tenant_member(session, principal, tenant_id)
            raise InvalidArgument(
                "api_key_id is required in a signed-in session (only an API key reads its own limits without naming "
                "one)",
                field="api_key_id",
            )
        key_id = own.key_id
    row = (
        await session.execute(
            select(ApiKeyRow.owner_user_id, ApiKeyRow.service_account_id).where(
                ApiKeyRow.id == key_id, ApiKeyRow.tenant_id == tenant_id
            )
        )
    ).one_or_none()
    holder = row is not None and (
        (own is not None and own.key_id == key_id)
        or (own is None and principal.user_id is not None and row.owner_user_id == principal.user_id)
    )
    if not holder and not await can_admin_tenant(session, principal, tenant_id):
        raise PermissionDenied("only the key's holder and the tenant's admins may read its limits")
    if row is None:
        raise NotFound(f"no API key {key_id!r} in tenant {tenant_id!r}", field="api_key_id")
    return key_id, row.service_account_id
