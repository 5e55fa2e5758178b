"""Tenant-level permissions: roles, capabilities, tenant admin, platform roles, groups, request scoping.

Tenant level
    Tenant roles are capability sets. Editor and Admin hold every tenant capability (create RAG, preset agent,
    external model, MCP server; list members; share); Member holds none. Tenant admin (`can_admin` on the tenant) is
    held by the tenant's Admins and by platform operators with can_manage_tenants.
API keys
    A key acts only inside its own tenant and never administers it (see `credentials` for the whole rule): no key is
    a tenant admin, whoever owns it, and a key holds no tenant capability (not even listing members: who belongs
    to the tenant is no resource a key can be granted). Personal keys act as their owner (never with admin-only
    views); Personal (all resources) keys follow the owner's read access; service-account keys act as their service
    account, which holds no tenant role.
Groups
    Group reads (`can_read_group`) admit the group's members and the tenant's admins.
Caching
    Whether a tenant exists and the caller's role in it is asked on nearly every request. With a `Memberships`
    cache in the session's info (`memberships_info`), each answer is read in one query and reused for at most the
    process's bound (SWITCHBOARD_API_KEY_CACHE_SECONDS, the same bound as for revoked keys): a removed member or a
    lowered role takes effect on every replica within it, and at once in the process that made the change
    (`forget_membership`, after its commit). A missing tenant is never cached, so a new tenant is seen at once.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from enum import Enum, IntEnum
from typing import Any, TypeVar

from sqlalchemy import and_, bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain.principal import ApiKeyType, Principal
from server.errors import InvalidArgument, NotFound, PermissionDenied
from server.invalidation import Invalidations, Topic
from server.store.db import AFTER_COMMIT
from server.store.models import GroupMemberRow, GroupRow, TenantMemberRow, TenantRow

__all__ = [
    "Capability",
    "Memberships",
    "TenantRole",
    "can_admin_tenant",
    "can_attach_key_to_group",
    "can_read_group",
    "capabilities_in",
    "follow_membership_changes",
    "forget_membership",
    "has_capability",
    "member_user_ids",
    "memberships_info",
    "readable_groups_of",
    "remember_roles",
    "require_capability",
    "require_group_read",
    "require_listed_tenant",
    "require_logged_in_user",
    "require_platform_role",
    "require_scope_membership",
    "require_session",
    "require_tenant_admin",
    "require_tenant_member",
    "require_tenant_scope",
    "resolve_tenant",
    "tenant_role",
    "user_memberships",
]

T = TypeVar("T")
V = TypeVar("V")


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


_MEMBERSHIPS = "switchboard_memberships"
_ROLES_MEMO = "switchboard_tenant_roles"  # this transaction's answers, so a request's gate and filters agree
_MAX_ENTRIES = 100_000
# (tenant exists, role): a tenant and the caller's role in it (None: not a member) in one query.
_Answer = tuple[bool, int | None]
_MEMBERSHIP = select(TenantRow.id, TenantMemberRow.role).outerjoin(
    TenantMemberRow,
    and_(TenantMemberRow.tenant_id == TenantRow.id, TenantMemberRow.user_id == bindparam("user_id")),
)


class Memberships:
    """A process's cache of tenant existence and tenant roles, and of each user's list of memberships (what
    GetCurrentUser shows, so it agrees with what the gates allow), each answer at most `ttl` seconds old."""

    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        self._entries: dict[tuple[str, str], tuple[float, _Answer]] = {}
        self._of_user: dict[str, tuple[float, Any]] = {}
        self._generation = 0  # bumped by forget(): a load that began before it must not be stored

    async def lookup(self, session: AsyncSession, tenant_id: str, user_id: str) -> _Answer:
        # A missing tenant is not kept, so a new tenant is seen at once.
        key = (tenant_id, user_id)
        return await self._cached(self._entries, key, lambda: _load(session, *key), keep=_tenant_exists_in)

    async def of_user(self, user_id: str, load: Callable[[], Awaitable[list[T]]]) -> list[T]:
        async def frozen() -> tuple[T, ...]:
            return tuple(await load())

        return list(await self._cached(self._of_user, user_id, frozen))

    async def _cached(
        self,
        entries: dict[Any, tuple[float, V]],
        key: Any,
        load: Callable[[], Awaitable[V]],
        keep: Callable[[V], bool] = lambda _: True,
    ) -> V:
        """The fresh entry, else what `load` answers, kept if `keep` says so and no `forget()` came while it loaded."""
        hit = entries.get(key)
        if hit is not None and time.monotonic() < hit[0]:
            return hit[1]
        generation, started = self._generation, time.monotonic()
        value = await load()
        if self._ttl > 0 and generation == self._generation and keep(value):
            if len(entries) >= _MAX_ENTRIES:
                entries.clear()
            entries[key] = (started + self._ttl, value)
        return value

    def forget(self, tenant_id: str, user_id: str | None) -> None:
        """Drop what is known of one membership (or, with no user, of the whole tenant)."""
        self._generation += 1
        if user_id is None:
            self._entries.clear()  # a deleted tenant: rare enough not to index entries by tenant
            self._of_user.clear()
        else:
            self._entries.pop((tenant_id, user_id), None)
            self._of_user.pop(user_id, None)


def _tenant_exists_in(answer: _Answer) -> bool:
    return answer[0]


async def user_memberships(session: AsyncSession, user_id: str, load: Callable[[], Awaitable[list[T]]]) -> list[T]:
    """A user's memberships as `load` reads them, through the process's `Memberships` cache when the session has
    one: the same bound and the same forgetting as the roles the gates check."""
    cache: Memberships | None = session.info.get(_MEMBERSHIPS)
    return await (cache.of_user(user_id, load) if cache is not None else load())


def memberships_info(ttl: float) -> dict[str, Any]:
    """The session info that makes this package's membership reads go through one process-wide cache."""
    return {_MEMBERSHIPS: Memberships(ttl)}


