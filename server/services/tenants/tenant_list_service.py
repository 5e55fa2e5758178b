"""/switchboard.tenants.v1.TenantListService/* — the pages and their gates: server.domain.pages."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.switchboard.tenants.v1 import tenant_list_service_pb2 as pb
from gen.switchboard.tenants.v1.tenant_list_service_connect import TenantListService
from server.domain import pages
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants import convert

__all__ = ["TenantListServiceHandler"]

Ctx = RequestContext[Any, Any]


class TenantListServiceHandler(TenantListService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def list_api_keys(self, request: pb.ListApiKeysRequest, ctx: Ctx) -> pb.ListApiKeysResponse:
        account = request.service_account_id if request.HasField("service_account_id") else None
        async with self._db.read() as s:
            page = await pages.api_keys_page(
                s,
                current_principal(),
                request.tenant_id,
                service_account_id=account,
                include_revoked=request.include_revoked,
                size=request.page.page_size,
                token=request.page.page_token,
            )
        return pb.ListApiKeysResponse(
            api_keys=[convert.api_key(k) for k in page.items], next_page_token=page.next_token
        )

    async def list_groups(self, request: pb.ListGroupsRequest, ctx: Ctx) -> pb.ListGroupsResponse:
        async with self._db.read() as s:
            page = await pages.groups_page(
                s,
                current_principal(),
                request.tenant_id,
                api_key_attachable=request.api_key_attachable,
                size=request.page.page_size,
                token=request.page.page_token,
            )
        return pb.ListGroupsResponse(groups=[convert.group(g) for g in page.items], next_page_token=page.next_token)

    async def list_group_members(self, request: pb.ListGroupMembersRequest, ctx: Ctx) -> pb.ListGroupMembersResponse:
        async with self._db.read() as s:
            page = await pages.group_members_page(
                s,
                current_principal(),
                request.tenant_id,
                request.group_id,
                size=request.page.page_size,
                token=request.page.page_token,
            )
        return pb.ListGroupMembersResponse(
            members=[convert.group_member(m) for m in page.items], next_page_token=page.next_token
        )

    async def list_tenant_members(self, request: pb.ListTenantMembersRequest, ctx: Ctx) -> pb.ListTenantMembersResponse:
        async with self._db.read() as s:
            page = await pages.tenant_members_page(
                s, current_principal(), request.tenant_id, size=request.page.page_size, token=request.page.page_token
            )
        return pb.ListTenantMembersResponse(
            members=[convert.tenant_member(m) for m in page.items], next_page_token=page.next_token
        )

    async def list_service_accounts(
        self, request: pb.ListServiceAccountsRequest, ctx: Ctx
    ) -> pb.ListServiceAccountsResponse:
        async with self._db.read() as s:
            page = await pages.service_accounts_page(
                s, current_principal(), request.tenant_id, size=request.page.page_size, token=request.page.page_token
            )
        return pb.ListServiceAccountsResponse(
            service_accounts=[convert.service_account(a) for a in page.items], next_page_token=page.next_token
        )
