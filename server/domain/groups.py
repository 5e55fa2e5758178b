"""Tenant groups: named collections of tenant members, usable as permission subjects.

Gates (spec, Authentication 6): writes need tenant admin; reads need group can_read (the group's members and the
tenant's admins); a group outside the caller's reach is refused before anything else happens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from sqlalchemy import bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.bounded import WeightedFifo
from server.domain.principal import Principal
from server.domain.users import UserInfo, resolve_users
from server.domain.validation import require_name, require_nonempty, require_user_id
from server.errors import AlreadyExists, FailedPrecondition, NotFound
from server.invalidation import QUIET
from server.store.db import KeyLookup, integrity_as, lone_rows, lone_value, new_id
from server.store.models import GroupListVersionRow, GroupMemberRow, GroupRow, TenantMemberRow

__all__ = [
    "Group",
    "GroupLists",
    "GroupMember",
    "add_group_member",
    "create_group",
    "delete_group",
    "group_lists_info",
    "list_group_members",
    "list_groups",
    "list_weight",
    "remove_group_member",
]


class Group(NamedTuple):
    """A tuple, not a frozen dataclass: a list answer builds one per group, and a frozen dataclass's __init__ sets
    each field through object.__setattr__ (32 us of a 50-group ListGroups; the tuple takes 15)."""

    id: str
    tenant_id: str
    name: str
    member_count: int | None = None  # filled by list responses only


@dataclass(frozen=True)
class GroupMember:
    user_id: str
    metadata: UserInfo | None  # None when the user no longer resolves


def _group(row: GroupRow, member_count: int | None = None) -> Group:
    return Group(id=row.id, tenant_id=row.tenant_id, name=row.name, member_count=member_count)


async def _group_in_tenant(session: AsyncSession, tenant_id: str, group_id: str, *, lock: bool = False) -> GroupRow:
    require_nonempty(group_id, "group_id")
    row = await session.get(GroupRow, group_id, with_for_update={"read": True} if lock else None)
    if row is None or row.tenant_id != tenant_id:
        raise NotFound(f"group {group_id!r} not found in tenant {tenant_id!r}", field="group_id")
    return row


async def create_group(session: AsyncSession, principal: Principal, tenant_id: str, name: str) -> Group:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    name = require_name(name, "name")
    row = GroupRow(id=new_id("grp"), tenant_id=tenant_id, name=name)
    session.add(row)
    with integrity_as(f"a group named {name!r} already exists in this tenant", field="name"):
        await session.flush()
    return _group(row)


# Built once, in Core over the tables: a statement built per call, or run through the ORM, cost more than the query
# (cache-key generation and ORM row loading for every row, measured under ListGroups load). Core does not autoflush
# the session: fine, as every domain write flushes itself.
_groups, _members = GroupRow.__table__, GroupMemberRow.__table__
_GROUPS_OF_TENANT = (
    select(
        _groups.c.id,
        _groups.c.name,
        select(func.count()).where(_members.c.group_id == _groups.c.id).scalar_subquery(),
    )
    .where(_groups.c.tenant_id == bindparam("tenant_id"))
    .order_by(_groups.c.name)
)
_GROUPS_OF_MEMBER = _GROUPS_OF_TENANT.where(
    _groups.c.id.in_(select(_members.c.group_id).where(_members.c.user_id == bindparam("user_id")))
)
_versions = GroupListVersionRow.__table__
_LIST_VERSION = KeyLookup(_versions.c.tenant_id, _versions.c.version)


class GroupLists:
    """The last group list answered per tenant and reach, each kept with the tenant's list version it was read at
    (`GroupListVersionRow`, moved by the database's triggers in every transaction that changes a group or member).

    A list is answered again only while the database still holds that version: one key lookup instead of the list's
    statement, and no replica answers older than what was committed before the read began. The version is read
    before the rows, so a list is never older than the version it is kept with (a write landing in between costs
    a reload, not a stale answer). Only reads outside a transaction of their own fill it: a transaction's own
    uncommitted writes move the version too, and may yet roll back."""

    def __init__(self, budget: int = 100_000) -> None:
        # Weighed by `list_weight`: a few lists of a huge tenant or many small ones, within the same memory.
        self._lists: WeightedFifo[tuple[str, str | None], tuple[int, tuple[Group, ...]]] = WeightedFifo(budget)

    def get(self, key: tuple[str, str | None], version: int) -> tuple[Group, ...] | None:
        kept = self._lists.get(key)
        return kept[1] if kept is not None and kept[0] == version else None

    def put(self, key: tuple[str, str | None], version: int, groups: tuple[Group, ...]) -> None:
        self._lists.put(key, (version, groups), list_weight(groups))


def list_weight(groups: Sequence[Group]) -> int:
    """What a kept list weighs against a cache's budget: its groups, plus one so that empty lists count too."""
    return len(groups) + 1


_GROUP_LISTS = "switchboard_group_lists"  # session.info key: the process's GroupLists


def group_lists_info() -> dict[str, Any]:
    """The session info that lets list_groups answer again what it answered before (see `GroupLists`)."""
    return {_GROUP_LISTS: GroupLists()}


async def list_groups(
    session: AsyncSession, principal: Principal, tenant_id: str, *, api_key_attachable: bool = False
) -> Sequence[Group]:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_member(session, principal, tenant_id)
    reach = await permissions.readable_groups_of(session, principal, tenant_id, for_key_attach=api_key_attachable)
    if reach is False:
        return ()
    lists: GroupLists | None = None if session.in_transaction() else session.info.get(_GROUP_LISTS)
    if lists is not None:
        key = (tenant_id, None if reach is True else reach)
        version = await lone_value(session, _LIST_VERSION, tenant_id) or 0
        if (kept := lists.get(key, version)) is not None:
            return kept
    if reach is True:
        rows = await lone_rows(session, _GROUPS_OF_TENANT, {"tenant_id": tenant_id})
    else:
        rows = await lone_rows(session, _GROUPS_OF_MEMBER, {"tenant_id": tenant_id, "user_id": reach})
    groups = tuple([Group(i, tenant_id, n, c) for i, n, c in rows])  # positional: half the cost of keywords
    if lists is not None:
        lists.put(key, version, groups)
    return groups


async def delete_group(session: AsyncSession, principal: Principal, tenant_id: str, group_id: str) -> None:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    row = await _group_in_tenant(session, tenant_id, group_id)
    await session.delete(row)
    await permissions.forget_subject(session, permissions.SubjectType.GROUP, group_id)
    await session.flush()


async def list_group_members(
    session: AsyncSession, principal: Principal, tenant_id: str, group_id: str
) -> list[GroupMember]:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    require_nonempty(group_id, "group_id")
    await permissions.require_group_read(session, principal, tenant_id, group_id)
    user_ids = sorted(await permissions.member_user_ids(session, group_id))
    resolved = await resolve_users(session, user_ids)
    return [GroupMember(user_id=u, metadata=resolved.get(u)) for u in user_ids]


async def add_group_member(
    session: AsyncSession, principal: Principal, tenant_id: str, group_id: str, user_id: str
) -> None:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    require_nonempty(group_id, "group_id")
    require_user_id(user_id)
    # The membership and the group stay locked until the member row is written (a no-op write: the row's lock on
    # PostgreSQL, the write lock on SQLite, before the reads): a tenant member's removal committed in between left
    # them in the group (back in it, with its grants, if ever made a member again), a group's delete an unmapped
    # foreign-key failure.
    await session.execute(
        update(TenantMemberRow)
        .where(TenantMemberRow.tenant_id == tenant_id, TenantMemberRow.user_id == user_id)
        .values(user_id=TenantMemberRow.user_id)
        .execution_options(synchronize_session=False, **QUIET)
    )
    await _group_in_tenant(session, tenant_id, group_id, lock=True)
    if await session.get(TenantMemberRow, (tenant_id, user_id)) is None:
        raise FailedPrecondition(f"user {user_id!r} is not a member of tenant {tenant_id!r}", field="user_id")
    if await session.get(GroupMemberRow, (group_id, user_id)) is not None:
        raise AlreadyExists(f"user {user_id!r} is already a member of this group", field="user_id")
    session.add(GroupMemberRow(group_id=group_id, user_id=user_id))
    with integrity_as(f"user {user_id!r} is already a member of this group", field="user_id"):
        await session.flush()


async def remove_group_member(
    session: AsyncSession, principal: Principal, tenant_id: str, group_id: str, user_id: str
) -> None:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    await _group_in_tenant(session, tenant_id, group_id)
    require_nonempty(user_id, "user_id")
    row = await session.get(GroupMemberRow, (group_id, user_id))
    if row is None:
        raise NotFound(f"user {user_id!r} is not a member of this group", field="user_id")
    await session.delete(row)
    await session.flush()