def follow_membership_changes(hub: Invalidations, info: dict[str, Any]) -> None:
    """Let other processes' membership changes (`server.invalidation`) drop this process's cached roles at once."""
    cache: Memberships | None = info.get(_MEMBERSHIPS)
    if cache is None:
        return

    def forget(ids: tuple[str, ...]) -> None:
        if len(ids) == 2:
            cache.forget(ids[0], ids[1])
        else:  # a whole tenant, or everything (the listener reconnected): forget(_, None) drops all
            cache.forget(ids[0] if ids else "", None)

    hub.on(Topic.MEMBERSHIP, forget)


async def _load(session: AsyncSession, tenant_id: str, user_id: str) -> _Answer:
    row = (await session.execute(_MEMBERSHIP.where(TenantRow.id == tenant_id), {"user_id": user_id})).first()
    return (False, None) if row is None else (True, row[1])


async def _membership(session: AsyncSession, tenant_id: str, user_id: str | None) -> _Answer:
    """Whether the tenant exists and `user_id`'s role in it; remembered for the transaction, so a request's gate and
    filters agree."""
    memo: dict[tuple[str, str], _Answer] = session.info.setdefault(_ROLES_MEMO, {})
    key = (tenant_id, user_id or "")
    answer = memo.get(key)
    if answer is None:
        cache: Memberships | None = session.info.get(_MEMBERSHIPS)
        answer = await (cache.lookup(session, *key) if cache is not None else _load(session, *key))
        memo[key] = answer
    return answer


def remember_roles(session: AsyncSession, user_id: str, roles: dict[str, TenantRole]) -> None:
    """Seed this transaction's answers with a user's roles read in one query (their memberships, from the same
    bounded cache), so gates then asked about each of those tenants answer without one read per tenant."""
    memo: dict[tuple[str, str], _Answer] = session.info.setdefault(_ROLES_MEMO, {})
    for tenant_id, role in roles.items():
        memo.setdefault((tenant_id, user_id), (True, int(role)))


