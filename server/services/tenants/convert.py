"""platform.tenants.v1 messages <-> domain values, nothing else."""

from __future__ import annotations

from datetime import datetime

from protobuf.wkt import Timestamp

from gen.platform.tenants.v1 import group_pb, tenant_pb, user_pb
from server.domain.groups import Group, GroupMember
from server.domain.tenants import Membership, Tenant, TenantMember
from server.domain.users import UserInfo

__all__ = ["group", "group_member", "membership", "tenant", "tenant_member", "timestamp", "user_metadata"]


def timestamp(value: datetime) -> Timestamp:
    return Timestamp.from_datetime(value)


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
