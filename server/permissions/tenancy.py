"""Tenant-level permissions: roles, capabilities, tenant admin, platform roles, groups, request scoping.

Tenant level
    Tenant roles are capability sets. Editor and Admin hold every tenant capability (create RAG, preset agent,
    external model, MCP server; list members; share); Member holds none. Tenant admin (`can_admin` on the tenant) is
    held by the tenant's Admins and by platform operators with can_manage_tenants.
API keys
    A key acts only inside its own tenant and never administers it (see `credentials` for the whole rule): no key is
    a tenant admin, whoever owns it, and a key holds no capability but reading the member list, and that only when
    its owner's role does. Personal keys act as their owner (never with admin-only views); Personal (all resources)
    keys follow the owner's read access; service-account keys act as their service account, which holds no tenant
    role.
Groups
    Group reads (`can_read_group`) admit the group's members and the tenant's admins.
"""

from __future__ import annotations

from enum import Enum, IntEnum

from sqlalchemy import ColumnElement, exists, false, select, true
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import ApiKeyType, Principal
from server.errors import InvalidArgument, NotFound, PermissionDenied
from server.store.models import GroupMemberRow, GroupRow, TenantMemberRow, TenantRow

__all__ = [
    "Capability",
    "TenantRole",
    "can_admin_tenant",
    "can_attach_key_to_group",
    "can_read_group",
    "has_capability",
    "member_user_ids",
    "require_capability",
    "require_group_read",
    "require_logged_in_user",
    "require_platform_role",
    "require_scope_membership",
    "require_session",
    "require_tenant_admin",
    "require_tenant_member",
    "require_tenant_scope",
    "resolve_tenant",
    "tenant_role",
    "visible_groups",
]


class TenantRole(IntEnum):
    """Numbers match platform.tenants.v1.TenantRole."""

    MEMBER = 1
    EDITOR = 2
    ADMIN = 3


class Capability(Enum):
    CREATE_RAG = "create_rag"
    CREATE_AGENT = "create_agent"
    CREATE_EXTERNAL_MODEL = "create_external_model"
    CREATE_MCP_SERVER = "create_mcp_server"
    LIST_MEMBERS = "list_members"
    SHARE = "share"


_ROLE_CAPABILITIES: dict[TenantRole, frozenset[Capability]] = {
    TenantRole.MEMBER: frozenset(),
    TenantRole.EDITOR: frozenset(Capability),
    TenantRole.ADMIN: frozenset(Capability),
}
# What a key may still do with its owner's capabilities: read, never create, share or administer.
_READ_ONLY_CAPABILITIES = frozenset({Capability.LIST_MEMBERS})


def resolve_tenant(principal: Principal, requested: str, *, field: str = "tenant_id") -> str:
    """The tenant a tenant-scoped request acts on: the request's tenantId, else the caller's scope.

    A session scoped with X-Platform-Tenant-Id, and every API key, can only act on that one tenant.
    """
    scoped = principal.api_key.tenant_id if principal.api_key is not None else principal.scoped_tenant_id
    tenant_id = requested or scoped or ""
    if not tenant_id:
        raise InvalidArgument(f"{field} is required", field=field)
    if scoped and tenant_id != scoped:
        raise PermissionDenied(f"{field} does not match the tenant this credential is scoped to", field=field)
    return tenant_id


async def _tenant_exists(session: AsyncSession, tenant_id: str) -> bool:
    return bool(await session.scalar(select(exists().where(TenantRow.id == tenant_id))))


async def tenant_role(session: AsyncSession, principal: Principal, tenant_id: str) -> TenantRole | None:
    """The caller's role in the tenant, or None when not a member (service accounts hold no role)."""
    key = principal.api_key
    if key is not None and (key.tenant_id != tenant_id or key.type == ApiKeyType.SERVICE_ACCOUNT):
        return None
    if principal.user_id is None:
        return None
    # Asked several times per request (gate, then filters): remember it for the transaction.
    cache: dict[tuple[str, str], int | None] = session.info.setdefault("switchboard_tenant_roles", {})
    member = (tenant_id, principal.user_id)
    if member not in cache:
        # Column query, not session.get: gates run on every request and need no ORM identity bookkeeping.
        cache[member] = await session.scalar(
            select(TenantMemberRow.role).where(
                TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.user_id == principal.user_id
            )
        )
    role = cache[member]
    return TenantRole(role) if role is not None else None


async def can_admin_tenant(session: AsyncSession, principal: Principal, tenant_id: str) -> bool:
    """Tenant admin rights belong to sessions only: a key of a tenant admin is not a tenant admin."""
    if principal.api_key is not None:
        return False
    if principal.can_manage_tenants:
        return True
    return await tenant_role(session, principal, tenant_id) == TenantRole.ADMIN


async def has_capability(session: AsyncSession, principal: Principal, tenant_id: str, capability: Capability) -> bool:
    if principal.api_key is None and principal.can_manage_tenants:
        return True
    role = await tenant_role(session, principal, tenant_id)
    if role is None:
        return False
    allowed = _ROLE_CAPABILITIES[role]
    if principal.api_key is not None:
        allowed = allowed & _READ_ONLY_CAPABILITIES
    return capability in allowed


async def _require_tenant(session: AsyncSession, tenant_id: str) -> None:
    if not await _tenant_exists(session, tenant_id):
        raise NotFound(f"tenant {tenant_id!r} not found", field="tenant_id")


async def require_tenant_admin(session: AsyncSession, principal: Principal, tenant_id: str) -> None:
    if not await can_admin_tenant(session, principal, tenant_id):
        raise PermissionDenied("this operation needs tenant admin rights on the tenant")
    await _require_tenant(session, tenant_id)


