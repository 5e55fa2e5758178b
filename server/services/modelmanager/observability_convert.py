"""GPU overview and model-cache domain values -> platform.modelmanager.v1 messages, nothing else.

Unknown figures are None in the domain and stay unset (absent on the wire) here, never 0.
"""

from __future__ import annotations

from gen.platform.modelmanager.v1 import model_deployment_observability_pb2 as pb
from server.domain import observability
from server.services.tenants.convert import enum

__all__ = ["deployment_gpus", "gpu_node", "metrics_source", "node_cache"]


def metrics_source(value: observability.MetricsSource) -> pb.GpuMetricsSource:
    return enum(pb.GpuMetricsSource, value)


def gpu_node(value: observability.GpuNode) -> pb.GpuNode:
    return pb.GpuNode(
        node_name=value.name,
        gpus=[
            pb.GpuDevice(
                id=g.id,
                uuid=g.uuid,
                model=g.model,
                total_vram_mib=g.total_vram_mib,
                used_vram_mib=g.used_vram_mib,
                free_vram_mib=g.free_vram_mib,
            )
            for g in value.gpus
        ],
    )


def deployment_gpus(value: observability.DeploymentGpus) -> pb.ModelDeploymentGpuSummary:
    return pb.ModelDeploymentGpuSummary(
        uid=value.uid,
        name=value.name,
        gpus=[
            pb.GpuUsage(node_name=u.node_name, gpu_id=u.gpu_id, gpu_uuid=u.gpu_uuid, used_vram_mib=u.used_vram_mib)
            for u in value.gpus
        ],
    )


def node_cache(value: observability.NodeCacheUsage) -> pb.NodeModelCacheUsage:
    return pb.NodeModelCacheUsage(
        node_name=value.node_name,
        cache_path=value.cache_path,
        capacity_bytes=value.capacity_bytes,
        used_bytes=value.used_bytes,
        available_bytes=value.available_bytes,
        models=[
            pb.CachedModelUsage(
                model_url=m.model_url,
                display_name=m.display_name,
                size_bytes=m.size_bytes,
                deployment_names=list(m.deployment_names),
            )
            for m in value.models
        ],
    )
