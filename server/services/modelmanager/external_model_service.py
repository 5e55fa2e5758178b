"""/platform.modelmanager.v1.ExternalModelService/* — rules in server.domain.external_models (metrics aggregate
server.domain.usage)."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.modelmanager.v1 import external_model_service_pb2 as pb
from gen.platform.modelmanager.v1.external_model_service_connect import ExternalModelService
from server.domain import external_models
from server.domain.validation import require_nonempty
from server.permissions import ResourceKind
from server.services import Deps, resource_calls
from server.services.context import current_principal
from server.services.modelmanager import convert, metrics

__all__ = ["ExternalModelServiceHandler"]

Ctx = RequestContext[Any, Any]
KIND = ResourceKind.EXTERNAL_MODEL


class ExternalModelServiceHandler(ExternalModelService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db
        self._box = deps.secret_box()
        self._check = deps.egress_guard().check_endpoint

    async def create_external_model(
        self, request: pb.CreateExternalModelRequest, ctx: Ctx
    ) -> pb.CreateExternalModelResponse:
        spec = convert.external_model_spec(request.external_model)
        async with self._db.transaction() as s:
            created = await external_models.create(
                s, current_principal(), spec, self._box, tenant_id=None, check=self._check
            )
        return pb.CreateExternalModelResponse(external_model=convert.external_model(created))

    async def create_tenant_external_model(
        self, request: pb.CreateTenantExternalModelRequest, ctx: Ctx
    ) -> pb.CreateTenantExternalModelResponse:
        spec = convert.external_model_spec(request.external_model)
        async with self._db.transaction() as s:
            created = await external_models.create(
                s, current_principal(), spec, self._box, tenant_id=request.tenant_id, check=self._check
            )
        return pb.CreateTenantExternalModelResponse(external_model=convert.external_model(created))

    async def get_external_model(self, request: pb.GetExternalModelRequest, ctx: Ctx) -> pb.GetExternalModelResponse:
        async with self._db.transaction() as s:
            found = await external_models.get(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.GetExternalModelResponse(external_model=convert.external_model(found))

    async def get_external_model_metrics(
        self, request: pb.GetExternalModelMetricsRequest, ctx: Ctx
    ) -> pb.GetExternalModelMetricsResponse:
        window = metrics.window_of(request.start_time, request.end_time)
        name = require_nonempty(request.name, "name")
        async with self._db.read() as s:
            seconds, points = await external_models.metrics(
                s, current_principal(), name, window, metrics.step_of(request.step)
            )
        return pb.GetExternalModelMetricsResponse(
            time_range=metrics.time_range(window, seconds), metrics=metrics.token_metrics(points)
        )

    async def update_external_model(
        self, request: pb.UpdateExternalModelRequest, ctx: Ctx
    ) -> pb.UpdateExternalModelResponse:
        spec = convert.external_model_spec(request.external_model)
        require_nonempty(spec.name, "external_model.name")
        async with self._db.transaction() as s:
            updated = await external_models.update(s, current_principal(), spec, self._box, check=self._check)
        return pb.UpdateExternalModelResponse(external_model=convert.external_model(updated))

    async def update_external_model_sharing(
        self, request: pb.UpdateExternalModelSharingRequest, ctx: Ctx
    ) -> pb.UpdateExternalModelSharingResponse:
        return pb.UpdateExternalModelSharingResponse(
            sharing=await resource_calls.update_sharing(self._db, KIND, request)
        )

    async def delete_external_model(
        self, request: pb.DeleteExternalModelRequest, ctx: Ctx
    ) -> pb.DeleteExternalModelResponse:
        async with self._db.transaction() as s:
            await external_models.delete(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.DeleteExternalModelResponse()

    async def list_external_models(
        self, request: pb.ListExternalModelsRequest, ctx: Ctx
    ) -> pb.ListExternalModelsResponse:
        async with self._db.transaction() as s:
            found = await external_models.list_readable(s, current_principal())
        return pb.ListExternalModelsResponse(external_models=[convert.external_model_summary(m) for m in found])

    async def list_external_model_permissions(
        self, request: pb.ListExternalModelPermissionsRequest, ctx: Ctx
    ) -> pb.ListExternalModelPermissionsResponse:
        found = await resource_calls.list_permissions(self._db, KIND, request)
        return pb.ListExternalModelPermissionsResponse(permissions=found)

    async def add_external_model_permission(
        self, request: pb.AddExternalModelPermissionRequest, ctx: Ctx
    ) -> pb.AddExternalModelPermissionResponse:
        await resource_calls.add_permission(self._db, KIND, request)
        return pb.AddExternalModelPermissionResponse()

    async def remove_external_model_permission(
        self, request: pb.RemoveExternalModelPermissionRequest, ctx: Ctx
    ) -> pb.RemoveExternalModelPermissionResponse:
        await resource_calls.remove_permission(self._db, KIND, request)
        return pb.RemoveExternalModelPermissionResponse()
