"""/platform.modelmanager.v1.ModelDeploymentService/* — rules in server.domain.model_deployments."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.modelmanager.v1 import model_deployment_service_pb2 as pb
from gen.platform.modelmanager.v1.model_deployment_service_connect import ModelDeploymentService
from server.domain import model_deployments
from server.domain.validation import require_nonempty
from server.permissions import ResourceKind
from server.services import Deps, resource_calls
from server.services.context import current_principal
from server.services.modelmanager import convert

__all__ = ["ModelDeploymentServiceHandler"]

Ctx = RequestContext[Any, Any]
KIND = ResourceKind.MODEL_DEPLOYMENT


class ModelDeploymentServiceHandler(ModelDeploymentService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db
        self._check = deps.egress_guard().check_endpoint

    async def create_model_deployment(
        self, request: pb.CreateModelDeploymentRequest, ctx: Ctx
    ) -> pb.CreateModelDeploymentResponse:
        spec = convert.deployment_spec(request.model_deployment)
        async with self._db.transaction() as s:
            created = await model_deployments.create(s, current_principal(), spec, check=self._check)
        return pb.CreateModelDeploymentResponse(model_deployment=convert.deployment(created))

    async def get_model_deployment(
        self, request: pb.GetModelDeploymentRequest, ctx: Ctx
    ) -> pb.GetModelDeploymentResponse:
        async with self._db.transaction() as s:
            found = await model_deployments.get(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.GetModelDeploymentResponse(model_deployment=convert.deployment(found))

    async def update_model_deployment(
        self, request: pb.UpdateModelDeploymentRequest, ctx: Ctx
    ) -> pb.UpdateModelDeploymentResponse:
        spec = convert.deployment_spec(request.model_deployment)
        require_nonempty(spec.name, "model_deployment.name")
        async with self._db.transaction() as s:
            updated = await model_deployments.update(s, current_principal(), spec, check=self._check)
        return pb.UpdateModelDeploymentResponse(model_deployment=convert.deployment(updated))

    async def delete_model_deployment(
        self, request: pb.DeleteModelDeploymentRequest, ctx: Ctx
    ) -> pb.DeleteModelDeploymentResponse:
        async with self._db.transaction() as s:
            await model_deployments.delete(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.DeleteModelDeploymentResponse()

    async def list_model_deployments(
        self, request: pb.ListModelDeploymentsRequest, ctx: Ctx
    ) -> pb.ListModelDeploymentsResponse:
        async with self._db.transaction() as s:
            found = await model_deployments.list_readable(s, current_principal())
        return pb.ListModelDeploymentsResponse(model_deployments=[convert.deployment(d) for d in found])

    async def list_model_deployment_permissions(
        self, request: pb.ListModelDeploymentPermissionsRequest, ctx: Ctx
    ) -> pb.ListModelDeploymentPermissionsResponse:
        found = await resource_calls.list_permissions(self._db, KIND, request)
        return pb.ListModelDeploymentPermissionsResponse(permissions=found)

    async def add_model_deployment_permission(
        self, request: pb.AddModelDeploymentPermissionRequest, ctx: Ctx
    ) -> pb.AddModelDeploymentPermissionResponse:
        await resource_calls.add_permission(self._db, KIND, request)
        return pb.AddModelDeploymentPermissionResponse()

    async def remove_model_deployment_permission(
        self, request: pb.RemoveModelDeploymentPermissionRequest, ctx: Ctx
    ) -> pb.RemoveModelDeploymentPermissionResponse:
        await resource_calls.remove_permission(self._db, KIND, request)
        return pb.RemoveModelDeploymentPermissionResponse()

    async def update_model_deployment_sharing(
        self, request: pb.UpdateModelDeploymentSharingRequest, ctx: Ctx
    ) -> pb.UpdateModelDeploymentSharingResponse:
        return pb.UpdateModelDeploymentSharingResponse(
            sharing=await resource_calls.update_sharing(self._db, KIND, request)
        )
