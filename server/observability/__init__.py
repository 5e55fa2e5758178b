"""Pluggable sources for the model-deployment observability reads (GPU overview, model-cache usage).

- Node inventory (`NodeInventory`): which GPU nodes exist, their GPUs (id, uuid, model, total VRAM) and their
  model-weight caches. Shipped: a static YAML/JSON file (`SWITCHBOARD_NODE_INVENTORY`, see `inventory`); without
  one there are no nodes. A Kubernetes node-label source would implement the same one-method interface.
- Live metrics (`LiveMetrics`): what GPUs and cache filesystems report now. Shipped: a Prometheus HTTP API
  (`SWITCHBOARD_PROMETHEUS_URL`, see `prometheus`) with DCGM-exporter and node-exporter series; off by default.

No protobuf and no request handling here; `server.domain.observability` combines the sources into answers and
decides the GpuMetricsSource they report.
"""

from __future__ import annotations

from server.observability.sources import NodeInventory, Sources
from server.settings import Settings

__all__ = ["Sources", "sources_from"]


def sources_from(settings: Settings) -> Sources:
    """The configured sources (imported here, so importing the interfaces pulls in neither aiohttp nor YAML)."""
    from server.observability.inventory import EmptyInventory, FileInventory
    from server.observability.prometheus import PrometheusMetrics

    inventory: NodeInventory = FileInventory(settings.node_inventory) if settings.node_inventory else EmptyInventory()
    live = (
        PrometheusMetrics(
            settings.prometheus_url,
            timeout_seconds=settings.prometheus_timeout_seconds,
            cache_seconds=settings.prometheus_cache_seconds,
        )
        if settings.prometheus_url
        else None
    )
    return Sources(inventory, live)
