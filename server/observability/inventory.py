"""Node inventory from a static file (`SWITCHBOARD_NODE_INVENTORY`): YAML, or JSON (which YAML reads too).

    nodes:
      - name: gpu-node-1                 # Kubernetes node name; unique
        instance: 10.0.0.5               # optional: node-exporter's `instance` host for this node (default: name)
        gpus:
          - id: "0"                      # device index on the node (DCGM's `gpu` label); unique per node
            uuid: GPU-8f3c…              # DCGM's `UUID` label
            model: NVIDIA A100-SXM4-80GB
            total_vram_mib: 81920
        model_cache:                     # optional: only nodes with one are listed by ListNodeModelCacheUsage
          path: /var/lib/models          # cache root on the node
          models:
            - url: hf://meta-llama/Llama-3.1-8B-Instruct   # matched to ModelDeployment.model_url, exactly
              display_name: Llama 3.1 8B Instruct
              size_bytes: 16060522496                       # optional, best effort

The file is read on first use and again whenever its modification time changes (a ConfigMap update reaches every
replica without a restart). A missing or invalid file is refused with failed_precondition naming the first problem
found; the message never quotes the file's contents.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from server.domain.json_values import is_integer
from server.errors import FailedPrecondition
from server.observability.sources import CachedModel, InventoryGpu, InventoryNode

__all__ = ["EmptyInventory", "FileInventory", "parse_inventory"]

_SETTING = "SWITCHBOARD_NODE_INVENTORY"


class EmptyInventory:
    """No inventory configured: no nodes (not an error)."""

    async def nodes(self) -> list[InventoryNode]:
        return []


class FileInventory:
    def __init__(self, path: str) -> None:
        self._path = Path(path)
        self._loaded: tuple[float, list[InventoryNode]] | None = None

    async def nodes(self) -> list[InventoryNode]:
        try:
            mtime = os.stat(self._path).st_mtime
        except OSError:
            raise FailedPrecondition(f"the node inventory ({_SETTING}) cannot be read") from None
        if self._loaded is None or self._loaded[0] != mtime:
            try:
                text = self._path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                raise FailedPrecondition(f"the node inventory ({_SETTING}) cannot be read") from None
            self._loaded = (mtime, parse_inventory(text))
        return self._loaded[1]


def _fail(where: str, problem: str) -> FailedPrecondition:
    return FailedPrecondition(f"the node inventory ({_SETTING}) is invalid: {where} {problem}")


def _text(item: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = item.get(key)
    if value is None and not required:
        return ""
    if isinstance(value, bool) or not isinstance(value, str | int) or (required and str(value) == ""):
        raise _fail(f"{where}.{key}", "must be a non-empty string")
    return str(value)


def _count(item: dict[str, Any], key: str, where: str, *, required: bool = True) -> int | None:
    value = item.get(key)
    if value is None and not required:
        return None
    if not is_integer(value) or value < 0:
        raise _fail(f"{where}.{key}", "must be a non-negative integer")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(where, "must be a mapping")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(where, "must be a list")
    return value


def _gpu(value: Any, where: str) -> InventoryGpu:
    item = _mapping(value, where)
    total = _count(item, "total_vram_mib", where)
    assert total is not None
    return InventoryGpu(
        id=_text(item, "id", where),
        uuid=_text(item, "uuid", where, required=False),
        model=_text(item, "model", where, required=False),
        total_vram_mib=total,
    )


def _cached_model(value: Any, where: str) -> CachedModel:
    item = _mapping(value, where)
    url = _text(item, "url", where)
    return CachedModel(
        url=url,
        display_name=_text(item, "display_name", where, required=False) or url,
        size_bytes=_count(item, "size_bytes", where, required=False),
    )


def _node(value: Any, where: str) -> InventoryNode:
    item = _mapping(value, where)
    gpus = tuple(_gpu(g, f"{where}.gpus[{i}]") for i, g in enumerate(_list(item.get("gpus"), f"{where}.gpus")))
    if len({g.id for g in gpus}) != len(gpus):
        raise _fail(f"{where}.gpus", "repeats a GPU id")
    cache_path = ""
    models: tuple[CachedModel, ...] = ()
    if item.get("model_cache") is not None:
        cache = _mapping(item["model_cache"], f"{where}.model_cache")
        cache_path = _text(cache, "path", f"{where}.model_cache")
        listed = _list(cache.get("models"), f"{where}.model_cache.models")
        models = tuple(_cached_model(m, f"{where}.model_cache.models[{i}]") for i, m in enumerate(listed))
    return InventoryNode(
        name=_text(item, "name", where),
        gpus=gpus,
        cache_path=cache_path,
        cached_models=models,
        instance=_text(item, "instance", where, required=False),
    )


def parse_inventory(text: str) -> list[InventoryNode]:
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        raise _fail("the file", "is neither YAML nor JSON") from None
    if document is None:
        return []
    nodes = [_node(n, f"nodes[{i}]") for i, n in enumerate(_list(_mapping(document, "the file").get("nodes"), "nodes"))]
    if len({n.name for n in nodes}) != len(nodes):
        raise _fail("nodes", "repeats a node name")
    return nodes
