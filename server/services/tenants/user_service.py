"""/platform.tenants.v1.UserService/* — who am I, and deprovisioning a user."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.tenants.v1 import user_pb2
from gen.platform.tenants.v1 import user_service_pb2 as pb
from gen.platform.tenants.v1.user_service_connect import UserService
from server import permissions
from server.domain import tenants, users
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants import convert

__all__ = ["UserServiceHandler"]

Ctx = RequestContext[Any, Any]


class UserServiceHandler(UserService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def get_current_user(self, request: pb.GetCurrentUserRequest, ctx: Ctx) -> pb.GetCurrentUserResponse:
        principal = current_principal()
        memberships: list[tenants.Membership] = []
        if principal.user_id:
            async with self._db.lone_read() as s:
                memberships = await tenants.memberships_of(s, principal.user_id)
        if principal.api_key is not None:
            memberships = [m for m in memberships if m.tenant_id == principal.api_key.tenant_id]
        return pb.GetCurrentUserResponse(
            user=user_pb2.UserMetadata(
                user_id=principal.user_id or "", email=principal.email, display_name=principal.display_name
            ),
            can_manage_tenants=principal.api_key is None and principal.can_manage_tenants,
            can_manage_models=principal.api_key is None and principal.can_manage_models,
            memberships=[convert.membership(m) for m in memberships],
            tenant_id=(principal.api_key.tenant_id if principal.api_key else principal.scoped_tenant_id) or "",
            api_key_id=principal.api_key.key_id if principal.api_key else "",
        )

    async def delete_user(self, request: pb.DeleteUserRequest, ctx: Ctx) -> pb.DeleteUserResponse:
        principal = current_principal()
        permissions.require_platform_scope(principal, "can_manage_tenants")
        async with self._db.transaction() as s:
            await users.delete_user(s, request.user_id)
        return pb.DeleteUserResponse()
