"""/platform.ragmanager.v1.RagService/* — rules in server.domain.rags; permissions through server.permissions."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.ragmanager.v1 import rag_service_pb2 as pb
from gen.platform.ragmanager.v1.rag_service_connect import RagService
from server.domain import rags
from server.domain.validation import require_nonempty
from server.permissions import ResourceKind
from server.services import Deps, resource_calls
from server.services.context import current_principal
from server.services.ragmanager import convert
from server.store.rag_index import chunk_index_for

__all__ = ["RagServiceHandler"]

Ctx = RequestContext[Any, Any]
KIND = ResourceKind.RAG


class RagServiceHandler(RagService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db
        self._base_url = deps.settings.gateway_public_url

    async def create_rag(self, request: pb.CreateRagRequest, ctx: Ctx) -> pb.CreateRagResponse:
        spec = convert.rag_spec(request.rag)
        async with self._db.transaction() as s:
            created = await rags.create(s, current_principal(), spec, tenant_id=request.tenant_id)
        return pb.CreateRagResponse(rag=convert.rag(created, self._base_url))

    async def create_platform_rag(self, request: pb.CreatePlatformRagRequest, ctx: Ctx) -> pb.CreatePlatformRagResponse:
        spec = convert.rag_spec(request.rag)
        async with self._db.transaction() as s:
            created = await rags.create(s, current_principal(), spec, tenant_id=None)
        return pb.CreatePlatformRagResponse(rag=convert.rag(created, self._base_url))

    async def get_rag(self, request: pb.GetRagRequest, ctx: Ctx) -> pb.GetRagResponse:
        async with self._db.read() as s:
            found = await rags.get(s, current_principal(), require_nonempty(request.id, "id"))
        return pb.GetRagResponse(rag=convert.rag(found, self._base_url))

    async def update_rag(self, request: pb.UpdateRagRequest, ctx: Ctx) -> pb.UpdateRagResponse:
        spec = convert.rag_spec(request.rag, clear_score_threshold=request.clear_score_threshold)
        async with self._db.transaction() as s:
            updated = await rags.update(s, current_principal(), spec)
        return pb.UpdateRagResponse(rag=convert.rag(updated, self._base_url))

    async def delete_rag(self, request: pb.DeleteRagRequest, ctx: Ctx) -> pb.DeleteRagResponse:
        async with self._db.transaction() as s:
            index = await chunk_index_for(self._db.engine)
            await rags.delete(s, current_principal(), index, require_nonempty(request.id, "id"))
        return pb.DeleteRagResponse()

    async def list_rags(self, request: pb.ListRagsRequest, ctx: Ctx) -> pb.ListRagsResponse:
        async with self._db.read() as s:
            found = await rags.list_readable(s, current_principal(), tenant_id=request.tenant_id)
        return pb.ListRagsResponse(rags=[convert.rag(r, self._base_url) for r in found])

    async def list_rag_permissions(
        self, request: pb.ListRagPermissionsRequest, ctx: Ctx
    ) -> pb.ListRagPermissionsResponse:
        found = await resource_calls.list_permissions(self._db, KIND, request, name_field="id")
        return pb.ListRagPermissionsResponse(permissions=found)

    async def add_rag_permission(self, request: pb.AddRagPermissionRequest, ctx: Ctx) -> pb.AddRagPermissionResponse:
        await resource_calls.add_permission(self._db, KIND, request, name_field="id")
        return pb.AddRagPermissionResponse()

    async def remove_rag_permission(
        self, request: pb.RemoveRagPermissionRequest, ctx: Ctx
    ) -> pb.RemoveRagPermissionResponse:
        await resource_calls.remove_permission(self._db, KIND, request, name_field="id")
        return pb.RemoveRagPermissionResponse()
