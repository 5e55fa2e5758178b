"""API keys: personal, service-account and Personal (all resources); active, disabled, revoked; grants and groups.

The secret (`sb_…`) is shown once at creation; only its SHA-256 is stored (secrets are 256-bit random, so a plain
hash is enough and lets a lookup be one indexed equality). Disabling and enabling keep the secret and the grants.
Revoked keys are final: nothing about them may change any more.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import IntEnum

from sqlalchemy import ColumnElement, delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.auth import API_KEY_PREFIX
from server.domain.model_registry import referenced_alias
from server.domain.principal import ApiKeyType, Principal
from server.domain.validation import MAX_DESCRIPTION, limit_text, require_name, require_nonempty
from server.errors import AlreadyExists, FailedPrecondition, InvalidArgument, NotFound, PermissionDenied
from server.permissions import ResourceKind, ResourceRef
from server.store.db import new_id
from server.store.models import ApiKeyGrantRow, ApiKeyGroupRow, ApiKeyRow, GroupRow, ServiceAccountRow, utcnow

__all__ = [
    "ApiKey",
    "CreatedKey",
    "KeyState",
    "add_grant",
    "attach_group",
    "create_key",
    "delete_keys",
    "detach_group",
    "disable_member_keys",
    "get_key",
    "hash_secret",
    "list_keys",
    "remove_grant",
    "set_state",
    "update_key",
    "views",
]

MAX_GRANTS = 1000
MAX_GROUPS = 100


class KeyState(IntEnum):
    """Numbers match platform.tenants.v1.ApiKeyState."""

    ACTIVE = 1
    DISABLED = 2
    REVOKED = 3


@dataclass(frozen=True)
class ApiKey:
    id: str
    tenant_id: str
    type: ApiKeyType
    state: KeyState
    name: str
    description: str
    owner_user_id: str | None
    service_account_id: str | None
    prefix: str
    created_at: datetime
    expire_at: datetime | None
    last_used_at: datetime | None
    grants: tuple[ResourceRef, ...]
    group_ids: tuple[str, ...]


@dataclass(frozen=True)
class CreatedKey:
    key: ApiKey
    secret: str  # shown once, never stored


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode()).digest()


def _new_secret() -> str:
    return API_KEY_PREFIX + secrets.token_urlsafe(32)


async def _view(session: AsyncSession, row: ApiKeyRow) -> ApiKey:
    return (await views(session, [row]))[0]


# Ids per IN list: a whole tenant's keys (ListApiKeys is unpaged) would pass PostgreSQL's 65,535 bound parameters.
_VIEW_CHUNK = 1000


async def views(session: AsyncSession, rows: Sequence[ApiKeyRow]) -> list[ApiKey]:
    """The keys as answered, their grants and groups read in two statements per thousand keys (a page of keys costs
    two statements, not two per key)."""
    ids = [row.id for row in rows]
    grants: dict[str, list[ResourceRef]] = {i: [] for i in ids}
    groups: dict[str, list[str]] = {i: [] for i in ids}
    for start in range(0, len(ids), _VIEW_CHUNK):
        chunk = ids[start : start + _VIEW_CHUNK]
        for key_id, kind, name in await session.execute(
            select(ApiKeyGrantRow.api_key_id, ApiKeyGrantRow.resource_kind, ApiKeyGrantRow.resource_name)
            .where(ApiKeyGrantRow.api_key_id.in_(chunk))
            .order_by(ApiKeyGrantRow.resource_kind, ApiKeyGrantRow.resource_name)
        ):
            grants[key_id].append(ResourceRef(ResourceKind(kind), name))
        for key_id, group_id in await session.execute(
            select(ApiKeyGroupRow.api_key_id, ApiKeyGroupRow.group_id)
            .where(ApiKeyGroupRow.api_key_id.in_(chunk))
            .order_by(ApiKeyGroupRow.group_id)
        ):
            groups[key_id].append(group_id)
    return [_of(row, tuple(grants[row.id]), tuple(groups[row.id])) for row in rows]


def _of(row: ApiKeyRow, grants: tuple[ResourceRef, ...], group_ids: tuple[str, ...]) -> ApiKey:
    return ApiKey(
        id=row.id,
        tenant_id=row.tenant_id,
        type=ApiKeyType(row.type),
        state=KeyState(row.state),
        name=row.name,
        description=row.description,
        owner_user_id=row.owner_user_id,
        service_account_id=row.service_account_id,
        prefix=row.prefix,
        created_at=row.created_at,
        expire_at=row.expire_at,
        last_used_at=row.last_used_at,
        grants=grants,
        group_ids=group_ids,
    )


def _key_type(value: int) -> ApiKeyType:
    try:
        return ApiKeyType(value)
    except ValueError:
        raise InvalidArgument(
            "type must be API_KEY_TYPE_PERSONAL, API_KEY_TYPE_SERVICE_ACCOUNT or API_KEY_TYPE_PERSONAL_ALL_RESOURCES",
            field="type",
        ) from None


def _future_expiry(expire_at: datetime | None) -> datetime | None:
    if expire_at is not None and expire_at <= utcnow():
        raise InvalidArgument("expire_time must be in the future", field="expire_time")
    return expire_at


async def _check_grant(session: AsyncSession, principal: Principal, row: ApiKeyRow, ref: ResourceRef) -> None:
    """A key may be granted what its owner (or, for service-account keys, its creator) can read."""
    if ref.kind not in ResourceKind.__members__.values() or not ref.name:
        raise InvalidArgument("grant must name a resource kind and a resource name", field="grant")
    if not await permissions.can_read(session, principal, ref):
        raise NotFound(f"{ref.kind.name.lower()} {ref.name!r} not found", field="grant.name")


async def _attachable_group(session: AsyncSession, principal: Principal, tenant_id: str, group_id: str) -> None:
    group = await session.get(GroupRow, group_id)
    if group is None or group.tenant_id != tenant_id:
        raise NotFound(f"group {group_id!r} not found in this tenant", field="group_ids")
    if not await permissions.can_attach_key_to_group(session, principal, group):
        raise PermissionDenied(f"the caller may not attach keys to group {group_id!r}", field="group_ids")


async def create_key(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    *,
    key_type: int,
    name: str,
    description: str = "",
    service_account_id: str = "",
    expire_at: datetime | None = None,
    grants: tuple[ResourceRef, ...] = (),
    group_ids: tuple[str, ...] = (),
) -> CreatedKey:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    permissions.require_session(principal, "create or manage API keys")
    kind = _key_type(key_type)
    name = require_name(name, "name")
    # Bounded before the database: each grant and group costs queries of its own.
    if len(grants) > MAX_GRANTS:
        raise InvalidArgument(f"grants may name at most {MAX_GRANTS} resources", field="grants")
    if len(group_ids) > MAX_GROUPS:
        raise InvalidArgument(f"group_ids may name at most {MAX_GROUPS} groups", field="group_ids")
    owner: str | None = None
    account: str | None = None
    if kind == ApiKeyType.SERVICE_ACCOUNT:
        await permissions.require_tenant_admin(session, principal, tenant_id)
        require_nonempty(service_account_id, "service_account_id")
        sa = await session.get(ServiceAccountRow, service_account_id)
        if sa is None or sa.tenant_id != tenant_id:
            raise NotFound(f"service account {service_account_id!r} not found", field="service_account_id")
        account = sa.id
    else:
        if service_account_id:
            raise InvalidArgument("service_account_id is only for service-account keys", field="service_account_id")
        if principal.user_id is None:
            raise PermissionDenied("personal keys belong to a signed-in user")
        if await permissions.tenant_role(session, principal, tenant_id) is None:
            raise PermissionDenied("the caller is not a member of this tenant")
        owner = principal.user_id
    if kind == ApiKeyType.PERSONAL_ALL_RESOURCES and grants:
        raise InvalidArgument(
            "Personal (all resources) keys follow their owner's access and take no grants", field="grants"
        )
    secret = _new_secret()
    row = ApiKeyRow(
        id=new_id("key"),
        tenant_id=tenant_id,
        type=int(kind),
        state=int(KeyState.ACTIVE),
        name=name,
        description=limit_text(description or "", "description", MAX_DESCRIPTION),
        owner_user_id=owner,
        service_account_id=account,
        prefix=secret[:10],
        secret_hash=hash_secret(secret),
        expire_at=_future_expiry(expire_at),
    )
    session.add(row)
    await session.flush()
    for ref in dict.fromkeys([await referenced_alias(session, g) for g in grants]):
        await _check_grant(session, principal, row, ref)
        session.add(ApiKeyGrantRow(api_key_id=row.id, resource_kind=int(ref.kind), resource_name=ref.name))
    for group_id in dict.fromkeys(group_ids):
        await _attachable_group(session, principal, tenant_id, group_id)
        session.add(ApiKeyGroupRow(api_key_id=row.id, group_id=group_id))
    await session.flush()
    return CreatedKey(await _view(session, row), secret)


async def disable_member_keys(session: AsyncSession, tenant_id: str, user_id: str) -> None:
    """A member leaving a tenant: the keys they own there stop (a Personal (all resources) key went on reaching what
    was granted to its owner directly, in a tenant they had left). Disabled, not revoked, so that the owner, if made
    a member again, may turn them back on; an update of the keys is what every process's key cache hears of."""
    await session.execute(
        update(ApiKeyRow)
        .where(
            ApiKeyRow.tenant_id == tenant_id,
            ApiKeyRow.owner_user_id == user_id,
            ApiKeyRow.state == int(KeyState.ACTIVE),
        )
        .values(state=int(KeyState.DISABLED), updated_at=utcnow())
    )


