"""Tenants and their members.

Members are added by user id, or invited by email; an invite becomes a membership when that user first signs in
(or at once, if a user with that email is already known). Invites default to Editor. A tenant always keeps at least
one Admin: removing or demoting the last one is refused.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import bindparam, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.audit.calls import CallRecorder
from server.capture.store import delete_tenant_exchanges
from server.domain import api_keys, model_registry, rags
from server.domain.principal import Principal
from server.domain.users import UserInfo, resolve_users
from server.domain.validation import (
    MAX_DISPLAY_NAME,
    MAX_EMAIL,
    require_name,
    require_nonempty,
    require_user_id,
)
from server.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound
from server.invalidation import QUIET
from server.permissions import Capability, TenantRole
from server.store.db import integrity_as, lone_rows, new_id
from server.store.keyset import Window
from server.store.models import (
    ApiKeyRow,
    GroupMemberRow,
    GroupRow,
    TenantInviteRow,
    TenantMemberRow,
    TenantRow,
    UserRow,
)
from server.store.rag_index import ChunkIndex

__all__ = [
    "Membership",
    "Tenant",
    "TenantMember",
    "add_member",
    "create_tenant",
    "delete_tenant",
    "get_tenant",
    "invite_member",
    "list_members",
    "list_tenants",
    "memberships_of",
    "remove_member",
    "update_member_role",
    "update_tenant",
]

_TENANT_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


@dataclass(frozen=True)
class Tenant:
    id: str
    name: str
    display_name: str
    created_at: datetime


@dataclass(frozen=True)
class TenantMember:
    user_id: str
    role: TenantRole
    metadata: UserInfo | None
    pending: bool = False
    email: str = ""


@dataclass(frozen=True)
class Membership:
    tenant_id: str
    tenant_name: str
    role: TenantRole


def _tenant(row: TenantRow) -> Tenant:
    return Tenant(id=row.id, name=row.name, display_name=row.display_name, created_at=row.created_at)


def _role(value: int, field: str = "role", *, default: TenantRole | None = None) -> TenantRole:
    if value == 0 and default is not None:
        return default
    try:
        return TenantRole(value)
    except ValueError:
        raise InvalidArgument(f"{field} must be MEMBER, EDITOR or ADMIN", field=field) from None


async def _get_tenant_row(session: AsyncSession, tenant_id: str) -> TenantRow:
    require_nonempty(tenant_id, "tenant_id")
    row = await session.get(TenantRow, tenant_id)
    if row is None:
        raise NotFound(f"tenant {tenant_id!r} not found", field="tenant_id")
    return row


async def create_tenant(session: AsyncSession, principal: Principal, name: str, display_name: str) -> Tenant:
    permissions.require_platform_scope(principal, "can_manage_tenants")
    if not _TENANT_NAME.fullmatch(name or ""):
        raise InvalidArgument(
            "name must be 1 to 63 lowercase letters, digits or '-', starting and ending with a letter or digit",
            field="name",
        )
    # What UpdateTenant would accept, or the name: a blank or control-character display name was stored.
    shown = require_name(display_name, "display_name", max_len=MAX_DISPLAY_NAME) if display_name else name
    row = TenantRow(id=new_id("ten"), name=name, display_name=shown)
    session.add(row)
    with integrity_as(f"a tenant named {name!r} already exists", field="name"):
        await session.flush()
    CallRecorder.acted_on(row.id)  # the audit trail files a tenant's creation under it, as its deletion
    return _tenant(row)


async def get_tenant(session: AsyncSession, principal: Principal, tenant_id: str) -> Tenant:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_member(session, principal, tenant_id)
    return _tenant(await _get_tenant_row(session, tenant_id))


async def list_tenants(session: AsyncSession, principal: Principal, window: Window | None = None) -> list[Tenant]:
    """The tenants the caller sees, by name (a window: one keyset page of them)."""
    query = select(TenantRow).order_by(TenantRow.name)
    if principal.api_key is not None:
        query = query.where(TenantRow.id == principal.api_key.tenant_id)
    elif principal.scoped_tenant_id is not None:  # a scoped session sees its tenant alone (an operator's too)
        query = query.where(TenantRow.id == principal.scoped_tenant_id)
    elif not principal.can_manage_tenants:
        mine = select(TenantMemberRow.tenant_id).where(TenantMemberRow.user_id == (principal.user_id or ""))
        query = query.where(TenantRow.id.in_(mine))
    if window is not None:
        query = window.apply(query, TenantRow.name)
    return [_tenant(r) for r in await session.scalars(query)]


async def update_tenant(session: AsyncSession, principal: Principal, tenant_id: str, display_name: str) -> Tenant:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    row = await _get_tenant_row(session, tenant_id)
    row.display_name = require_name(display_name, "display_name", max_len=MAX_DISPLAY_NAME)
    await session.flush()
    return _tenant(row)


async def delete_tenant(session: AsyncSession, principal: Principal, index: ChunkIndex, tenant_id: str) -> None:
    """The tenant and all it owns. Rows that name the tenant go by foreign key; what names its resources by
    (kind, name) or lives beside the rows (grants, public model ids, RAG indexes) goes first, here."""
    permissions.require_platform_role(principal, "can_manage_tenants")
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    row = await _get_tenant_row(session, tenant_id)
    await rags.drop_tenant_indexes(session, index, tenant_id)
    await model_registry.release_tenant_public_model_ids(session, tenant_id)
    await permissions.delete_tenant_resources(session, tenant_id)
    await api_keys.delete_keys(session, ApiKeyRow.tenant_id == tenant_id)
    await session.delete(row)
    await delete_tenant_exchanges(session, tenant_id)
    await session.flush()
    permissions.forget_membership(session, tenant_id)


async def _member(session: AsyncSession, tenant_id: str, user_id: str) -> TenantMember:
    row = await session.get(TenantMemberRow, (tenant_id, user_id))
    if row is None:
        raise NotFound(f"user {user_id!r} is not a member of this tenant", field="user_id")
    resolved = await resolve_users(session, [user_id])
    return TenantMember(user_id=user_id, role=TenantRole(row.role), metadata=resolved.get(user_id))


async def add_member(
    session: AsyncSession, principal: Principal, tenant_id: str, user_id: str, role: int
) -> TenantMember:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    require_user_id(user_id)
    tenant_role = _role(role, default=TenantRole.EDITOR)
    if await session.get(TenantMemberRow, (tenant_id, user_id)) is not None:
        raise AlreadyExists(f"user {user_id!r} is already a member of this tenant", field="user_id")
    session.add(TenantMemberRow(tenant_id=tenant_id, user_id=user_id, role=int(tenant_role)))
    with integrity_as(f"user {user_id!r} is already a member of this tenant", field="user_id"):
        await session.flush()
    permissions.forget_membership(session, tenant_id, user_id)
    return await _member(session, tenant_id, user_id)


async def invite_member(
    session: AsyncSession, principal: Principal, tenant_id: str, email: str, role: int | None
) -> TenantMember:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    email = (email or "").strip().lower()
    if len(email) > MAX_EMAIL:  # before the pattern, whose backtracking is quadratic in the length
        raise InvalidArgument(f"email must be at most {MAX_EMAIL} characters", field="email")
    if not _EMAIL.fullmatch(email):
        raise InvalidArgument("email must be an email address", field="email")
    tenant_role = _role(role or 0, default=TenantRole.EDITOR)
    known = await session.scalar(select(UserRow).where(UserRow.email == email, UserRow.deleted_at.is_(None)))
    if known is not None:
        # The user has signed in before: there is no first sign-in left to wait for.
        if await session.get(TenantMemberRow, (tenant_id, known.id)) is not None:
            raise AlreadyExists(f"{email} is already a member of this tenant", field="email")
        return await add_member(session, principal, tenant_id, known.id, int(tenant_role))
    if await session.get(TenantInviteRow, (tenant_id, email)) is not None:
        raise AlreadyExists(f"{email} has already been invited to this tenant", field="email")
    session.add(
        TenantInviteRow(tenant_id=tenant_id, email=email, role=int(tenant_role), invited_by=principal.subject_id)
    )
    with integrity_as(f"{email} has already been invited to this tenant", field="email"):
        await session.flush()
    return TenantMember(user_id="", role=tenant_role, metadata=None, pending=True, email=email)


async def list_members(session: AsyncSession, principal: Principal, tenant_id: str) -> list[TenantMember]:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_capability(session, principal, tenant_id, Capability.LIST_MEMBERS)
    rows = (
        await session.scalars(
            select(TenantMemberRow).where(TenantMemberRow.tenant_id == tenant_id).order_by(TenantMemberRow.user_id)
        )
    ).all()
    resolved = await resolve_users(session, [r.user_id for r in rows])
    members = [TenantMember(r.user_id, TenantRole(r.role), resolved.get(r.user_id)) for r in rows]
    invites = await session.scalars(
        select(TenantInviteRow).where(TenantInviteRow.tenant_id == tenant_id).order_by(TenantInviteRow.email)
    )
    members.extend(TenantMember("", TenantRole(i.role), None, pending=True, email=i.email) for i in invites)
    return members


async def _refuse_losing_last_admin(session: AsyncSession, tenant_id: str, row: TenantMemberRow) -> None:
    if row.role != TenantRole.ADMIN:
        return
    # Count with the tenant locked (a no-op write: a row lock on PostgreSQL, the write lock on SQLite, taken before
    # the count reads), or two admins removing each other both count two and the tenant is left with none.
    await session.execute(
        update(TenantRow)
        .where(TenantRow.id == tenant_id)
        .values(id=TenantRow.id)
        .execution_options(synchronize_session=False, **QUIET)
    )
    admins = await session.scalar(
        select(func.count())
        .select_from(TenantMemberRow)
        .where(TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.role == int(TenantRole.ADMIN))
    )
    if (admins or 0) <= 1:
        raise FailedPrecondition("a tenant must keep at least one admin", field="user_id")


async def update_member_role(
    session: AsyncSession, principal: Principal, tenant_id: str, user_id: str, role: int
) -> TenantMember:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    require_nonempty(user_id, "user_id")
    new_role = _role(role)
    row = await session.get(TenantMemberRow, (tenant_id, user_id))
    if row is None:
        raise NotFound(f"user {user_id!r} is not a member of this tenant", field="user_id")
    if new_role != TenantRole.ADMIN:
        await _refuse_losing_last_admin(session, tenant_id, row)
    row.role = int(new_role)
    await session.flush()
    if new_role != TenantRole.ADMIN:
        # After the role's write, which locks the row a grant in progress checks: this sees that grant if it won.
        await permissions.end_capture_grant(session, tenant_id, user_id)
    permissions.forget_membership(session, tenant_id, user_id)
    return await _member(session, tenant_id, user_id)


async def remove_member(session: AsyncSession, principal: Principal, tenant_id: str, user_id: str, email: str) -> None:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    if not user_id and email:
        invite = await session.get(TenantInviteRow, (tenant_id, email.strip().lower()))
        if invite is None:
            raise NotFound(f"no pending invite for {email}", field="email")
        await session.delete(invite)
        await session.flush()
        return
    require_nonempty(user_id, "user_id")
    row = await session.get(TenantMemberRow, (tenant_id, user_id))
    if row is None:
        raise NotFound(f"user {user_id!r} is not a member of this tenant", field="user_id")
    await _refuse_losing_last_admin(session, tenant_id, row)
    await session.delete(row)
    await api_keys.disable_member_keys(session, tenant_id, user_id)
    # After the row's delete (autoflushed before it), so a grant in progress is either refused or ended here.
    await permissions.end_capture_grant(session, tenant_id, user_id)
    # Leaving the tenant means leaving its groups too, or group grants would outlive the membership.
    tenant_groups = select(GroupRow.id).where(GroupRow.tenant_id == tenant_id)
    await session.execute(
        delete(GroupMemberRow).where(GroupMemberRow.user_id == user_id, GroupMemberRow.group_id.in_(tenant_groups))
    )
    await session.flush()
    permissions.forget_membership(session, tenant_id, user_id)


# Built once in Core over the tables (asked on every GetCurrentUser): see server.domain.groups.
_members, _tenants = TenantMemberRow.__table__, TenantRow.__table__
_MEMBERSHIPS_OF_USER = (
    select(_members.c.tenant_id, _tenants.c.name, _members.c.role)
    .join(_tenants, _tenants.c.id == _members.c.tenant_id)
    .where(_members.c.user_id == bindparam("user_id"))
    .order_by(_tenants.c.name)
)


async def memberships_of(session: AsyncSession, user_id: str) -> list[Membership]:
    """A user's memberships, cached per process within the bound of the roles the gates check (see
    `permissions.user_memberships`)."""

    async def load() -> list[Membership]:
        rows = await lone_rows(session, _MEMBERSHIPS_OF_USER, {"user_id": user_id})
        return [Membership(t, n, TenantRole(r)) for t, n, r in rows]

    return await permissions.user_memberships(session, user_id, load)
