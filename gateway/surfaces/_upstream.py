"""Shared by the JSON surfaces: send a prepared payload to the route's upstream and read a JSON answer."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from gateway.calls import Call
from gateway.catalog import Route, TaskType
from gateway.context import HTTP, PRINCIPAL, TRANSLATORS
from gateway.providers import Surface, invalid_answer, open_upstream, read_answer
from server.errors import InvalidArgument
from server.upstream_http import UpstreamResponse

__all__ = ["as_requested", "completion_choices", "post_json", "read_upstream_json", "require_task"]

_JSON_HEADERS = {"Content-Type": "application/json"}


def require_task(route: Route, *tasks: TaskType) -> None:
    if route.task_type not in tasks and not (
        route.task_type == TaskType.UNSPECIFIED and TaskType.TEXT_GENERATION in tasks
    ):
        raise InvalidArgument(f"The model '{route.public_model_id}' does not support this endpoint.", field="model")


async def post_json(request: web.Request, route: Route, surface: Surface, payload: dict[str, Any]) -> UpstreamResponse:
    """POST the payload upstream (translated for the route's provider); returns the open response."""
    app = request.app
    translator = app[TRANSLATORS][route.provider]
    url = translator.url(route, surface)
    headers = {**_JSON_HEADERS, **translator.headers(route)}
    body = orjson.dumps(translator.body(route, payload))
    return await open_upstream(
        app[HTTP], "POST", url, headers=headers, body=body, route=route, principal=request[PRINCIPAL]
    )


async def read_upstream_json(resp: UpstreamResponse, call: Call, surface: Surface = Surface.CHAT) -> tuple[bytes, Any]:
    """The upstream's JSON body (of a request to `surface`) as bytes and parsed; a non-JSON answer is a backend
    failure."""
    raw = await read_answer(resp, surface)
    try:
        parsed = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise invalid_answer() from None
    if not isinstance(parsed, dict):
        raise invalid_answer()
    return raw, parsed


def as_requested(raw: bytes, parsed: dict[str, Any], model: str, *, always: bool = True) -> bytes:
    """The answer with `model` = the id the client asked for, not the upstream's internal id (which clients never
    asked for and may not log or route by). `always=False` only replaces a `model` the upstream sent."""
    sent = parsed.get("model")
    if sent == model or (not always and "model" not in parsed):
        return raw
    parsed["model"] = model
    if isinstance(sent, str):  # usually one compact `"model":"<id>"`: swap the bytes rather than re-encode
        found = b'"model":' + orjson.dumps(sent)
        if raw.count(b'"model"') == 1 and raw.count(found) == 1:
            return raw.replace(found, b'"model":' + orjson.dumps(model))
    return orjson.dumps(parsed)


def listed(answer: dict[str, Any], field: str) -> list[dict[str, Any]]:
    """The answer's `field` (a chat answer's `choices`, embeddings' `data`, rerank's `results`): an array of
    objects. Anything else — an `error` body some servers and proxies send with HTTP 200, an answer without it — is
    the backend's failure (`invalid_answer()`, a friendly 502), never relayed nor charged: the client could not use
    it, and an upstream's own error text is not for it."""
    items = answer.get(field)
    if answer.get("error") or not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise invalid_answer()
    return items


def completion_choices(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The choices of a non-streamed chat answer: `listed`, and at least one."""
    choices = listed(completion, "choices")
    if not choices:
        raise invalid_answer()
    return choices
