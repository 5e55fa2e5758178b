"""ModelDeploymentObservabilityService: GPU overview and node model-cache usage in every GpuMetricsSource state,
against servers of this module's own (an inventory file in tmp; one server without monitoring, one pointed at a fake
Prometheus on loopback), on SQLite and PostgreSQL. Absent figures are omitted from the Connect JSON; a zero is "0".

Deployment metrics have their own file (test_model_deployment_metrics.py).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, server_env, start_server
from tests.fakes.prometheus import FakePrometheus
from tests.fakes.serve import serve_in_thread
from tests.world import must

OBS = "platform.modelmanager.v1.ModelDeploymentObservabilityService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
INVENTORY = """
nodes:
  - name: gpu-a
    instance: 10.0.0.1
    gpus:
      - {id: "0", uuid: GPU-a0, model: NVIDIA A100-SXM4-80GB, total_vram_mib: 81920}
      - {id: "1", uuid: GPU-a1, model: NVIDIA A100-SXM4-80GB, total_vram_mib: 81920}
    model_cache:
      path: /var/lib/models
      models:
        - {url: "hf://org/llama-RUN", display_name: Llama, size_bytes: 16000000000}
        - {url: "hf://org/mistral-RUN"}
  - name: gpu-b
    gpus:
      - {id: "0", uuid: GPU-b0, model: NVIDIA L40S, total_vram_mib: 46068}
    model_cache:
      path: /mnt/cache
  - name: gpu-c
    gpus:
      - {id: "0", uuid: GPU-c0, model: NVIDIA T4, total_vram_mib: 15360}
