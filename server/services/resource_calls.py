"""The permission and sharing RPCs every resource service has, written once (rules: server.permissions)."""

from __future__ import annotations

from typing import Any, TypeVar

from gen.platform.modelmanager.v1 import permission_pb2, sharing_pb2
from server import permissions
from server.domain.validation import require_nonempty
from server.errors import InvalidArgument
from server.permissions import ResourceKind, ResourceRef, Role, SubjectType
from server.services.context import current_principal
from server.services.modelmanager import convert
from server.store.db import Database

__all__ = ["add_permission", "list_permissions", "remove_permission", "update_sharing"]

_E = TypeVar("_E", SubjectType, Role)


def _ref(kind: ResourceKind, name: str, field: str = "name") -> ResourceRef:
    return ResourceRef(kind, require_nonempty(name, field))


def _filter(enum: type[_E], request: Any, field: str, wire_field: str) -> _E | None:
    """An optional enum filter: unset means no filter; UNSPECIFIED or unknown numbers are refused by field."""
    if not request.HasField(wire_field):
        return None
    try:
        return enum(int(getattr(request, wire_field)))
    except ValueError:
        allowed = ", ".join(member.name for member in enum)
        raise InvalidArgument(f"{field} must be one of {allowed} (or omitted)", field=field) from None


async def list_permissions(
    db: Database, kind: ResourceKind, request: Any, *, name_field: str = "name"
) -> list[permission_pb2.DeploymentPermission]:
    subject_type = _filter(SubjectType, request, "subjectType", "subject_type")
    role = _filter(Role, request, "role", "role")
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


async def update_sharing(db: Database, kind: ResourceKind, request: Any) -> sharing_pb2.Sharing:
    async with db.transaction() as s:
        updated = await permissions.set_sharing(
            s, current_principal(), _ref(kind, request.name), convert.sharing_in(request.sharing)
        )
    return convert.sharing(updated)
