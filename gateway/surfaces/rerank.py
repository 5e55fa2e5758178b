"""POST /v1/rerank (also /rerank, /v2/rerank): the vLLM/Jina/Cohere-compatible shape, passed through.

Request `{model, query, documents: [str | {text}], top_n?, return_documents?}`; the model's query prefix, when set
and non-empty, is prepended to the query. With `return_documents: false` the results carry no `document` (Cohere's
meaning), whatever the upstream sent: vLLM has no such field and returns every document's text anyway.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from gateway.calls import metered
from gateway.catalog import TaskType
from gateway.middleware import read_json, require_model
from gateway.providers import Surface
from gateway.surfaces._upstream import as_requested, listed, post_json, read_upstream_json, require_task
from server.domain.json_values import is_integer
from server.errors import InvalidArgument
from server.metering import CallKind

__all__ = ["rerank"]


def _validate(payload: dict[str, Any]) -> None:
    if not isinstance(payload.get("query"), str):
        raise InvalidArgument("'query' must be a string.", field="query")
    documents = payload.get("documents")
    if not isinstance(documents, list) or not all(_document(d) for d in documents):
        raise InvalidArgument("'documents' must be an array of strings or {text} objects.", field="documents")
    top_n = payload.get("top_n")
    if top_n is not None and (not is_integer(top_n) or top_n < 0):
        raise InvalidArgument("'top_n' must be a non-negative integer.", field="top_n")
    return_documents = payload.get("return_documents")
    if return_documents is not None and not isinstance(return_documents, bool):
        raise InvalidArgument("'return_documents' must be a boolean.", field="return_documents")


def _document(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, dict) and isinstance(value.get("text"), str))


def _without_documents(results: list[dict[str, Any]]) -> bool:
    """Drop each result's `document`, in place; True when there was one."""
    dropped = False
    for result in results:
        if "document" in result:
            del result["document"]
            dropped = True
    return dropped


async def rerank(request: web.Request) -> web.StreamResponse:
    async with metered(request, CallKind.RERANK) as call:
        payload = await read_json(request)
        model = require_model(payload)
        _validate(payload)
        route = await call.resolve(model)
        require_task(route, TaskType.RERANK)
        if route.query_prefix:
            payload["query"] = route.query_prefix + payload["query"]
        resp = await post_json(request, route, Surface.RERANK, payload)
        raw, parsed = await read_upstream_json(resp, call, Surface.RERANK)
        results = listed(parsed, "results")
        call.count(parsed.get("usage"))
        if payload.get("return_documents") is False and _without_documents(results):
            raw = orjson.dumps(parsed)
        raw = as_requested(raw, parsed, model, always=False)  # Cohere's shape has no model
        call.response_bytes = len(raw)
        return web.Response(body=raw, content_type="application/json")
