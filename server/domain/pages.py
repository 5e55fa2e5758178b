"""Keyset pages of the tenant lists that grow large (switchboard.tenants.v1.TenantListService): API keys, groups,
group members, tenant members and invites, service accounts.

Each list answers the same items as its unpaged namesake (api_keys.list_keys, groups.list_groups, ...), behind the
same gates, in the same order, `size` at a time. A page token is the sort key of the page's last item (plus which
list it belongs to), so the next page is "the items after it" on an index: a deep page costs what the first one
does (OFFSET would read and drop every item before it), and items added or removed between pages never shift the
others. Indexes: api_keys (tenant_id, created_at, id) (migration 0006); the others' orders are their primary keys
or unique constraints.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

import orjson
from sqlalchemy import ColumnElement, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain import api_keys, service_accounts
from server.domain.groups import Group, GroupMember
from server.domain.principal import Principal
from server.domain.tenants import TenantMember
from server.domain.users import resolve_users
from server.domain.validation import require_nonempty
from server.errors import InvalidArgument
from server.permissions import Capability, TenantRole
from server.store.keyset import Window
from server.store.models import (
    ApiKeyRow,
    GroupMemberRow,
    GroupRow,
    ServiceAccountRow,
    TenantInviteRow,
    TenantMemberRow,
)

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "Page",
    "Window",
    "api_keys_page",
    "group_members_page",
    "groups_page",
    "service_accounts_page",
    "tenant_members_page",
    "token_after",
    "walk",
]

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500
MAX_SEARCH = 100
T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_token: str = ""


async def walk(
    kind: str,
    token: str,
    size: int,
    *,
    parts: int,
    fetch: Callable[[Window], Awaitable[Sequence[T]]],
    key: Callable[[T], tuple[str, ...]],
    parse: Callable[[list[str]], tuple[Any, ...]] = tuple,
    search: str = "",
) -> Page[T]:
    """One page of a list whose function takes a Window: `key` gives an item's sort key as the token's strings and
    `parse` turns them back into the values the query compares (a time, say). One more item than the page is read
    to learn whether another page follows, so a full last page carries no token. A `search` narrows the list (the
    same token then pages the narrowed list: it is a sort key, not a position)."""
    size = _size(size)
    search = search.strip()
    if len(search) > MAX_SEARCH:
        raise InvalidArgument(f"search must be at most {MAX_SEARCH} characters", field="search")
    after = _after(kind, token, parts)
    try:
        start = None if after is None else parse(after)
    except ValueError:
        raise InvalidArgument("page_token is not a token of this list", field="page_token") from None
    items, next_token = _paged(await fetch(Window(start, size + 1, search)), size, kind, key)
    return Page(list(items), next_token)


def _size(value: int) -> int:
    if value < 0 or value > MAX_PAGE_SIZE:
        raise InvalidArgument(
            f"page_size must be between 1 and {MAX_PAGE_SIZE} (0 means {DEFAULT_PAGE_SIZE})", field="page_size"
        )
    return value or DEFAULT_PAGE_SIZE


def _token(kind: str, *key: str) -> str:
    return base64.urlsafe_b64encode(orjson.dumps([kind, *key])).decode().rstrip("=")


def token_after(kind: str, *key: str) -> str:
    """The token of the page after an item, from its sort key (for benchmarks and tools that start deep in a list:
    "api_keys" (created_at in ISO 8601, id), "groups" (name), "group_members" (user id), "tenant_members"
    ("members", user id) or ("invites", email), "service_accounts" (name))."""
    return _token(kind, *key)


def _after(kind: str, token: str, parts: int) -> list[str] | None:
    """The sort key a token names (None for the first page); a token of another list, or no token at all, is
    refused rather than read as "from the start"."""
    if not token:
        return None
    try:
        value = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except (binascii.Error, ValueError):
        value = None
    if (
        not isinstance(value, list)
        or len(value) != parts + 1
        or value[0] != kind
        or not all(isinstance(v, str) and "\x00" not in v for v in value[1:])  # PostgreSQL's driver refused NUL (a 500)
    ):
        raise InvalidArgument("page_token is not a token of this list", field="page_token")
    return value[1:]


def _paged(rows: Sequence[Any], size: int, kind: str, key: Any) -> tuple[Sequence[Any], str]:
    """The page's rows (one more was read to learn whether a next page exists) and the next page's token."""
    if len(rows) <= size:
        return rows, ""
    rows = rows[:size]
    return rows, _token(kind, *key(rows[-1]))


async def api_keys_page(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    *,
    service_account_id: str | None = None,
    include_revoked: bool = False,
    size: int = 0,
    token: str = "",
) -> Page[api_keys.ApiKey]:
    permissions.require_session(principal, "read or manage API keys")
    size = _size(size)
    after = _after("api_keys", token, 2)
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_member(session, principal, tenant_id)
    where: list[ColumnElement[bool]] = [ApiKeyRow.tenant_id == tenant_id]
    if not await permissions.can_admin_tenant(session, principal, tenant_id):
        where.append(ApiKeyRow.owner_user_id == (principal.user_id or ""))
    if service_account_id is not None:
        where.append(ApiKeyRow.service_account_id == service_account_id)
    if not include_revoked:
        where.append(ApiKeyRow.state != int(api_keys.KeyState.REVOKED))
    if after is not None:
        try:
            created = datetime.fromisoformat(after[0])
        except ValueError:
            raise InvalidArgument("page_token is not a token of this list", field="page_token") from None
        where.append(tuple_(ApiKeyRow.created_at, ApiKeyRow.id) > tuple_(created, after[1]))
    query = select(ApiKeyRow).where(*where).order_by(ApiKeyRow.created_at, ApiKeyRow.id).limit(size + 1)
    rows, next_token = _paged(
        (await session.scalars(query)).all(), size, "api_keys", lambda r: (r.created_at.isoformat(), r.id)
    )
    return Page(await api_keys.views(session, rows), next_token)


async def groups_page(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    *,
    api_key_attachable: bool = False,
    size: int = 0,
    token: str = "",
) -> Page[Group]:
    size = _size(size)
    after = _after("groups", token, 1)
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_member(session, principal, tenant_id)
    reach = await permissions.readable_groups_of(session, principal, tenant_id, for_key_attach=api_key_attachable)
    if reach is False:
        return Page([])
    members = select(func.count()).where(GroupMemberRow.group_id == GroupRow.id).scalar_subquery()
    query = select(GroupRow.id, GroupRow.name, members).where(GroupRow.tenant_id == tenant_id)
    if reach is not True:
        query = query.where(GroupRow.id.in_(select(GroupMemberRow.group_id).where(GroupMemberRow.user_id == reach)))
    if after is not None:
        query = query.where(GroupRow.name > after[0])
    rows, next_token = _paged(
        (await session.execute(query.order_by(GroupRow.name).limit(size + 1))).all(),
        size,
        "groups",
        lambda r: (r.name,),
    )
    return Page([Group(i, tenant_id, n, c) for i, n, c in rows], next_token)


async def group_members_page(
    session: AsyncSession, principal: Principal, tenant_id: str, group_id: str, *, size: int = 0, token: str = ""
) -> Page[GroupMember]:
    size = _size(size)
    after = _after("group_members", token, 1)
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    require_nonempty(group_id, "group_id")
    await permissions.require_group_read(session, principal, tenant_id, group_id)
    query = select(GroupMemberRow.user_id).where(GroupMemberRow.group_id == group_id)
    if after is not None:
        query = query.where(GroupMemberRow.user_id > after[0])
    user_ids, next_token = _paged(
        (await session.scalars(query.order_by(GroupMemberRow.user_id).limit(size + 1))).all(),
        size,
        "group_members",
        lambda u: (u,),
    )
    resolved = await resolve_users(session, user_ids)
    return Page([GroupMember(user_id=u, metadata=resolved.get(u)) for u in user_ids], next_token)


async def tenant_members_page(
    session: AsyncSession, principal: Principal, tenant_id: str, *, size: int = 0, token: str = ""
) -> Page[TenantMember]:
    """Members by user id, then invites by email: a token names which of the two it stopped in."""
    size = _size(size)
    after = _after("tenant_members", token, 2)
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_capability(session, principal, tenant_id, Capability.LIST_MEMBERS)
    phase, last = after if after is not None else ("members", None)
    if phase not in ("members", "invites"):
        raise InvalidArgument("page_token is not a token of this list", field="page_token")
    out: list[TenantMember] = []
    if phase == "members":
        query = select(TenantMemberRow.user_id, TenantMemberRow.role).where(TenantMemberRow.tenant_id == tenant_id)
        if last is not None:
            query = query.where(TenantMemberRow.user_id > last)
        rows = (await session.execute(query.order_by(TenantMemberRow.user_id).limit(size + 1))).all()
        if len(rows) > size:
            rows = rows[:size]
            resolved = await resolve_users(session, [r.user_id for r in rows])
            out = [TenantMember(r.user_id, TenantRole(r.role), resolved.get(r.user_id)) for r in rows]
            return Page(out, _token("tenant_members", "members", rows[-1].user_id))
        resolved = await resolve_users(session, [r.user_id for r in rows])
        out = [TenantMember(r.user_id, TenantRole(r.role), resolved.get(r.user_id)) for r in rows]
        last = None
    invites = select(TenantInviteRow.email, TenantInviteRow.role).where(TenantInviteRow.tenant_id == tenant_id)
    if last is not None:
        invites = invites.where(TenantInviteRow.email > last)
    room = size - len(out)
    found = (await session.execute(invites.order_by(TenantInviteRow.email).limit(room + 1))).all()
    out.extend(TenantMember("", TenantRole(i.role), None, pending=True, email=i.email) for i in found[:room])
    if len(found) > room:
        # The page ends inside the invites (or, when the members filled it exactly, before the first of them).
        return Page(out, _token("tenant_members", "invites", found[room - 1].email if room else ""))
    return Page(out)


async def service_accounts_page(
    session: AsyncSession, principal: Principal, tenant_id: str, *, size: int = 0, token: str = ""
) -> Page[service_accounts.ServiceAccount]:
    size = _size(size)
    after = _after("service_accounts", token, 1)
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    query = select(ServiceAccountRow).where(ServiceAccountRow.tenant_id == tenant_id)
    if after is not None:
        query = query.where(ServiceAccountRow.name > after[0])
    rows, next_token = _paged(
        (await session.scalars(query.order_by(ServiceAccountRow.name).limit(size + 1))).all(),
        size,
        "service_accounts",
        lambda r: (r.name,),
    )
    return Page([service_accounts.view(r) for r in rows], next_token)
