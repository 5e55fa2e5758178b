"""/switchboard.console.v1.ConsoleService/* — the console's view of its caller; every right in it is answered by
server.permissions (the same predicates the methods' gates use), never derived here or in the browser."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext
from sqlalchemy.ext.asyncio import AsyncSession

from gen.platform.tenants.v1 import tenant_pb2
from gen.switchboard.console.v1 import console_service_pb2 as pb
from gen.switchboard.console.v1.console_service_connect import ConsoleService
from server import permissions
from server.domain import tenants
from server.domain.principal import Principal
from server.permissions import Capability, TenantRole
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants.convert import enum

__all__ = ["ConsoleServiceHandler"]

Ctx = RequestContext[Any, Any]


async def _access(
    session: AsyncSession, principal: Principal, tenant_id: str, name: str, role: TenantRole | None
) -> pb.TenantAccess:
    held = await permissions.capabilities_in(session, principal, tenant_id)
    return pb.TenantAccess(
        tenant_id=tenant_id,
        tenant_name=name,
        role=enum(tenant_pb2.TenantRole, role) if role is not None else tenant_pb2.TENANT_ROLE_UNSPECIFIED,
        capabilities=pb.TenantCapabilities(
            tenant_admin=await permissions.can_admin_tenant(session, principal, tenant_id),
            create_rag=Capability.CREATE_RAG in held,
            create_agent=Capability.CREATE_AGENT in held,
            create_external_model=Capability.CREATE_EXTERNAL_MODEL in held,
            create_mcp_server=Capability.CREATE_MCP_SERVER in held,
            list_members=Capability.LIST_MEMBERS in held,
            share=Capability.SHARE in held,
            capture=await permissions.holds_capture(session, principal, tenant_id),
        ),
    )


class ConsoleServiceHandler(ConsoleService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def get_session(self, request: pb.GetSessionRequest, ctx: Ctx) -> pb.GetSessionResponse:
        principal = current_principal()
        permissions.require_session(principal, "describe a console session")
        described: list[pb.TenantAccess] = []
        # One statement (the memberships, which seed the gates' answers) unless an extra tenant is asked for.
        async with self._db.lone_read() as s:
            memberships = await tenants.memberships_of(s, principal.user_id) if principal.user_id else []
            if principal.user_id:  # the gates below then find these roles without a read per tenant
                permissions.remember_roles(s, principal.user_id, {m.tenant_id: m.role for m in memberships})
            for m in memberships:
                described.append(await _access(s, principal, m.tenant_id, m.tenant_name, m.role))
            if request.tenant_id and request.tenant_id not in {m.tenant_id for m in memberships}:
                tenant = await tenants.get_tenant(s, principal, request.tenant_id)  # refuses non-members
                described.append(await _access(s, principal, tenant.id, tenant.name, None))
        return pb.GetSessionResponse(
            user=pb.SessionUser(
                user_id=principal.user_id or "", email=principal.email, display_name=principal.display_name
            ),
            can_manage_tenants=principal.can_manage_tenants,
            can_manage_models=principal.can_manage_models,
            tenants=described,
        )
