"""What the observability reads need from the outside world, as plain values and two small interfaces.

`NodeInventory` answers which GPU nodes exist, with their GPUs and model caches (a static file today; a Kubernetes
node-label source would implement the same interface). `LiveMetrics` answers what the GPUs and cache filesystems
report right now (Prometheus today); it raises `MetricsUnavailable` when it is configured but cannot be read.
Unknown figures are `None`, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = [
    "CachedModel",
    "FilesystemReading",
    "GpuReading",
    "InventoryGpu",
    "InventoryNode",
    "LiveMetrics",
    "MetricsUnavailable",
    "NodeInventory",
    "Sources",
]


@dataclass(frozen=True)
class InventoryGpu:
    id: str
    uuid: str
    model: str
    total_vram_mib: int


@dataclass(frozen=True)
class CachedModel:
    url: str
    display_name: str
    size_bytes: int | None = None


@dataclass(frozen=True)
class InventoryNode:
    name: str
    gpus: tuple[InventoryGpu, ...] = ()
    cache_path: str = ""  # empty: the node holds no model-weight cache
    cached_models: tuple[CachedModel, ...] = ()
    instance: str = ""  # how node-exporter's `instance` label names the node (host, no port); empty: the name


@dataclass(frozen=True)
class GpuReading:
    """One GPU as the live source reports it; `pod`/`namespace` name the workload it is allocated to, if any."""

    node: str
    gpu_id: str
    uuid: str
    model: str
    used_mib: int | None
    free_mib: int | None
    pod: str = ""
    namespace: str = ""


@dataclass(frozen=True)
class FilesystemReading:
    """The filesystem mounted at `mountpoint` on one node. `host` is how the series names the node: its `node`
    label when relabelling added one, else its `instance` without the port."""

    host: str
    mountpoint: str
    size_bytes: int | None = None
    free_bytes: int | None = None
    avail_bytes: int | None = None


class MetricsUnavailable(Exception):
    """The live source is configured but could not be read (down, timed out, or answered nonsense)."""


class NodeInventory(Protocol):
    async def nodes(self) -> list[InventoryNode]: ...


class LiveMetrics(Protocol):
    async def gpus(self) -> list[GpuReading]: ...

    async def filesystems(self, paths: list[str]) -> list[FilesystemReading]:
        """Readings of every filesystem that may hold one of `paths` (their mountpoint is one of its ancestors)."""
        ...


@dataclass(frozen=True)
class Sources:
    inventory: NodeInventory
    live: LiveMetrics | None  # None: no monitoring stack configured