"""


@dataclass
class Observed:
    connect: ConnectJsonCaller
    token: str
    run: str  # this module run's tag in model URLs, so runs never see each other's deployments
    prometheus: FakePrometheus | None = None

    async def call(self, method: str) -> dict[str, Any]:
        return must(await self.connect.call(f"{OBS}/{method}", {}, token=self.token, get=True))


@pytest.fixture(scope="module")
def fake_prometheus() -> Iterator[tuple[FakePrometheus, int]]:
    prometheus = FakePrometheus()
    with serve_in_thread(prometheus.app) as port:
        yield prometheus, port


@pytest.fixture(scope="module")
def run_tag() -> str:
    return secrets.token_hex(4)


@pytest.fixture(scope="module")
def inventory_file(tmp_path_factory: pytest.TempPathFactory, run_tag: str) -> Path:
    path = tmp_path_factory.mktemp("inventory") / "nodes.yaml"
    path.write_text(INVENTORY.replace("RUN", run_tag))
    return path


@asynccontextmanager
async def _started(server: Server, database: Database, **extra: str) -> AsyncIterator[ConnectJsonCaller]:
    # The session server's var dir: the same signing key, so its tokens work here too.
    env = server_env(database, server.settings.var_dir, **extra)
    proc = await start_server(env)
    try:
        yield ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
    finally:
        await proc.stop()


@pytest_asyncio.fixture(scope="module")
async def unmonitored(
    server: Server, database: Database, inventory_file: Path, run_tag: str
) -> AsyncIterator[Observed]:
    async with _started(server, database, SWITCHBOARD_NODE_INVENTORY=str(inventory_file)) as connect:
        yield Observed(connect, server.admin_token, run_tag)


@pytest_asyncio.fixture(scope="module")
async def monitored(
    server: Server,
    database: Database,
    inventory_file: Path,
    run_tag: str,
    fake_prometheus: tuple[FakePrometheus, int],
) -> AsyncIterator[Observed]:
    prometheus, port = fake_prometheus
    async with _started(
        server,
        database,
        SWITCHBOARD_NODE_INVENTORY=str(inventory_file),
        SWITCHBOARD_PROMETHEUS_URL=f"http://127.0.0.1:{port}",
        SWITCHBOARD_PROMETHEUS_CACHE_SECONDS="0",  # each call sees the fake's current state
    ) as connect:
        yield Observed(connect, server.admin_token, run_tag, prometheus)


async def _deployment(connect: ConnectJsonCaller, token: str, name: str, model_url: str = "") -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "publicModelId": name, "endpointUrl": "http://127.0.0.1:9/v1"}
    if model_url:
        body["modelUrl"] = model_url
    return must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=token))[
        "modelDeployment"
    ]


def _gpus(answer: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(node["nodeName"], gpu["id"]): gpu for node in answer["nodes"] for gpu in node.get("gpus", [])}


def _deployments(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {d["name"]: d for d in answer.get("deployments", [])}


def _dcgm(metric: str, node: str, gpu: str, value: float, pod: str = "") -> tuple[dict[str, str], float]:
    labels = {"__name__": metric, "gpu": gpu, "UUID": f"GPU-{node[-1]}{gpu}", "Hostname": node, "modelName": "X"}
    if pod:
        labels |= {"pod": pod, "namespace": "models", "container": "server"}
    return labels, value


async def test_without_monitoring_nodes_come_from_the_inventory_and_usage_is_absent(unmonitored: Observed) -> None:
    name = f"obs-{secrets.token_hex(4)}"
    created = await _deployment(unmonitored.connect, unmonitored.token, name)
    answer = await unmonitored.call("GetModelDeploymentGpuOverview")
    assert answer["metricsSource"] == "GPU_METRICS_SOURCE_NODE_LABELS"
    assert [n["nodeName"] for n in answer["nodes"]] == ["gpu-a", "gpu-b", "gpu-c"]
    assert answer["nodes"][0]["gpus"][0] == {
        "id": "0",
        "uuid": "GPU-a0",
        "model": "NVIDIA A100-SXM4-80GB",
        "totalVramMib": "81920",
    }  # no usedVramMib / freeVramMib: unknown, not zero
    for gpu in _gpus(answer).values():
        assert "usedVramMib" not in gpu and "freeVramMib" not in gpu
    mine = _deployments(answer)[name]
    assert mine["uid"].startswith("md_") and "gpus" not in mine
    assert "modelUrl" not in created


async def test_live_figures_fill_usage_and_tie_gpus_to_deployments(monitored: Observed) -> None:
    assert monitored.prometheus is not None
    tag = secrets.token_hex(3)
    small, large, idle = f"obs-{tag}", f"obs-{tag}-large", f"obs-{tag}-idle"
    for name in (small, large, idle):
        await _deployment(monitored.connect, monitored.token, name)
    used, free = "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"
    monitored.prometheus.mode = "up"
    monitored.prometheus.series = [
        _dcgm(used, "gpu-a", "0", 0),  # an idle GPU reports 0: zero is a figure, and it is shown
        _dcgm(free, "gpu-a", "0", 81920),
        _dcgm(used, "gpu-a", "1", 40000, pod=f"obs-{tag}-large-5d8c9-abcde"),  # the longest matching name wins
        _dcgm(free, "gpu-a", "1", 41920, pod=f"obs-{tag}-large-5d8c9-abcde"),
        _dcgm(used, "gpu-c", "0", 9000, pod=f"obs-{tag}-7f9c4-xyz12"),
        _dcgm(used, "gpu-z", "3", 500),  # a node the inventory does not list
        _dcgm(free, "gpu-z", "3", 1500),
        _dcgm(used, "gpu-a", "2", 0, pod="someone-else-0"),
    ]  # gpu-b reports nothing
    answer = await monitored.call("GetModelDeploymentGpuOverview")
    assert answer["metricsSource"] == "GPU_METRICS_SOURCE_LIVE"
    gpus = _gpus(answer)
    assert gpus[("gpu-a", "0")]["usedVramMib"] == "0" and gpus[("gpu-a", "0")]["freeVramMib"] == "81920"
    assert gpus[("gpu-a", "1")]["usedVramMib"] == "40000"
    assert gpus[("gpu-a", "1")]["totalVramMib"] == "81920"  # capacity from the inventory
    assert "usedVramMib" not in gpus[("gpu-b", "0")] and "freeVramMib" not in gpus[("gpu-b", "0")]
    assert gpus[("gpu-c", "0")]["usedVramMib"] == "9000" and "freeVramMib" not in gpus[("gpu-c", "0")]
    assert gpus[("gpu-z", "3")] == {
        "id": "3",
        "uuid": "GPU-z3",
        "model": "X",
        "totalVramMib": "2000",
        "usedVramMib": "500",
        "freeVramMib": "1500",
    }
    assert [n["nodeName"] for n in answer["nodes"]][:3] == ["gpu-a", "gpu-b", "gpu-c"]  # inventory order first
    mine = _deployments(answer)
    assert mine[large]["gpus"] == [{"nodeName": "gpu-a", "gpuId": "1", "gpuUuid": "GPU-a1", "usedVramMib": "40000"}]
    assert mine[small]["gpus"] == [{"nodeName": "gpu-c", "gpuId": "0", "gpuUuid": "GPU-c0", "usedVramMib": "9000"}]
    assert "gpus" not in mine[idle]


async def test_an_unreadable_prometheus_reports_live_unavailable_then_clears(monitored: Observed) -> None:
    assert monitored.prometheus is not None
    name = f"obs-{secrets.token_hex(4)}"
    await _deployment(monitored.connect, monitored.token, name)
    monitored.prometheus.series = [_dcgm("DCGM_FI_DEV_FB_USED", "gpu-a", "0", 123, pod=f"{name}-0")]
    monitored.prometheus.mode = "error"
    answer = await monitored.call("GetModelDeploymentGpuOverview")
    assert answer["metricsSource"] == "GPU_METRICS_SOURCE_LIVE_UNAVAILABLE"
    assert [n["nodeName"] for n in answer["nodes"]] == ["gpu-a", "gpu-b", "gpu-c"]  # the inventory is still served
    for gpu in _gpus(answer).values():
        assert "usedVramMib" not in gpu and "freeVramMib" not in gpu
    assert "gpus" not in _deployments(answer)[name]
    monitored.prometheus.mode = "up"
    answer = await monitored.call("GetModelDeploymentGpuOverview")
    assert answer["metricsSource"] == "GPU_METRICS_SOURCE_LIVE"
    assert _deployments(answer)[name]["gpus"][0]["usedVramMib"] == "123"


async def test_cache_usage_with_node_exporter_figures(monitored: Observed) -> None:
    assert monitored.prometheus is not None
    llama, mistral = f"hf://org/llama-{monitored.run}", f"hf://org/mistral-{monitored.run}"
    tag = secrets.token_hex(3)
    await _deployment(monitored.connect, monitored.token, f"obs-{tag}-b", llama)
    await _deployment(monitored.connect, monitored.token, f"obs-{tag}-a", llama)
    await _deployment(monitored.connect, monitored.token, f"obs-{tag}-other", "hf://org/not-cached")

    def fs(metric: str, mountpoint: str, value: int, instance: str = "10.0.0.1:9100") -> tuple[dict[str, str], int]:
        return {"__name__": f"node_filesystem_{metric}_bytes", "mountpoint": mountpoint, "instance": instance}, value

    monitored.prometheus.mode = "up"
    monitored.prometheus.series = [
        fs("size", "/", 10_000),
        fs("free", "/", 9_000),
        fs("avail", "/", 8_000),
        fs("size", "/var/lib", 1_000),  # the cache's own filesystem: the longest mountpoint holding it
        fs("free", "/var/lib", 400),
        fs("avail", "/var/lib", 300),
        fs("size", "/var/lib/models-old", 5),  # a sibling, not an ancestor
        fs("size", "/", 77, instance="10.9.9.9:9100"),  # another machine
    ]  # gpu-b has no node-exporter figures
    nodes = (await monitored.call("ListNodeModelCacheUsage"))["nodes"]
    assert [n["nodeName"] for n in nodes] == ["gpu-a", "gpu-b"]  # gpu-c holds no cache
    a, b = nodes
    assert (a["cachePath"], a["capacityBytes"], a["usedBytes"], a["availableBytes"]) == (
        "/var/lib/models",
        "1000",
        "600",
        "300",
    )
    assert a["models"] == [
        {
            "modelUrl": llama,
            "displayName": "Llama",
            "sizeBytes": "16000000000",
            "deploymentNames": [f"obs-{tag}-a", f"obs-{tag}-b"],
        },
        {"modelUrl": mistral, "displayName": mistral},  # size unknown: absent; no deployment references it
    ]
    assert b == {"nodeName": "gpu-b", "cachePath": "/mnt/cache"}  # no figures for it: absent, not zero


async def test_cache_usage_without_figures_keeps_the_totals_absent(unmonitored: Observed, monitored: Observed) -> None:
    assert monitored.prometheus is not None
    monitored.prometheus.mode = "error"
    try:
        for observed in (unmonitored, monitored):
            nodes = (await observed.call("ListNodeModelCacheUsage"))["nodes"]
            assert [n["nodeName"] for n in nodes] == ["gpu-a", "gpu-b"]
            for node in nodes:
                assert not {"capacityBytes", "usedBytes", "availableBytes"} & set(node)
            assert nodes[0]["models"][0]["modelUrl"] == f"hf://org/llama-{observed.run}"
    finally:
        monitored.prometheus.mode = "up"


async def test_model_url_is_kept_on_update_unless_given(unmonitored: Observed) -> None:
    name = f"obs-{secrets.token_hex(4)}"
    created = await _deployment(unmonitored.connect, unmonitored.token, name, "s3://bucket/weights")
    assert created["modelUrl"] == "s3://bucket/weights"

    async def update(**fields: Any) -> dict[str, Any]:
        body = {"modelDeployment": {"name": name, "publicModelId": name, **fields}}
        result = await unmonitored.connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", body, token=unmonitored.token)
        return must(result)["modelDeployment"]

    assert (await update(displayName="renamed"))["modelUrl"] == "s3://bucket/weights"
    assert "modelUrl" not in await update(modelUrl="")
    refused = await unmonitored.connect.call(
        f"{DEPLOYMENTS}/UpdateModelDeployment",
        {"modelDeployment": {"name": name, "publicModelId": name, "modelUrl": "x" * 2049}},
        token=unmonitored.token,
    )
    assert refused.code == "invalid_argument" and "model_url" in refused.message


async def test_a_broken_inventory_is_a_failed_precondition(
    server: Server, database: Database, tmp_path: Path, connect: ConnectJsonCaller
) -> None:
    path = tmp_path / "nodes.yaml"
    path.write_text("nodes: [{name: a, gpus: [{id: 0}]}]")
    async with _started(server, database, SWITCHBOARD_NODE_INVENTORY=str(path)) as other:
        result = await other.call(f"{OBS}/GetModelDeploymentGpuOverview", {}, token=server.admin_token, get=True)
        assert result.code == "failed_precondition"
        assert "nodes[0].gpus[0].total_vram_mib" in result.message
    no_inventory = must(await connect.call(f"{OBS}/ListNodeModelCacheUsage", {}, token=server.admin_token, get=True))
    assert no_inventory == {}  # nothing configured: no nodes, not an error
