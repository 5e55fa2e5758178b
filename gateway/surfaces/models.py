"""GET /v1/models and GET /v1/models/{id}: what the caller's key can use, with each model's capabilities.

Filters (query parameters, comma-separated or repeated, `name[]` accepted): `input_modalities` (every listed
modality must be supported), `task_type`. Unlisted aliases are hidden from the list but answer GET by id.
"""

from __future__ import annotations

import orjson
from aiohttp import web

from gateway.access import model_not_found
from gateway.catalog import MODALITY_NAMES, TASK_NAMES, ModelInfo
from gateway.context import ACCESS, PRINCIPAL
from server.errors import InvalidArgument

__all__ = ["get_model", "list_models"]

_MODALITIES = {name: number for number, name in MODALITY_NAMES.items()}
_TASKS = {name: task for task, name in TASK_NAMES.items() if task}


def _norm(value: str) -> str:
    return value.strip().lower().replace("_", "-")


def _values(request: web.Request, name: str) -> list[str]:
    raw = [*request.query.getall(name, []), *request.query.getall(f"{name}[]", [])]
    return [_norm(v) for item in raw for v in item.split(",") if v.strip()]


def _filter(request: web.Request, models: list[ModelInfo]) -> list[ModelInfo]:
    wanted_modalities = set()
    for name in _values(request, "input_modalities"):
        if name not in _MODALITIES:
            raise InvalidArgument(f"Unknown input modality '{name}'.", field="input_modalities")
        wanted_modalities.add(_MODALITIES[name])
    wanted_tasks = set()
    for name in _values(request, "task_type"):
        if name not in _TASKS:
            raise InvalidArgument(f"Unknown task type '{name}'.", field="task_type")
        wanted_tasks.add(TASK_NAMES[_TASKS[name]])
    out = []
    for model in models:
        modalities = set(model.input_modalities) or {1}
        if wanted_modalities - modalities:
            continue
        if wanted_tasks and TASK_NAMES.get(model.task_type) not in wanted_tasks:
            continue
        out.append(model)
    return out


async def list_models(request: web.Request) -> web.StreamResponse:
    models = await request.app[ACCESS].models(request[PRINCIPAL])
    listed = sorted((m for m in _filter(request, models) if not m.unlisted), key=lambda m: m.public_model_id)
    body = {"object": "list", "data": [m.wire() for m in listed]}
    return web.Response(body=orjson.dumps(body), content_type="application/json")


async def get_model(request: web.Request) -> web.StreamResponse:
    model_id = request.match_info["model"]
    models = await request.app[ACCESS].models(request[PRINCIPAL])
    for model in models:
        if model.public_model_id == model_id:
            return web.Response(body=orjson.dumps(model.wire()), content_type="application/json")
    raise model_not_found(model_id)
