"""Live GPU and filesystem figures from a Prometheus HTTP API (`GET {SWITCHBOARD_PROMETHEUS_URL}/api/v1/query`).

Series read (instant vectors):

- DCGM exporter: `DCGM_FI_DEV_FB_USED` and `DCGM_FI_DEV_FB_FREE` (framebuffer MiB), labels `gpu` (device index),
  `UUID`, `modelName` and `Hostname` (dcgm-exporter sets it from its NODE_NAME environment variable, which its Helm
  chart fills with the node name; a relabelled `node` label, or `instance` without the port, is used when Hostname is
  missing). With Kubernetes mapping on (dcgm-exporter's default in Kubernetes), a GPU allocated to a pod also carries
  `pod`, `namespace` and `container`; scraped without honor_labels, Prometheus renames them `exported_pod` /
  `exported_namespace`, which are preferred when present. DCGM reports whole-device figures: a series with a pod
  label tells how much of the GPU's memory is in use while the GPU is allocated to that pod.
- node-exporter: `node_filesystem_size_bytes`, `node_filesystem_free_bytes` and `node_filesystem_avail_bytes`,
  restricted to the mountpoints that may hold a cache path (the path and each of its ancestors); the node is the
  series' `node` label when relabelling added one, else its `instance` without the port.

Each query is one HTTP request with a short timeout; answers (and failures) are kept `cache_seconds` per process,
loaded single-flight, so a dashboard polling every second costs Prometheus one query per replica per period, and an
unreachable Prometheus costs callers at most one timeout per period. A failure raises `MetricsUnavailable`: the
caller reports LIVE_UNAVAILABLE. The URL is never logged (it may carry credentials).
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

import aiohttp

from server.observability.sources import FilesystemReading, GpuReading, MetricsUnavailable
from server.ttlcache import TtlCache

__all__ = ["PrometheusMetrics", "host_of", "mount_ancestors"]

log = logging.getLogger("switchboard.observability")

Vector = list[tuple[dict[str, str], float | None]]
_GPU_QUERY = '{__name__=~"DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_FB_FREE"}'
_FS_METRICS = "node_filesystem_size_bytes|node_filesystem_free_bytes|node_filesystem_avail_bytes"


def host_of(instance: str) -> str:
    """`10.0.0.5:9100` -> `10.0.0.5`; `[fd00::1]:9100` -> `fd00::1`; a bare host stays as it is."""
    if instance.startswith("["):
        return instance[1:].split("]", 1)[0]
    if instance.count(":") == 1:
        return instance.split(":", 1)[0]
    return instance


def mount_ancestors(path: str) -> list[str]:
    """The mountpoints that could hold `path`: the path itself and every ancestor, `/` included."""
    pure = PurePosixPath(path)
    return [str(p) for p in (pure, *pure.parents)]


def _promql_regex(values: Iterable[str]) -> str:
    """An RE2 alternation matching exactly these strings, quoted for a PromQL double-quoted string."""
    pattern = "|".join(re.escape(v) for v in sorted(set(values)))
    return pattern.replace("\\", "\\\\").replace('"', '\\"')


def _number(raw: Any) -> float | None:
    try:
        value = float(raw[1])
    except (TypeError, ValueError, IndexError):
        return None
    return value if math.isfinite(value) else None


def _vector(body: Any) -> Vector:
    """The samples of a Prometheus instant-vector answer; anything else is a failure."""
    if not isinstance(body, dict) or body.get("status") != "success":
        raise MetricsUnavailable("Prometheus did not answer success")
    data = body.get("data")
    if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise MetricsUnavailable("Prometheus did not answer an instant vector")
    samples: Vector = []
    for item in data["result"]:
        metric = item.get("metric") if isinstance(item, dict) else None
        if isinstance(metric, dict):
            labels = {str(k): str(v) for k, v in metric.items()}
            samples.append((labels, _number(item.get("value"))))
    return samples


def _mib(value: float | None) -> int | None:
    return None if value is None else round(value)


def _gpu_readings(samples: Vector) -> list[GpuReading]:
    merged: dict[tuple[str, ...], dict[str, Any]] = {}
    for labels, value in samples:
        node = labels.get("Hostname") or labels.get("node") or host_of(labels.get("instance", ""))
        pod = labels.get("exported_pod") or labels.get("pod", "")
        namespace = (labels.get("exported_namespace") or labels.get("namespace", "")) if pod else ""
        key = (node, labels.get("gpu", ""), labels.get("UUID", ""), pod, namespace)
        entry = merged.setdefault(key, {"model": labels.get("modelName", "")})
        kind = "used" if labels.get("__name__") == "DCGM_FI_DEV_FB_USED" else "free"
        entry.setdefault(kind, value)
    return [
        GpuReading(
            node=node,
            gpu_id=gpu_id,
            uuid=uuid,
            model=entry["model"],
            used_mib=_mib(entry.get("used")),
            free_mib=_mib(entry.get("free")),
            pod=pod,
            namespace=namespace,
        )
        for (node, gpu_id, uuid, pod, namespace), entry in merged.items()
        if node and (gpu_id or uuid)
    ]


def _filesystem_readings(samples: Vector) -> list[FilesystemReading]:
    merged: dict[tuple[str, str], dict[str, int | None]] = {}
    for labels, value in samples:
        host = labels.get("node") or host_of(labels.get("instance", ""))
        entry = merged.setdefault((host, labels.get("mountpoint", "")), {})
        name = labels.get("__name__", "").removeprefix("node_filesystem_").removesuffix("_bytes")
        entry.setdefault(name, None if value is None else int(value))
    return [
        FilesystemReading(host, mountpoint, entry.get("size"), entry.get("free"), entry.get("avail"))
        for (host, mountpoint), entry in merged.items()
        if host and mountpoint
    ]


class PrometheusMetrics:
    def __init__(self, base_url: str, *, timeout_seconds: float, cache_seconds: float) -> None:
        self._url = base_url.rstrip("/") + "/api/v1/query"
        self._timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self._cache: TtlCache[Vector | None] = TtlCache(cache_seconds, max_entries=256)

    async def gpus(self) -> list[GpuReading]:
        return _gpu_readings(await self._query(_GPU_QUERY))

    async def filesystems(self, paths: list[str]) -> list[FilesystemReading]:
        mounts = [m for p in paths for m in mount_ancestors(p)]
        if not mounts:
            return []
        query = f'{{__name__=~"{_FS_METRICS}",mountpoint=~"{_promql_regex(mounts)}"}}'
        return _filesystem_readings(await self._query(query))

    async def _query(self, promql: str) -> Vector:
        answer = await self._cache.get(promql, lambda: self._fetch(promql))
        if answer is None:
            raise MetricsUnavailable("Prometheus could not be read")
        return answer

    async def _fetch(self, promql: str) -> Vector | None:
        """One query; None (cached like an answer) when Prometheus is down, slow or answers nonsense."""
        try:
            # One short-lived session per query: queries are rare (cached) and this keeps no connection or event
            # loop state alive between them.
            async with (
                aiohttp.ClientSession(timeout=self._timeout) as http,
                http.get(self._url, params={"query": promql}) as response,
            ):
                if response.status != 200:
                    log.warning("Prometheus query failed with HTTP %s", response.status)
                    return None
                return _vector(await response.json(content_type=None))
        except (aiohttp.ClientError, TimeoutError, ValueError, MetricsUnavailable) as exc:
            log.warning("Prometheus query failed (%s)", type(exc).__name__)
            return None