async def delete_keys(session: AsyncSession, which: ColumnElement[bool]) -> None:
    """Delete the keys `which` selects, and the grants naming them, before what owns them goes (a service account, a
    tenant): a delete of the keys themselves is what every process's key cache hears of (server.invalidation); the
    foreign-key cascade deletes them unheard, and their cached lookups went on authenticating them."""
    for key_id in list(await session.scalars(select(ApiKeyRow.id).where(which))):
        await permissions.forget_subject(session, permissions.SubjectType.API_KEY, key_id)
    await session.execute(delete(ApiKeyRow).where(which))


async def _manageable(session: AsyncSession, principal: Principal, tenant_id: str, key_id: str) -> ApiKeyRow:
    """The key, if the caller owns it or administers its tenant; not_found otherwise (ids cannot be probed). Owning
    it is not enough once the owner has left the tenant: an admin's disabling of a departed member's key stands."""
    permissions.require_session(principal, "read or manage API keys")
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    require_nonempty(key_id, "api_key_id")
    row = await session.get(ApiKeyRow, key_id)
    if row is not None and row.tenant_id == tenant_id:
        owns = principal.user_id is not None and row.owner_user_id == principal.user_id
        if (owns and await permissions.tenant_role(session, principal, tenant_id) is not None) or (
            await permissions.can_admin_tenant(session, principal, tenant_id)
        ):
            return row
    raise NotFound(f"API key {key_id!r} not found", field="api_key_id")


