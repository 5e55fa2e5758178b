"""/platform.modelmanager.v1.ModelDeploymentObservabilityService/* — rules in server.domain.observability (sources
in server.observability; metrics aggregate server.domain.usage)."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.modelmanager.v1 import model_deployment_observability_service_pb2 as pb
from gen.platform.modelmanager.v1.model_deployment_observability_service_connect import (
    ModelDeploymentObservabilityService,
)
from server.domain import observability
from server.domain.validation import require_nonempty
from server.services import Deps
from server.services.context import current_principal
from server.services.modelmanager import metrics
from server.services.modelmanager import observability_convert as convert

__all__ = ["ModelDeploymentObservabilityServiceHandler"]

Ctx = RequestContext[Any, Any]


class ModelDeploymentObservabilityServiceHandler(ModelDeploymentObservabilityService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db
        self._sources = deps.observability_sources()

    async def get_model_deployment_gpu_overview(
        self, request: pb.GetModelDeploymentGpuOverviewRequest, ctx: Ctx
    ) -> pb.GetModelDeploymentGpuOverviewResponse:
        async with self._db.read() as s:
            overview = await observability.gpu_overview(s, current_principal(), self._sources)
        return pb.GetModelDeploymentGpuOverviewResponse(
            nodes=[convert.gpu_node(n) for n in overview.nodes],
            deployments=[convert.deployment_gpus(d) for d in overview.deployments],
            metrics_source=convert.metrics_source(overview.source),
        )

    async def get_model_deployment_metrics(
        self, request: pb.GetModelDeploymentMetricsRequest, ctx: Ctx
    ) -> pb.GetModelDeploymentMetricsResponse:
        window = metrics.window_of(request.start_time, request.end_time)
        name = require_nonempty(request.deployment_name, "deployment_name")
        async with self._db.read() as s:
            seconds, points = await observability.deployment_metrics(
                s, current_principal(), name, window, metrics.step_of(request.step)
            )
        return pb.GetModelDeploymentMetricsResponse(
            time_range=metrics.time_range(window, seconds), metrics=metrics.deployment_metrics(points)
        )

    async def list_node_model_cache_usage(
        self, request: pb.ListNodeModelCacheUsageRequest, ctx: Ctx
    ) -> pb.ListNodeModelCacheUsageResponse:
        async with self._db.read() as s:
            nodes = await observability.cache_usage(s, current_principal(), self._sources)
        return pb.ListNodeModelCacheUsageResponse(nodes=[convert.node_cache(n) for n in nodes])
