"""platform.tenants.v1 messages <-> domain values, nothing else."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import TypeVar, cast

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from gen.platform.tenants.v1 import api_key_pb2, group_pb2, service_account_pb2, tenant_pb2, user_pb2
from server.domain.api_keys import ApiKey
from server.domain.groups import Group, GroupMember
from server.domain.service_accounts import ServiceAccount
from server.domain.tenants import Membership, Tenant, TenantMember
from server.domain.users import UserInfo
from server.errors import InvalidArgument
from server.permissions import ResourceKind, ResourceRef
from server.store.db import as_utc

__all__ = [
    "add_groups",
    "api_key",
    "datetime_of",
    "enum",
    "group",
    "group_member",
    "membership",
    "resource_ref",
    "service_account",
    "tenant",
    "tenant_member",
    "timestamp",
    "user_metadata",
]


E = TypeVar("E", bound=int)


def enum(kind: type[E], value: int) -> E:
    """`value` as the generated enum `kind`: Google's enum wrappers are not callable, and fields take the number."""
    return cast(E, int(value))


def timestamp(value: datetime) -> Timestamp:
    message = Timestamp()
    message.FromDatetime(as_utc(value) or value)
    return message


def user_metadata(info: UserInfo | None) -> user_pb2.UserMetadata | None:
    if info is None:
        return None
    return user_pb2.UserMetadata(user_id=info.user_id, email=info.email, display_name=info.display_name)


def add_groups(into: RepeatedCompositeFieldContainer[group_pb2.Group], values: Iterable[Group]) -> None:
    """Each group built in place in the response's list: a list of built messages handed to the response is copied
    into it message by message, which doubled the cost of a 50-group answer."""
    add = into.add
    for value in values:
        _build_group(add, value)


def group(value: Group) -> group_pb2.Group:
    return _build_group(group_pb2.Group, value)


def _build_group(make: Callable[..., group_pb2.Group], value: Group) -> group_pb2.Group:
    """`make` (the message class, or a repeated field's `add`) called with the group's fields as keywords: no dict
    built per group."""
    group_id, tenant_id, name, member_count = value
    return make(id=group_id, tenant_id=tenant_id, name=name, member_count=member_count or 0)


def group_member(value: GroupMember) -> group_pb2.GroupMember:
    return group_pb2.GroupMember(user_id=value.user_id, metadata=user_metadata(value.metadata))


def tenant(value: Tenant) -> tenant_pb2.Tenant:
    return tenant_pb2.Tenant(
        id=value.id, name=value.name, display_name=value.display_name, create_time=timestamp(value.created_at)
    )


def tenant_member(value: TenantMember) -> tenant_pb2.TenantMember:
    return tenant_pb2.TenantMember(
        user_id=value.user_id,
        role=enum(tenant_pb2.TenantRole, value.role),
        metadata=user_metadata(value.metadata),
        pending=value.pending,
        email=value.email,
    )


def membership(value: Membership) -> tenant_pb2.TenantMembership:
    return tenant_pb2.TenantMembership(
        tenant_id=value.tenant_id, tenant_name=value.tenant_name, role=enum(tenant_pb2.TenantRole, value.role)
    )


def api_key(value: ApiKey) -> api_key_pb2.ApiKey:
    return api_key_pb2.ApiKey(
        id=value.id,
        tenant_id=value.tenant_id,
        type=enum(api_key_pb2.ApiKeyType, value.type),
        state=enum(api_key_pb2.ApiKeyState, value.state),
        name=value.name,
        description=value.description,
        owner_user_id=value.owner_user_id or "",
        service_account_id=value.service_account_id or "",
        prefix=value.prefix,
        create_time=timestamp(value.created_at),
        expire_time=timestamp(value.expire_at) if value.expire_at else None,
        last_used_time=timestamp(value.last_used_at) if value.last_used_at else None,
        grants=[
            api_key_pb2.ResourceRef(kind=enum(api_key_pb2.ResourceKind, g.kind), name=g.name) for g in value.grants
        ],
        group_ids=list(value.group_ids),
    )


def resource_ref(value: api_key_pb2.ResourceRef | None, field: str = "grant") -> ResourceRef:
    if value is None or not value.name:
        raise InvalidArgument(f"{field} must name a resource", field=f"{field}.name")
    try:
        return ResourceRef(ResourceKind(int(value.kind)), value.name)
    except ValueError:
        raise InvalidArgument(f"{field}.kind must be set", field=f"{field}.kind") from None


def service_account(value: ServiceAccount) -> service_account_pb2.ServiceAccount:
    return service_account_pb2.ServiceAccount(
        id=value.id,
        tenant_id=value.tenant_id,
        name=value.name,
        description=value.description,
        create_time=timestamp(value.created_at),
        created_by=value.created_by,
    )


def time_field(request: Message, wire: str, field: str) -> datetime | None:
    """An optional Timestamp field of a request (`wire` its proto name, `field` its JSON name for errors)."""
    return datetime_of(getattr(request, wire) if request.HasField(wire) else None, field)


def datetime_of(value: Timestamp | None, field: str = "expire_time") -> datetime | None:
    if value is None:
        return None
    try:
        return value.ToDatetime(tzinfo=UTC)
    except (OverflowError, OSError, ValueError):  # binary Timestamps are not range-checked on decode
        raise InvalidArgument(f"{field} is out of range", field=field) from None