def _not_revoked(row: ApiKeyRow) -> None:
    if row.state == KeyState.REVOKED:
        raise FailedPrecondition("the API key is revoked; revoked keys cannot be changed", field="api_key_id")


async def get_key(session: AsyncSession, principal: Principal, tenant_id: str, key_id: str) -> ApiKey:
    return await _view(session, await _manageable(session, principal, tenant_id, key_id))


async def list_keys(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    *,
    service_account_id: str | None = None,
    include_revoked: bool = False,
) -> list[ApiKey]:
    permissions.require_session(principal, "read or manage API keys")
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_member(session, principal, tenant_id)
    query = select(ApiKeyRow).where(ApiKeyRow.tenant_id == tenant_id).order_by(ApiKeyRow.created_at, ApiKeyRow.id)
    if not await permissions.can_admin_tenant(session, principal, tenant_id):
        query = query.where(ApiKeyRow.owner_user_id == (principal.user_id or ""))
    if service_account_id is not None:
        query = query.where(ApiKeyRow.service_account_id == service_account_id)
    if not include_revoked:
        query = query.where(ApiKeyRow.state != int(KeyState.REVOKED))
    return await views(session, (await session.scalars(query)).all())


async def update_key(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    key_id: str,
    *,
    name: str | None = None,
    description: str | None = None,
    expire_at: datetime | None = None,
) -> ApiKey:
    permissions.require_session(principal, "create or manage API keys")
    row = await _manageable(session, principal, tenant_id, key_id)
    _not_revoked(row)
    if name is not None:
        row.name = require_name(name, "name")
    if description is not None:
        row.description = limit_text(description, "description", MAX_DESCRIPTION)
    if expire_at is not None:
        row.expire_at = _future_expiry(expire_at)
    row.updated_at = utcnow()
    await session.flush()
    return await _view(session, row)


