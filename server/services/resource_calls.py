"""The permission and sharing RPCs every resource service has, written once (rules: server.permissions)."""

from __future__ import annotations

from typing import Any

from gen.platform.modelmanager.v1 import permission_pb, sharing_pb
from server import permissions
from server.domain.validation import require_nonempty
from server.permissions import ResourceKind, ResourceRef, Role, SubjectType
from server.services.context import current_principal
from server.services.modelmanager import convert
from server.store.db import Database

__all__ = ["add_permission", "list_permissions", "remove_permission", "update_sharing"]


def _ref(kind: ResourceKind, name: str, field: str = "name") -> ResourceRef:
    return ResourceRef(kind, require_nonempty(name, field))


async def list_permissions(
    db: Database, kind: ResourceKind, request: Any, *, name_field: str = "name"
) -> list[permission_pb.DeploymentPermission]:
    subject_type = SubjectType(int(request.subject_type)) if request.has_field("subject_type") else None
    role = Role(int(request.role)) if request.has_field("role") else None
    async with db.transaction() as s:
        found = await permissions.list_permissions(
            s,
            current_principal(),
            _ref(kind, getattr(request, name_field), name_field),
            subject_type=subject_type,
            role=role,
        )
    return [convert.permission(p) for p in found]


async def add_permission(db: Database, kind: ResourceKind, request: Any, *, name_field: str = "name") -> None:
    permission = convert.permission_in(request.subject, int(request.role))
    ref = _ref(kind, getattr(request, name_field), name_field)
    async with db.transaction() as s:
        await permissions.add_permission(s, current_principal(), ref, permission)


async def remove_permission(db: Database, kind: ResourceKind, request: Any, *, name_field: str = "name") -> None:
    permission = convert.permission_in(request.subject, int(request.role))
    ref = _ref(kind, getattr(request, name_field), name_field)
    async with db.transaction() as s:
        await permissions.remove_permission(s, current_principal(), ref, permission)


async def update_sharing(db: Database, kind: ResourceKind, request: Any) -> sharing_pb.Sharing:
    async with db.transaction() as s:
        updated = await permissions.set_sharing(
            s, current_principal(), _ref(kind, request.name), convert.sharing_in(request.sharing)
        )
    return convert.sharing(updated)
