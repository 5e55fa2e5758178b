"""The observability sources on their own: the inventory file and the Prometheus client against a fake Prometheus
on loopback (no database, no management server)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from server.errors import FailedPrecondition
from server.observability.inventory import FileInventory, parse_inventory
from server.observability.prometheus import PrometheusMetrics, host_of, mount_ancestors
from server.observability.sources import MetricsUnavailable
from tests.fakes.prometheus import FakePrometheus
from tests.fakes.serve import serve_in_thread

INVENTORY = """
nodes:
  - name: gpu-a
    instance: 10.0.0.1
    gpus:
      - {id: 0, uuid: GPU-a0, model: A100, total_vram_mib: 81920}
    model_cache:
      path: /var/lib/models
      models:
        - {url: "hf://org/llama", display_name: Llama, size_bytes: 1000}
        - {url: "hf://org/mistral"}
  - name: gpu-b
"""


@pytest.fixture
def fake() -> Iterator[tuple[FakePrometheus, str]]:
    prometheus = FakePrometheus()
    with serve_in_thread(prometheus.app) as port:
        yield prometheus, f"http://127.0.0.1:{port}"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_inventory_parses_yaml_and_json() -> None:
    nodes = parse_inventory(INVENTORY)
    assert [n.name for n in nodes] == ["gpu-a", "gpu-b"]
    assert nodes[0].gpus[0].id == "0"  # YAML numbers become ids
    assert nodes[0].cached_models[1].display_name == "hf://org/mistral"  # defaults to the url
    assert nodes[0].cached_models[1].size_bytes is None  # unknown, not 0
    assert nodes[1].cache_path == "" and nodes[1].gpus == ()
    as_json = parse_inventory('{"nodes": [{"name": "n", "gpus": [{"id": "0", "total_vram_mib": 1}]}]}')
    assert as_json[0].gpus[0].total_vram_mib == 1
    assert parse_inventory("") == []


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("nodes: [{gpus: []}]", "nodes[0].name"),
        ("nodes: [{name: a, gpus: [{id: 0, total_vram_mib: -1}]}]", "nodes[0].gpus[0].total_vram_mib"),
        ("nodes: [{name: a, gpus: [{id: 0, total_vram_mib: 1}, {id: 0, total_vram_mib: 1}]}]", "nodes[0].gpus"),
        ("nodes: [{name: a}, {name: a}]", "nodes"),
        ("nodes: [{name: a, model_cache: {models: []}}]", "nodes[0].model_cache.path"),
        ("nodes: [{name: a, model_cache: {path: /m, models: [{size_bytes: 1}]}}]", "models[0].url"),
        ("nodes: {name: a}", "nodes"),
        ("[1, 2", "the file"),
    ],
)
def test_an_invalid_inventory_names_the_problem(text: str, where: str) -> None:
    with pytest.raises(FailedPrecondition) as refused:
        parse_inventory(text)
    assert where in refused.value.message
    assert "SWITCHBOARD_NODE_INVENTORY" in refused.value.message


async def test_the_inventory_file_is_reread_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text("nodes: [{name: one}]")
    inventory = FileInventory(str(path))
    assert [n.name for n in await inventory.nodes()] == ["one"]
    path.write_text("nodes: [{name: one}, {name: two}]")
    os.utime(path, (1, 1))  # a different modification time, whatever the clock's resolution
    assert [n.name for n in await inventory.nodes()] == ["one", "two"]
    path.unlink()
    with pytest.raises(FailedPrecondition):
        await inventory.nodes()


def test_helpers() -> None:
    assert host_of("10.0.0.1:9100") == "10.0.0.1"
    assert host_of("[fd00::1]:9100") == "fd00::1"
    assert host_of("gpu-a") == "gpu-a"
    assert mount_ancestors("/var/lib/models") == ["/var/lib/models", "/var/lib", "/var", "/"]


async def test_gpu_readings_from_dcgm_series(fake: tuple[FakePrometheus, str]) -> None:
    prometheus, url = fake
    base = {"gpu": "0", "UUID": "GPU-a0", "modelName": "A100", "Hostname": "gpu-a"}
    prometheus.series = [
        ({"__name__": "DCGM_FI_DEV_FB_USED", **base, "pod": "llm-7d9f-abcde", "namespace": "models"}, 1000),
        ({"__name__": "DCGM_FI_DEV_FB_FREE", **base, "pod": "llm-7d9f-abcde", "namespace": "models"}, 80920),
        # scraped without honor_labels: pod/namespace are the exporter's own, exported_* the workload's
        (
            {
                "__name__": "DCGM_FI_DEV_FB_USED",
                "gpu": "1",
                "UUID": "GPU-a1",
                "instance": "gpu-a:9400",
                "pod": "dcgm-exporter-x",
                "namespace": "gpu-operator",
                "exported_pod": "emb-0",
                "exported_namespace": "models",
            },
            "NaN",
        ),
        ({"__name__": "node_filesystem_size_bytes", "mountpoint": "/", "instance": "gpu-a:9100"}, 5),
    ]
    live = PrometheusMetrics(url, timeout_seconds=2, cache_seconds=0)
    readings = {r.gpu_id: r for r in await live.gpus()}
    assert readings["0"].used_mib == 1000 and readings["0"].free_mib == 80920
    assert (readings["0"].node, readings["0"].pod, readings["0"].model) == ("gpu-a", "llm-7d9f-abcde", "A100")
    assert readings["1"].node == "gpu-a"  # instance without its port when Hostname is missing
    assert (readings["1"].pod, readings["1"].namespace) == ("emb-0", "models")
    assert readings["1"].used_mib is None and readings["1"].free_mib is None  # NaN is unknown, not 0


async def test_filesystem_query_names_only_the_cache_mount_candidates(fake: tuple[FakePrometheus, str]) -> None:
    prometheus, url = fake
    prometheus.series = [
        ({"__name__": "node_filesystem_size_bytes", "mountpoint": "/m.v2", "instance": "10.0.0.1:9100"}, 100),
        ({"__name__": "node_filesystem_avail_bytes", "mountpoint": "/m.v2", "instance": "10.0.0.1:9100"}, 40),
        ({"__name__": "node_filesystem_size_bytes", "mountpoint": "/mxv2", "instance": "10.0.0.1:9100"}, 7),
        ({"__name__": "node_filesystem_size_bytes", "mountpoint": "/", "node": "gpu-b", "instance": "x:1"}, 9),
    ]
    live = PrometheusMetrics(url, timeout_seconds=2, cache_seconds=0)
    found = {(r.host, r.mountpoint): r for r in await live.filesystems(["/m.v2/cache"])}
    assert set(found) == {("10.0.0.1", "/m.v2"), ("gpu-b", "/")}  # "." is literal: /mxv2 is not a candidate
    assert found[("10.0.0.1", "/m.v2")].size_bytes == 100
    assert found[("10.0.0.1", "/m.v2")].avail_bytes == 40
    assert found[("10.0.0.1", "/m.v2")].free_bytes is None


async def test_answers_and_failures_are_cached_for_a_few_seconds(fake: tuple[FakePrometheus, str]) -> None:
    prometheus, url = fake
    live = PrometheusMetrics(url, timeout_seconds=2, cache_seconds=300)
    await live.gpus()
    await live.gpus()
    assert len(prometheus.queries) == 1
    prometheus.mode = "error"
    failing = PrometheusMetrics(url, timeout_seconds=2, cache_seconds=300)
    for _ in range(2):
        with pytest.raises(MetricsUnavailable):
            await failing.gpus()
    assert len(prometheus.queries) == 2  # the failure was cached too: one more query, not two


@pytest.mark.parametrize("mode", ["error", "garbage", "not-vector"])
async def test_a_prometheus_that_answers_nonsense_is_unavailable(fake: tuple[FakePrometheus, str], mode: str) -> None:
    prometheus, url = fake
    prometheus.mode = mode
    with pytest.raises(MetricsUnavailable):
        await PrometheusMetrics(url, timeout_seconds=2, cache_seconds=0).gpus()


async def test_an_unreachable_prometheus_is_unavailable() -> None:
    live = PrometheusMetrics(f"http://127.0.0.1:{_closed_port()}", timeout_seconds=2, cache_seconds=0)
    with pytest.raises(MetricsUnavailable):
        await live.gpus()
    with pytest.raises(MetricsUnavailable):
        await live.filesystems(["/var/lib/models"])