_TRANSITIONS = {
    KeyState.DISABLED: {KeyState.ACTIVE},
    KeyState.ACTIVE: {KeyState.DISABLED},
    KeyState.REVOKED: {KeyState.ACTIVE, KeyState.DISABLED},
}


async def set_state(
    session: AsyncSession, principal: Principal, tenant_id: str, key_id: str, state: KeyState
) -> ApiKey:
    """Disable, enable or revoke. The secret and the grants are kept; revocation is final."""
    permissions.require_session(principal, "create or manage API keys")
    row = await _manageable(session, principal, tenant_id, key_id)
    current = KeyState(row.state)
    if current not in _TRANSITIONS[state]:
        raise FailedPrecondition(
            f"an API key that is {current.name.lower()} cannot become {state.name.lower()}", field="api_key_id"
        )
    row.state = int(state)
    row.updated_at = utcnow()
    await session.flush()
    return await _view(session, row)


async def _grantable(session: AsyncSession, principal: Principal, tenant_id: str, key_id: str) -> ApiKeyRow:
    permissions.require_session(principal, "create or manage API keys")
    row = await _manageable(session, principal, tenant_id, key_id)
    _not_revoked(row)
    if row.type == ApiKeyType.PERSONAL_ALL_RESOURCES:
        raise FailedPrecondition(
            "Personal (all resources) keys follow their owner's access and take no grants", field="api_key_id"
        )
    return row


async def add_grant(
    session: AsyncSession, principal: Principal, tenant_id: str, key_id: str, ref: ResourceRef
) -> ApiKey:
    row = await _grantable(session, principal, tenant_id, key_id)
    ref = await referenced_alias(session, ref)
    await _check_grant(session, principal, row, ref)
    if await session.get(ApiKeyGrantRow, (row.id, int(ref.kind), ref.name)) is not None:
        raise AlreadyExists("the key already has this grant", field="grant")
    session.add(ApiKeyGrantRow(api_key_id=row.id, resource_kind=int(ref.kind), resource_name=ref.name))
    await session.flush()
    return await _view(session, row)


async def remove_grant(
    session: AsyncSession, principal: Principal, tenant_id: str, key_id: str, ref: ResourceRef
) -> ApiKey:
    row = await _grantable(session, principal, tenant_id, key_id)
    ref = await referenced_alias(session, ref)
    grant = await session.get(ApiKeyGrantRow, (row.id, int(ref.kind), ref.name))
    if grant is None:
        raise NotFound("the key has no such grant", field="grant")
    await session.delete(grant)
    await session.flush()
    return await _view(session, row)


async def attach_group(
    session: AsyncSession, principal: Principal, tenant_id: str, key_id: str, group_id: str
) -> ApiKey:
    row = await _grantable(session, principal, tenant_id, key_id)
    await _attachable_group(session, principal, row.tenant_id, group_id)
    if await session.get(ApiKeyGroupRow, (row.id, group_id)) is not None:
        raise AlreadyExists("the key is already attached to this group", field="group_id")
    session.add(ApiKeyGroupRow(api_key_id=row.id, group_id=group_id))
    await session.flush()
    return await _view(session, row)


async def detach_group(
    session: AsyncSession, principal: Principal, tenant_id: str, key_id: str, group_id: str
) -> ApiKey:
    row = await _grantable(session, principal, tenant_id, key_id)
    link = await session.get(ApiKeyGroupRow, (row.id, group_id))
    if link is None:
        raise NotFound("the key is not attached to this group", field="group_id")
    await session.delete(link)
    await session.flush()
    return await _view(session, row)
