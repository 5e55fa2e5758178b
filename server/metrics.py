"""Prometheus metrics of both servers (prometheus-client), and their `/metrics` exposition.

Not to be confused with server.observability.prometheus, which READS a deployment's Prometheus.

Labels stay bounded: route templates and contract method names (never raw paths), HTTP methods from a fixed set,
status codes, registered model ids (anything else is "other"), fixed cache and topic names. Never key ids, tenant
strings or content.

The gateway runs several worker processes: its parent calls `use_multiprocess_dir` before forking, so every worker
writes its samples to files there (prometheus-client's multiprocess mode) and any worker answering a scrape reports
the sum over all of them; the parent calls `worker_exited` for a worker that ended (its live gauges are dropped,
its counters kept). The management server is one process and keeps its samples in memory.

Hot-path cost: callers keep the labelled child (`metric.labels(...)`) they record into, rather than paying the
labels() lookup on every call, and record through `BATCH` (server.metric_batch), which sums in plain dicts and
folds the sums into prometheus-client once a second and before this process answers a scrape.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
    values,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
from prometheus_client.registry import Collector
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from server import envoy_admin
from server.metric_batch import Batch
from server.settings import Settings

__all__ = [
    "BATCH",
    "CONTENT_TYPE",
    "FLUSH_SECONDS",
    "GATEWAY",
    "MANAGEMENT",
    "cache_counters",
    "enable",
    "exposition",
    "multiprocess_dir",
    "read_envoy_counters",
    "record_invalidation",
    "rpc_observer",
    "scrape_allowed",
    "use_multiprocess_dir",
    "watch_pool",
    "worker_exited",
]

CONTENT_TYPE = CONTENT_TYPE_LATEST
BATCH = Batch()
FLUSH_SECONDS = 1.0
MANAGEMENT = CollectorRegistry(auto_describe=True)
GATEWAY = CollectorRegistry(auto_describe=True)

# Shared by both servers: each registry reports them for its own process(es).
_CACHE_LOOKUPS = Counter(
    "switchboard_cache_lookups",
    "Lookups in per-process caches (API keys, model routes, network policies), by cache and hit/miss.",
    ["cache", "result"],
    registry=None,
)
_INVALIDATIONS = Counter(
    "switchboard_cache_invalidations_received",
    "Cache invalidation notices this process received, by topic.",
    ["topic"],
    registry=None,
)
_DB_IN_USE = Gauge(
    "switchboard_db_connections_in_use",
    "Database connections currently checked out of the pool.",
    ["pool"],
    registry=None,
    multiprocess_mode="livesum",
)
_DB_CHECKOUTS = Counter(
    "switchboard_db_connection_checkouts", "Connections checked out of the pool.", ["pool"], registry=None
)
for _registry in (MANAGEMENT, GATEWAY):
    for _metric in (_CACHE_LOOKUPS, _INVALIDATIONS, _DB_IN_USE, _DB_CHECKOUTS):
        _registry.register(_metric)

_RPC_DURATION = Histogram(
    "switchboard_management_request_duration_seconds",
    "Management API requests (Connect, gRPC, gRPC-Web and the probes) by contract method and status: the HTTP "
    "status, or for a gRPC error the HTTP status its code maps to. Its _count is the request count.",
    ["method", "status"],
    registry=MANAGEMENT,
)
_OTHER = "other"


class _EnvoyCounters(Collector):
    """The management server's counters that only Envoy keeps, as last read (`read_envoy_counters`)."""

    refused: int | None = None

    def collect(self) -> Iterator[Metric]:
        if self.refused is not None:
            family = CounterMetricFamily(
                "switchboard_management_connections_refused",
                "Client connections the management server closed unanswered, by reason (max_connections: it held "
                "SWITCHBOARD_MAX_CONNECTIONS open already).",
                labels=["reason"],
            )
            family.add_metric(["max_connections"], self.refused)
            yield family


_ENVOY = _EnvoyCounters()
MANAGEMENT.register(_ENVOY)


async def read_envoy_counters(address_file: Path) -> None:
    """Before a management scrape: Envoy's counters, from its admin API (left out while it does not answer)."""
    _ENVOY.refused = await asyncio.to_thread(envoy_admin.refused_connections, address_file)


