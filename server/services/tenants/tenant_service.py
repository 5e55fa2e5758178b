"""/platform.tenants.v1.TenantService/* — tenants, members and invites (rules in server.domain.tenants)."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.tenants.v1 import tenant_service_pb2 as pb
from gen.platform.tenants.v1.tenant_service_connect import TenantService
from server.domain import tenants
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants import convert
from server.store.rag_index import chunk_index_for

__all__ = ["TenantServiceHandler"]

Ctx = RequestContext[Any, Any]


class TenantServiceHandler(TenantService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_tenant(self, request: pb.CreateTenantRequest, ctx: Ctx) -> pb.CreateTenantResponse:
        async with self._db.transaction() as s:
            tenant = await tenants.create_tenant(s, current_principal(), request.name, request.display_name)
        return pb.CreateTenantResponse(tenant=convert.tenant(tenant))

    async def get_tenant(self, request: pb.GetTenantRequest, ctx: Ctx) -> pb.GetTenantResponse:
        async with self._db.transaction() as s:
            tenant = await tenants.get_tenant(s, current_principal(), request.tenant_id)
        return pb.GetTenantResponse(tenant=convert.tenant(tenant))

    async def list_tenants(self, request: pb.ListTenantsRequest, ctx: Ctx) -> pb.ListTenantsResponse:
        async with self._db.transaction() as s:
            found = await tenants.list_tenants(s, current_principal())
        return pb.ListTenantsResponse(tenants=[convert.tenant(t) for t in found])

    async def update_tenant(self, request: pb.UpdateTenantRequest, ctx: Ctx) -> pb.UpdateTenantResponse:
        async with self._db.transaction() as s:
            tenant = await tenants.update_tenant(s, current_principal(), request.tenant_id, request.display_name)
        return pb.UpdateTenantResponse(tenant=convert.tenant(tenant))

    async def delete_tenant(self, request: pb.DeleteTenantRequest, ctx: Ctx) -> pb.DeleteTenantResponse:
        async with self._db.transaction() as s:
            index = await chunk_index_for(self._db.engine)
            await tenants.delete_tenant(s, current_principal(), index, request.tenant_id)
        return pb.DeleteTenantResponse()

    async def add_tenant_member(self, request: pb.AddTenantMemberRequest, ctx: Ctx) -> pb.AddTenantMemberResponse:
        async with self._db.transaction() as s:
            member = await tenants.add_member(
                s, current_principal(), request.tenant_id, request.user_id, int(request.role)
            )
        return pb.AddTenantMemberResponse(member=convert.tenant_member(member))

    async def invite_tenant_member(
        self, request: pb.InviteTenantMemberRequest, ctx: Ctx
    ) -> pb.InviteTenantMemberResponse:
        role = int(request.role) if request.HasField("role") else None
        async with self._db.transaction() as s:
            member = await tenants.invite_member(s, current_principal(), request.tenant_id, request.email, role)
        return pb.InviteTenantMemberResponse(member=convert.tenant_member(member))

    async def list_tenant_members(self, request: pb.ListTenantMembersRequest, ctx: Ctx) -> pb.ListTenantMembersResponse:
        async with self._db.transaction() as s:
            members = await tenants.list_members(s, current_principal(), request.tenant_id)
        return pb.ListTenantMembersResponse(members=[convert.tenant_member(m) for m in members])

    async def update_tenant_member_role(
        self, request: pb.UpdateTenantMemberRoleRequest, ctx: Ctx
    ) -> pb.UpdateTenantMemberRoleResponse:
        async with self._db.transaction() as s:
            member = await tenants.update_member_role(
                s, current_principal(), request.tenant_id, request.user_id, int(request.role)
            )
        return pb.UpdateTenantMemberRoleResponse(member=convert.tenant_member(member))

    async def remove_tenant_member(
        self, request: pb.RemoveTenantMemberRequest, ctx: Ctx
    ) -> pb.RemoveTenantMemberResponse:
        async with self._db.transaction() as s:
            await tenants.remove_member(s, current_principal(), request.tenant_id, request.user_id, request.email)
        return pb.RemoveTenantMemberResponse()
