"""Model-deployment observability: the GPU overview, node model-cache usage and one deployment's metrics.

Gates: the overview and the cache listing are platform reads (can_manage_models: deployments are platform-scoped
and managed with it); a deployment's metrics need can_admin on the deployment (its traffic spans every tenant it is
shared with), like an external model's.

GPU figures and where they come from (`MetricsSource`, numbers match GpuMetricsSource):
- NODE_LABELS: no live source configured. Nodes and capacity come from the inventory; used/free VRAM are None.
- LIVE: the live source answered. Inventory nodes and GPUs come first, in inventory order, with used/free set where
  the GPU reports (matched by node and UUID, else node and device id); GPUs the live source reports that the
  inventory lacks are added (total = used + free). Deployments carry their usage.
- LIVE_UNAVAILABLE: the live source is configured but could not be read. As NODE_LABELS, and deployments carry no
  usage.
Every model deployment is listed; only LIVE fills its gpus (elsewhere empty means unknown, not unused).

Deployment <-> GPU: a GPU reading belongs to deployment D when its pod name is D or starts with "D-" (the names
Kubernetes gives a Deployment's or StatefulSet's pods); when several deployment names fit, the longest wins.

Cached models: the inventory lists each node's cache root and the models in it; a deployment references a cached
model when its model_url equals the model's url exactly. Filesystem totals come from the live source's reading of
the filesystem holding the cache root (the longest mountpoint that is an ancestor of it); absent otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from enum import IntEnum
from pathlib import PurePosixPath

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain import usage
from server.domain.principal import Principal
from server.errors import NotFound
from server.observability.sources import FilesystemReading, GpuReading, InventoryNode, MetricsUnavailable, Sources
from server.permissions import ResourceKind, ResourceRef
from server.store.models import ModelDeploymentRow

__all__ = [
    "CachedModelUsage",
    "DeploymentGpus",
    "GpuDevice",
    "GpuNode",
    "GpuOverview",
    "GpuUsage",
    "MetricsSource",
    "NodeCacheUsage",
    "cache_usage",
    "deployment_metrics",
    "gpu_overview",
]

_ROLE = "can_manage_models"


class MetricsSource(IntEnum):
    LIVE = 1
    NODE_LABELS = 2
    LIVE_UNAVAILABLE = 3


@dataclass(frozen=True)
class GpuDevice:
    id: str
    uuid: str
    model: str
    total_vram_mib: int
    used_vram_mib: int | None = None
    free_vram_mib: int | None = None


@dataclass(frozen=True)
class GpuNode:
    name: str
    gpus: tuple[GpuDevice, ...]


@dataclass(frozen=True)
class GpuUsage:
    node_name: str
    gpu_id: str
    gpu_uuid: str
    used_vram_mib: int


@dataclass(frozen=True)
class DeploymentGpus:
    uid: str
    name: str
    gpus: tuple[GpuUsage, ...] = ()


@dataclass(frozen=True)
class GpuOverview:
    nodes: list[GpuNode]
    deployments: list[DeploymentGpus]
    source: MetricsSource


@dataclass(frozen=True)
class CachedModelUsage:
    model_url: str
    display_name: str
    size_bytes: int | None
    deployment_names: tuple[str, ...]


@dataclass(frozen=True)
class NodeCacheUsage:
    node_name: str
    cache_path: str
    capacity_bytes: int | None
    used_bytes: int | None
    available_bytes: int | None
    models: tuple[CachedModelUsage, ...]


# --- GPU overview -----------------------------------------------------------------------------------------------


async def gpu_overview(session: AsyncSession, principal: Principal, sources: Sources) -> GpuOverview:
    """Live figures are fetched before the database is touched, so no connection is held while Prometheus is asked."""
    permissions.require_platform_scope(principal, _ROLE)
    inventory = await sources.inventory.nodes()
    readings: list[GpuReading] | None = None
    source = MetricsSource.NODE_LABELS
    if sources.live is not None:
        try:
            readings, source = await sources.live.gpus(), MetricsSource.LIVE
        except MetricsUnavailable:
            source = MetricsSource.LIVE_UNAVAILABLE
    found = await session.execute(select(ModelDeploymentRow.uid, ModelDeploymentRow.name).order_by("name"))
    deployments = [(str(uid), str(name)) for uid, name in found]
    if readings is None:
        return GpuOverview(_inventory_nodes(inventory), [DeploymentGpus(u, n) for u, n in deployments], source)
    return GpuOverview(_live_nodes(inventory, readings), _deployment_usage(deployments, readings), source)


def _inventory_nodes(inventory: list[InventoryNode]) -> list[GpuNode]:
    return [
        GpuNode(node.name, tuple(GpuDevice(g.id, g.uuid, g.model, g.total_vram_mib) for g in node.gpus))
        for node in inventory
    ]


def _device_readings(readings: list[GpuReading]) -> dict[tuple[str, str, str], GpuReading]:
    """(node, "uuid"|"id", value) -> the first reading of that GPU with figures (a GPU shared by several pods
    reports once per pod, each time the whole device)."""
    out: dict[tuple[str, str, str], GpuReading] = {}
    for reading in readings:
        for key in ((reading.node, "uuid", reading.uuid), (reading.node, "id", reading.gpu_id)):
            if key[2] and (key not in out or out[key].used_mib is None):
                out[key] = reading
    return out


def _live_nodes(inventory: list[InventoryNode], readings: list[GpuReading]) -> list[GpuNode]:
    by_key = _device_readings(readings)
    listed: set[tuple[str, str, str]] = set()
    nodes: dict[str, list[GpuDevice]] = {}
    for node in inventory:
        devices = nodes.setdefault(node.name, [])
        for gpu in node.gpus:
            keys = [(node.name, "uuid", gpu.uuid)] if gpu.uuid else []
            keys.append((node.name, "id", gpu.id))
            listed.update(keys)
            reading = next((by_key[k] for k in keys if k in by_key), None)
            used, free = (reading.used_mib, reading.free_mib) if reading else (None, None)
            devices.append(GpuDevice(gpu.id, gpu.uuid, gpu.model, gpu.total_vram_mib, used, free))
    extra: dict[str, dict[str, GpuDevice]] = {}
    for reading in by_key.values():  # GPUs the inventory does not list: live metrics name nodes and capacity too
        if {(reading.node, "uuid", reading.uuid), (reading.node, "id", reading.gpu_id)} & listed:
            continue
        used, free = reading.used_mib, reading.free_mib
        total = used + free if used is not None and free is not None else 0
        device = GpuDevice(reading.gpu_id, reading.uuid, reading.model, total, used, free)
        extra.setdefault(reading.node, {}).setdefault(reading.uuid or reading.gpu_id, device)
    for name in sorted(extra):
        nodes.setdefault(name, []).extend(sorted(extra[name].values(), key=lambda d: (_index_key(d.id), d.uuid)))
    return [GpuNode(name, tuple(devices)) for name, devices in nodes.items()]


def _index_key(gpu_id: str) -> tuple[int, str]:
    return (int(gpu_id), "") if gpu_id.isdigit() else (1 << 30, gpu_id)


def _owner(pod: str, names: set[str]) -> str | None:
    """The deployment a pod belongs to: the longest name that is the pod name or a '-'-separated prefix of it."""
    parts = pod.split("-")
    for end in range(len(parts), 0, -1):
        candidate = "-".join(parts[:end])
        if candidate in names:
            return candidate
    return None


def _deployment_usage(deployments: list[tuple[str, str]], readings: list[GpuReading]) -> list[DeploymentGpus]:
    names = {name for _, name in deployments}
    usage_of: dict[str, dict[tuple[str, str, str], GpuUsage]] = {}
    for reading in readings:
        owner = _owner(reading.pod, names) if reading.pod else None
        if owner is None or reading.used_mib is None:
            continue
        key = (reading.node, reading.gpu_id, reading.uuid)
        usage_of.setdefault(owner, {}).setdefault(key, GpuUsage(*key, reading.used_mib))
    return [
        DeploymentGpus(uid, name, tuple(sorted(usage_of.get(name, {}).values(), key=_usage_order)))
        for uid, name in deployments
    ]


def _usage_order(value: GpuUsage) -> tuple[str, tuple[int, str], str]:
    return (value.node_name, _index_key(value.gpu_id), value.gpu_uuid)


# --- Node model-cache usage -------------------------------------------------------------------------------------


async def cache_usage(session: AsyncSession, principal: Principal, sources: Sources) -> list[NodeCacheUsage]:
    permissions.require_platform_scope(principal, _ROLE)
    nodes = [node for node in await sources.inventory.nodes() if node.cache_path]
    readings: list[FilesystemReading] = []
    if sources.live is not None and nodes:
        try:
            readings = await sources.live.filesystems(sorted({node.cache_path for node in nodes}))
        except MetricsUnavailable:
            readings = []  # best effort: the totals stay absent
    urls = {model.url for node in nodes for model in node.cached_models}
    referencing: dict[str, list[str]] = {}
    if urls:
        found = await session.execute(
            select(ModelDeploymentRow.model_url, ModelDeploymentRow.name).where(ModelDeploymentRow.model_url.in_(urls))
        )
        for url, name in found:
            referencing.setdefault(url, []).append(name)
    return [_node_cache(node, readings, referencing) for node in nodes]


def _is_within(path: str, mountpoint: str) -> bool:
    return PurePosixPath(path).is_relative_to(PurePosixPath(mountpoint))


def _filesystem_of(node: InventoryNode, readings: Iterable[FilesystemReading]) -> FilesystemReading | None:
    hosts = {node.name, node.instance} - {""}
    candidates = [r for r in readings if r.host in hosts and _is_within(node.cache_path, r.mountpoint)]
    return max(candidates, key=lambda r: len(PurePosixPath(r.mountpoint).parts), default=None)


def _node_cache(
    node: InventoryNode, readings: list[FilesystemReading], referencing: dict[str, list[str]]
) -> NodeCacheUsage:
    fs = _filesystem_of(node, readings)
    size, free, avail = (fs.size_bytes, fs.free_bytes, fs.avail_bytes) if fs else (None, None, None)
    used = size - free if size is not None and free is not None else None
    models = tuple(
        CachedModelUsage(m.url, m.display_name, m.size_bytes, tuple(sorted(referencing.get(m.url, ()))))
        for m in node.cached_models
    )
    return NodeCacheUsage(node.name, node.cache_path, size, used, avail, models)


# --- Deployment metrics -----------------------------------------------------------------------------------------


async def deployment_metrics(
    session: AsyncSession, principal: Principal, name: str, window: usage.Window, step: timedelta | None
) -> tuple[int, list[tuple[usage.Bucket, usage.CallStats]]]:
    """Requests, errors, latency percentiles and tokens per step of the calls that reached the deployment (directly
    or through an alias), from the gateway's own metering."""
    ref = ResourceRef(ResourceKind.MODEL_DEPLOYMENT, name)
    await permissions.require_admin(session, principal, ref)
    if await session.get(ModelDeploymentRow, name) is None:
        raise NotFound(f"model deployment {name!r} not found", field="deployment_name")
    return await usage.target_call_series(session, ref, window, step)