def forget_membership(session: AsyncSession, tenant_id: str, user_id: str | None = None) -> None:
    """Call when a membership (or, without a user, a tenant) changes, so this process does not serve the old answer.

    Forgotten now and again after the commit, so a request that read the old row in between does not keep it.
    """
    session.info.get(_ROLES_MEMO, {}).clear()
    cache: Memberships | None = session.info.get(_MEMBERSHIPS)
    if cache is None:
        return
    cache.forget(tenant_id, user_id)
    session.info.setdefault(AFTER_COMMIT, []).append(lambda: cache.forget(tenant_id, user_id))


async def _tenant_exists(session: AsyncSession, tenant_id: str) -> bool:
    return (await _membership(session, tenant_id, None))[0]


async def tenant_role(session: AsyncSession, principal: Principal, tenant_id: str) -> TenantRole | None:
    """The caller's role in the tenant, or None when not a member (service accounts hold no role)."""
    key = principal.api_key
    if key is not None and (key.tenant_id != tenant_id or key.type == ApiKeyType.SERVICE_ACCOUNT):
        return None
    if principal.user_id is None:
        return None
    role = (await _membership(session, tenant_id, principal.user_id))[1]
    return TenantRole(role) if role is not None else None


async def can_admin_tenant(session: AsyncSession, principal: Principal, tenant_id: str) -> bool:
    """Tenant admin rights belong to sessions only: a key of a tenant admin is not a tenant admin."""
    if principal.api_key is not None:
        return False
    if principal.can_manage_tenants:
        return True
    return await tenant_role(session, principal, tenant_id) == TenantRole.ADMIN


async def has_capability(session: AsyncSession, principal: Principal, tenant_id: str, capability: Capability) -> bool:
    """Capabilities belong to sessions: a key holds none, whatever its owner's role (see `credentials`)."""
    if principal.api_key is not None:
        return False
    if principal.can_manage_tenants:
        return True
    role = await tenant_role(session, principal, tenant_id)
    return role is not None and capability in _ROLE_CAPABILITIES[role]


async def capabilities_in(session: AsyncSession, principal: Principal, tenant_id: str) -> frozenset[Capability]:
    """Every tenant capability the caller holds in the tenant (what the console shows), by `has_capability`."""
    return frozenset([c for c in Capability if await has_capability(session, principal, tenant_id, c)])


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


async def require_listed_tenant(session: AsyncSession, principal: Principal, tenant_id: str) -> None:
    """A list narrowed to one tenant answers only a caller acting in it: a key or a scoped session in its own
    tenant, a session of a member, or a platform tenant manager. Anyone else is refused rather than answered with an
    empty list that would read as "this tenant has none"."""
    resolve_tenant(principal, tenant_id)
    if principal.api_key is None:
        await require_tenant_member(session, principal, tenant_id)


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


def require_platform_scope(principal: Principal, role: str) -> None:
    """A platform operation that is no one tenant's (creating a platform-owned resource, platform-wide reads and
    policies, users): the platform role, from platform scope (spec Auth 9: a platform resource is managed only from
    there). A session scoped to one tenant acts on that tenant alone."""
    require_platform_role(principal, role)
    if principal.scoped_tenant_id is not None:
        raise PermissionDenied(
            "platform operations are made from platform scope: send the request without X-Platform-Tenant-Id"
        )


def reads_every_tenant(principal: Principal, tenant_id: str) -> bool:
    """An operator's read naming no tenant, from platform scope, reads every tenant's (usage, audit, captured
    content); a scoped session reads its tenant's only, whatever tenant it names."""
    return (
        principal.api_key is None and principal.can_manage_tenants and not tenant_id and not principal.scoped_tenant_id
    )


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


async def readable_groups_of(
    session: AsyncSession, principal: Principal, tenant_id: str, *, for_key_attach: bool = False
) -> str | bool:
    """Which of the tenant's groups the caller may read (or attach keys to): True for all of them, False for none,
    or a user id: only the groups that user belongs to. Plain values, so a caller can pick a prebuilt statement."""
    if for_key_attach and principal.api_key is not None:
        return False
    if await _reads_as_tenant_admin(session, principal, tenant_id):
        return True
    if principal.user_id is None:
        return False
    return principal.user_id


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
