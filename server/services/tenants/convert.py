"""platform.tenants.v1 messages <-> domain values, nothing else."""

from __future__ import annotations

from datetime import datetime

from protobuf.wkt import Timestamp

from gen.platform.tenants.v1 import api_key_pb, group_pb, service_account_pb, tenant_pb, user_pb
from server.domain.api_keys import ApiKey
from server.domain.groups import Group, GroupMember
from server.domain.service_accounts import ServiceAccount
from server.domain.tenants import Membership, Tenant, TenantMember
from server.domain.users import UserInfo
from server.errors import InvalidArgument
from server.permissions import ResourceKind, ResourceRef
from server.store.db import as_utc

__all__ = [
    "api_key",
    "datetime_of",
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


def timestamp(value: datetime) -> Timestamp:
    return Timestamp.from_datetime(as_utc(value) or value)


def user_metadata(info: UserInfo | None) -> user_pb.UserMetadata | None:
    if info is None:
        return None
    return user_pb.UserMetadata(user_id=info.user_id, email=info.email, display_name=info.display_name)


def group(value: Group) -> group_pb.Group:
    return group_pb.Group(id=value.id, tenant_id=value.tenant_id, name=value.name, member_count=value.member_count or 0)


def group_member(value: GroupMember) -> group_pb.GroupMember:
    return group_pb.GroupMember(user_id=value.user_id, metadata=user_metadata(value.metadata))


def tenant(value: Tenant) -> tenant_pb.Tenant:
    return tenant_pb.Tenant(
        id=value.id, name=value.name, display_name=value.display_name, create_time=timestamp(value.created_at)
    )


def tenant_member(value: TenantMember) -> tenant_pb.TenantMember:
    return tenant_pb.TenantMember(
        user_id=value.user_id,
        role=tenant_pb.TenantRole(int(value.role)),
        metadata=user_metadata(value.metadata),
        pending=value.pending,
        email=value.email,
    )


def membership(value: Membership) -> tenant_pb.TenantMembership:
    return tenant_pb.TenantMembership(
        tenant_id=value.tenant_id, tenant_name=value.tenant_name, role=tenant_pb.TenantRole(int(value.role))
    )


def api_key(value: ApiKey) -> api_key_pb.ApiKey:
    return api_key_pb.ApiKey(
        id=value.id,
        tenant_id=value.tenant_id,
        type=api_key_pb.ApiKeyType(int(value.type)),
        state=api_key_pb.ApiKeyState(int(value.state)),
        name=value.name,
        description=value.description,
        owner_user_id=value.owner_user_id or "",
        service_account_id=value.service_account_id or "",
        prefix=value.prefix,
        create_time=timestamp(value.created_at),
        expire_time=timestamp(value.expire_at) if value.expire_at else None,
        last_used_time=timestamp(value.last_used_at) if value.last_used_at else None,
        grants=[api_key_pb.ResourceRef(kind=api_key_pb.ResourceKind(int(g.kind)), name=g.name) for g in value.grants],
        group_ids=list(value.group_ids),
    )


def resource_ref(value: api_key_pb.ResourceRef | None, field: str = "grant") -> ResourceRef:
    if value is None or not value.name:
        raise InvalidArgument(f"{field} must name a resource", field=f"{field}.name")
    try:
        return ResourceRef(ResourceKind(int(value.kind)), value.name)
    except ValueError:
        raise InvalidArgument(f"{field}.kind must be set", field=f"{field}.kind") from None


def service_account(value: ServiceAccount) -> service_account_pb.ServiceAccount:
    return service_account_pb.ServiceAccount(
        id=value.id,
        tenant_id=value.tenant_id,
        name=value.name,
        description=value.description,
        create_time=timestamp(value.created_at),
        created_by=value.created_by,
    )


def datetime_of(value: Timestamp | None, field: str = "expire_time") -> datetime | None:
    if value is None:
        return None
    try:
        return value.to_datetime()
    except (OverflowError, OSError, ValueError):  # binary Timestamps are not range-checked on decode
        raise InvalidArgument(f"{field} is out of range", field=field) from None