_multiprocess_dir: Path | None = None


def rpc_observer(methods: frozenset[str]) -> Any:
    """observe(path, status, seconds) for the management server: `path` becomes the method label when it is one of
    the contract's `methods` (or a probe), else "other"; the labelled child is kept per (method, status)."""
    children: dict[tuple[str, int], Any] = {}
    known = methods | {"/healthz", "/livez", "/readyz", "/metrics"}
    record = BATCH.observe

    def observe(path: str, status: int, seconds: float) -> None:
        key = (path if path in known else _OTHER, status)
        child = children.get(key)
        if child is None:
            child = children[key] = _RPC_DURATION.labels(key[0], str(status))
        record(child, seconds)

    return observe


_enabled = False


def enable() -> None:
    """Record metrics in this process (the servers call it when SWITCHBOARD_METRICS_ENABLED is on, the default)."""
    global _enabled  # noqa: PLW0603 - one switch per process, like the registries
    _enabled = True


def cache_counters(cache: str) -> tuple[Any, Any] | None:
    """The (hit, miss) counters of one named cache, bound once by the cache; None while metrics are off."""
    if not _enabled:
        return None
    return _CACHE_LOOKUPS.labels(cache, "hit"), _CACHE_LOOKUPS.labels(cache, "miss")


def record_invalidation(topic: str) -> None:
    """Count one invalidation notice received (`topic`: a fixed name such as "api_keys", never an id)."""
    _INVALIDATIONS.labels(topic).inc()


def watch_pool(engine: AsyncEngine, pool: str = "main") -> None:
    """Count the engine's pooled connections in use, through the pool's checkout/checkin events."""
    in_use = _DB_IN_USE.labels(pool)
    checkouts = _DB_CHECKOUTS.labels(pool)

    add = BATCH.add

    def on_checkout(*_: Any) -> None:
        add(in_use)
        add(checkouts)

    def on_checkin(*_: Any) -> None:
        add(in_use, -1.0)

    event.listen(engine.sync_engine.pool, "checkout", on_checkout)
    event.listen(engine.sync_engine.pool, "checkin", on_checkin)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def use_multiprocess_dir(base: Path) -> Path:
    """Before forking workers: switch to multiprocess mode in a directory of this process's own under `base`
    (several gateways may share a var dir), removing the directories of gateways that are no longer running.

    prometheus-client picks the multiprocess value class at import time from PROMETHEUS_MULTIPROC_DIR; metrics here
    are all labelled, so their values are made later, per child, and switching the class now covers them all.
    """
    global _multiprocess_dir  # noqa: PLW0603 - one mode per process, set once before forking
    base.mkdir(parents=True, exist_ok=True)
    for stale in base.glob("gateway-*"):
        pid = stale.name.removeprefix("gateway-")
        if pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    path = base / f"gateway-{os.getpid()}"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir()
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(path)  # read by prometheus-client when a value's file is opened
    values.ValueClass = values.MultiProcessValue()  # type: ignore[no-untyped-call]
    _multiprocess_dir = path
    return path


def multiprocess_dir() -> Path | None:
    return _multiprocess_dir


def worker_exited(pid: int) -> None:
    if _multiprocess_dir is not None:
        with contextlib.suppress(OSError):
            mark_process_dead(pid, str(_multiprocess_dir))  # type: ignore[no-untyped-call]


def _render(registry: CollectorRegistry) -> bytes:
    if _multiprocess_dir is None:
        return generate_latest(registry)
    merged = CollectorRegistry()
    MultiProcessCollector(merged, path=str(_multiprocess_dir))  # type: ignore[no-untyped-call]
    return generate_latest(merged)


async def exposition(registry: CollectorRegistry) -> bytes:
    """The registry in Prometheus text format (this process's batch folded in first); in multiprocess mode, every
    worker's samples, read off the loop."""
    BATCH.flush()
    if _multiprocess_dir is None:
        return _render(registry)
    return await asyncio.to_thread(_render, registry)


def scrape_allowed(settings: Settings, authorization: str | None) -> bool:
    """Whether a scrape may read /metrics: always without a configured token, else only with it as bearer."""
    token = settings.metrics_token.reveal()
    if not token:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())