async def require_tenant_member(session: AsyncSession, principal: Principal, tenant_id: str) -> TenantRole | None:
    """Any member of the tenant (or a platform tenant manager, who gets None back as role)."""
    role = await tenant_role(session, principal, tenant_id)
    if role is None:
        if not (principal.api_key is None and principal.can_manage_tenants):
            raise PermissionDenied("the caller is not a member of this tenant")
        await _require_tenant(session, tenant_id)  # a membership row already proves the tenant exists
    return role


async def require_capability(
    session: AsyncSession, principal: Principal, tenant_id: str, capability: Capability
) -> None:
    if not await has_capability(session, principal, tenant_id, capability):
        raise PermissionDenied(f"this operation needs the tenant capability {capability.value}")
    await _require_tenant(session, tenant_id)


def require_tenant_scope(principal: Principal, what: str) -> str:
    """The one tenant a request is scoped to (an API key's own, or a session's X-Platform-Tenant-Id). Reads that
    only make sense within a tenant are refused without one, rather than answered empty."""
    scoped = principal.api_key.tenant_id if principal.api_key is not None else principal.scoped_tenant_id
    if not scoped:
        raise PermissionDenied(f"{what} needs a tenant: send X-Platform-Tenant-Id or use one of the tenant's API keys")
    return scoped


async def require_scope_membership(session: AsyncSession, principal: Principal) -> None:
    """X-Platform-Tenant-Id may only name a tenant the signed-in user belongs to (a platform tenant manager: any).

    Checked once when the principal is built, so no method answers a non-member's scoped request, e.g. with an empty
    list that would read as "this tenant has none". Keys are scoped to their own tenant by construction.
    """
    tenant_id = principal.scoped_tenant_id
    if principal.api_key is not None or tenant_id is None or principal.can_manage_tenants:
        return
    if await tenant_role(session, principal, tenant_id) is None:
        raise PermissionDenied("X-Platform-Tenant-Id names a tenant the caller is not a member of")


def require_session(principal: Principal, what: str) -> None:
    """Operations only a signed-in user may perform, never an API key (see `credentials`)."""
    if principal.api_key is not None:
        raise PermissionDenied(f"API keys cannot {what}; use a signed-in session")


def require_platform_role(principal: Principal, role: str) -> None:
    """Platform roles belong to user sessions; API keys never carry them."""
    held = principal.api_key is None and bool(getattr(principal, role))
    if not held:
        raise PermissionDenied(f"this operation needs the platform role {role}")


def require_logged_in_user(principal: Principal) -> None:
    if principal.user_id is None and principal.api_key is None:
        raise PermissionDenied("this operation needs a signed-in caller")


async def _is_group_member(session: AsyncSession, group_id: str, user_id: str | None) -> bool:
    if user_id is None:
        return False
    return (await session.get(GroupMemberRow, (group_id, user_id))) is not None


async def _reads_as_tenant_admin(session: AsyncSession, principal: Principal, tenant_id: str) -> bool:
    """Tenant admins read everything in the tenant; a Personal (all resources) key reads what its owner reads."""
    if await can_admin_tenant(session, principal, tenant_id):
        return True
    key = principal.api_key
    if key is None or key.type != ApiKeyType.PERSONAL_ALL_RESOURCES:
        return False
    return await tenant_role(session, principal, tenant_id) == TenantRole.ADMIN


async def can_read_group(session: AsyncSession, principal: Principal, group: GroupRow) -> bool:
    if principal.api_key is not None and principal.api_key.tenant_id != group.tenant_id:
        return False
    if await _reads_as_tenant_admin(session, principal, group.tenant_id):
        return True
    return await _is_group_member(session, group.id, principal.user_id)


async def can_attach_key_to_group(session: AsyncSession, principal: Principal, group: GroupRow) -> bool:
    """A key may be attached to the caller's own groups, or to any group of the tenant by a tenant admin.

    Only sessions manage keys, so nothing is attachable for a key principal (a key cannot attach itself).
    """
    if principal.api_key is not None:
        return False
    return await can_read_group(session, principal, group)


async def visible_groups(
    session: AsyncSession, principal: Principal, tenant_id: str, *, for_key_attach: bool = False
) -> ColumnElement[bool]:
    """SQL condition selecting the tenant's groups the caller may read (or attach keys to), in one query."""
    if for_key_attach and principal.api_key is not None:
        return false()
    if await _reads_as_tenant_admin(session, principal, tenant_id):
        return true()
    if principal.user_id is None:
        return false()
    own = select(GroupMemberRow.group_id).where(GroupMemberRow.user_id == principal.user_id)
    return GroupRow.id.in_(own)


async def require_group_read(session: AsyncSession, principal: Principal, tenant_id: str, group_id: str) -> GroupRow:
    """The gate for group reads, applied before the handler does anything else.

    An unknown group and a group outside the caller's reach look the same (permission_denied), so ids cannot be
    probed; the caller must at least belong to the tenant to learn that a group id does not exist.
    """
    group = await session.get(GroupRow, group_id)
    if group is not None and group.tenant_id == tenant_id and await can_read_group(session, principal, group):
        return group
    if group is None or group.tenant_id != tenant_id:
        await require_tenant_member(session, principal, tenant_id)
        raise NotFound(f"group {group_id!r} not found in tenant {tenant_id!r}", field="group_id")
    raise PermissionDenied("the caller may not read this group")


async def member_user_ids(session: AsyncSession, group_id: str) -> list[str]:
    result = await session.scalars(select(GroupMemberRow.user_id).where(GroupMemberRow.group_id == group_id))
    return list(result)
