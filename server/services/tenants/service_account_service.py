"""/platform.tenants.v1.ServiceAccountService/* — rules in server.domain.service_accounts."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.tenants.v1 import service_account_service_pb2 as pb
from gen.platform.tenants.v1.service_account_service_connect import ServiceAccountService
from server.domain import service_accounts
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants import convert

__all__ = ["ServiceAccountServiceHandler"]

Ctx = RequestContext[Any, Any]


class ServiceAccountServiceHandler(ServiceAccountService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_service_account(
        self, request: pb.CreateServiceAccountRequest, ctx: Ctx
    ) -> pb.CreateServiceAccountResponse:
        async with self._db.transaction() as s:
            account = await service_accounts.create(
                s, current_principal(), request.tenant_id, request.name, request.description
            )
        return pb.CreateServiceAccountResponse(service_account=convert.service_account(account))

    async def get_service_account(self, request: pb.GetServiceAccountRequest, ctx: Ctx) -> pb.GetServiceAccountResponse:
        async with self._db.transaction() as s:
            account = await service_accounts.get(s, current_principal(), request.tenant_id, request.service_account_id)
        return pb.GetServiceAccountResponse(service_account=convert.service_account(account))

    async def list_service_accounts(
        self, request: pb.ListServiceAccountsRequest, ctx: Ctx
    ) -> pb.ListServiceAccountsResponse:
        async with self._db.transaction() as s:
            accounts = await service_accounts.list_all(s, current_principal(), request.tenant_id)
        return pb.ListServiceAccountsResponse(service_accounts=[convert.service_account(a) for a in accounts])

    async def update_service_account(
        self, request: pb.UpdateServiceAccountRequest, ctx: Ctx
    ) -> pb.UpdateServiceAccountResponse:
        description = request.description if request.HasField("description") else None
        async with self._db.transaction() as s:
            account = await service_accounts.update(
                s, current_principal(), request.tenant_id, request.service_account_id, description
            )
        return pb.UpdateServiceAccountResponse(service_account=convert.service_account(account))

    async def delete_service_account(
        self, request: pb.DeleteServiceAccountRequest, ctx: Ctx
    ) -> pb.DeleteServiceAccountResponse:
        async with self._db.transaction() as s:
            await service_accounts.delete(s, current_principal(), request.tenant_id, request.service_account_id)
        return pb.DeleteServiceAccountResponse()
