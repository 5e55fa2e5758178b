"""/platform.ragmanager.v1.RagQuotaService/* — rules and gates in server.domain.rag_quotas."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.ragmanager.v1 import rag_quota_pb2
from gen.platform.ragmanager.v1 import rag_quota_service_pb2 as pb
from gen.platform.ragmanager.v1.rag_quota_service_connect import RagQuotaService
from server.domain import rag_quotas
from server.domain.rag_quotas import Quota, ServiceUsage
from server.services import Deps
from server.services.context import current_principal

__all__ = ["RagQuotaServiceHandler"]

Ctx = RequestContext[Any, Any]


def _bytes(quota: Quota | None) -> int | None:
    return quota.bytes if quota is not None else None


def _text(quota: Quota | None) -> str | None:
    return quota.text if quota is not None else None


def _service(value: ServiceUsage) -> rag_quota_pb2.ServiceUsage:
    return rag_quota_pb2.ServiceUsage(
        id=value.id,
        tenant_id=value.tenant_id,
        quota_bytes=_bytes(value.quota),
        used_bytes=value.used_bytes,
        quota=_text(value.quota),
    )


class RagQuotaServiceHandler(RagQuotaService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def _set(self, tenant_id: str, ids: list[str], quota: str | None, ids_field: str) -> None:
        async with self._db.transaction() as s:
            await rag_quotas.set_quotas(
                s, current_principal(), tenant_id=tenant_id, ids=ids, quota=quota, ids_field=ids_field
            )

    async def set_quota(self, request: pb.SetQuotaRequest, ctx: Ctx) -> pb.SetQuotaResponse:
        await self._set(request.tenant_id, [request.id], request.quota, "id")
        return pb.SetQuotaResponse()

    async def unset_quota(self, request: pb.UnsetQuotaRequest, ctx: Ctx) -> pb.UnsetQuotaResponse:
        await self._set(request.tenant_id, [request.id], None, "id")
        return pb.UnsetQuotaResponse()

    async def batch_set_quota(self, request: pb.BatchSetQuotaRequest, ctx: Ctx) -> pb.BatchSetQuotaResponse:
        await self._set(request.tenant_id, list(request.ids), request.quota, "ids")
        return pb.BatchSetQuotaResponse()

    async def batch_unset_quota(self, request: pb.BatchUnsetQuotaRequest, ctx: Ctx) -> pb.BatchUnsetQuotaResponse:
        await self._set(request.tenant_id, list(request.ids), None, "ids")
        return pb.BatchUnsetQuotaResponse()

    async def get_quota(self, request: pb.GetQuotaRequest, ctx: Ctx) -> pb.GetQuotaResponse:
        async with self._db.read() as s:
            found = await rag_quotas.get_quota(s, current_principal(), tenant_id=request.tenant_id, rag_id=request.id)
        return pb.GetQuotaResponse(
            id=found.id,
            tenant_id=found.tenant_id,
            quota_bytes=_bytes(found.quota),
            used_bytes=found.used_bytes,
            quota=_text(found.quota),
        )

    async def set_tenant_quota(self, request: pb.SetTenantQuotaRequest, ctx: Ctx) -> pb.SetTenantQuotaResponse:
        async with self._db.transaction() as s:
            await rag_quotas.set_tenant_quota(s, current_principal(), tenant_id=request.tenant_id, quota=request.quota)
        return pb.SetTenantQuotaResponse()

    async def unset_tenant_quota(self, request: pb.UnsetTenantQuotaRequest, ctx: Ctx) -> pb.UnsetTenantQuotaResponse:
        async with self._db.transaction() as s:
            await rag_quotas.set_tenant_quota(s, current_principal(), tenant_id=request.tenant_id, quota=None)
        return pb.UnsetTenantQuotaResponse()

    async def get_tenant_quota(self, request: pb.GetTenantQuotaRequest, ctx: Ctx) -> pb.GetTenantQuotaResponse:
        async with self._db.read() as s:
            tenant_id, quota = await rag_quotas.tenant_quota(s, current_principal(), tenant_id=request.tenant_id)
        return pb.GetTenantQuotaResponse(tenant_id=tenant_id, quota_bytes=_bytes(quota), quota=_text(quota))

    async def set_default_quota(self, request: pb.SetDefaultQuotaRequest, ctx: Ctx) -> pb.SetDefaultQuotaResponse:
        async with self._db.transaction() as s:
            await rag_quotas.set_default_quota(
                s, current_principal(), tenant_id=request.tenant_id, quota=request.default_quota
            )
        return pb.SetDefaultQuotaResponse()

    async def unset_default_quota(self, request: pb.UnsetDefaultQuotaRequest, ctx: Ctx) -> pb.UnsetDefaultQuotaResponse:
        async with self._db.transaction() as s:
            await rag_quotas.set_default_quota(s, current_principal(), tenant_id=request.tenant_id, quota=None)
        return pb.UnsetDefaultQuotaResponse()

    async def get_default_quota(self, request: pb.GetDefaultQuotaRequest, ctx: Ctx) -> pb.GetDefaultQuotaResponse:
        async with self._db.read() as s:
            tenant_id, quota = await rag_quotas.default_quota(s, current_principal(), tenant_id=request.tenant_id)
        return pb.GetDefaultQuotaResponse(
            tenant_id=tenant_id, default_quota_bytes=_bytes(quota), default_quota=_text(quota)
        )

    async def get_tenant_usage(self, request: pb.GetTenantUsageRequest, ctx: Ctx) -> pb.GetTenantUsageResponse:
        async with self._db.read() as s:
            usage = await rag_quotas.tenant_usage(s, current_principal(), tenant_id=request.tenant_id)
        return pb.GetTenantUsageResponse(
            services=[_service(u) for u in usage.services],
            tenant_quota_bytes=_bytes(usage.tenant_quota),
            tenant_total_used_bytes=usage.total_used_bytes,
            tenant_quota=_text(usage.tenant_quota),
        )

    async def list_tenants_usage(self, request: pb.ListTenantsUsageRequest, ctx: Ctx) -> pb.ListTenantsUsageResponse:
        async with self._db.read() as s:
            found = await rag_quotas.tenants_usage(s, current_principal())
        return pb.ListTenantsUsageResponse(
            tenants=[
                rag_quota_pb2.TenantUsageSummary(
                    tenant_id=t.tenant_id,
                    tenant_name=t.tenant_name,
                    service_count=t.service_count,
                    total_used_bytes=t.total_used_bytes,
                    tenant_quota_bytes=_bytes(t.tenant_quota),
                    tenant_quota=_text(t.tenant_quota),
                )
                for t in found
            ]
        )
