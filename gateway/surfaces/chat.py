"""POST /v1/chat/completions, streaming and not.

The request goes to the resolved target with the provider's model id. Streams always ask the upstream for usage
(so they are metered) and hand the client only what it asked for. A preset agent shapes the request (its
instructions first, its sampling defaults) and sends it to its base model; a guarded agent answers through
`gateway.surfaces.agent_chat`.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from gateway.agents import AgentRoute, shape_chat_request
from gateway.calls import metered
from gateway.catalog import TaskType
from gateway.middleware import read_json, require_model
from gateway.providers import Surface
from gateway.sampling import CHAT_FIELDS, check_fields
from gateway.streaming import relay_sse
from gateway.surfaces._upstream import as_requested, post_json, read_upstream_json, require_task
from gateway.surfaces.agent_chat import guarded_chat
from server.errors import InvalidArgument
from server.metering import CallKind

__all__ = ["chat_completions"]


def _validate(payload: dict[str, Any]) -> tuple[bool, bool]:
    """(stream, client asked for usage); raises InvalidArgument naming the field."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidArgument("'messages' must be a non-empty array of messages.", field="messages")
    stream = payload.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise InvalidArgument("'stream' must be a boolean.", field="stream")
    options = payload.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidArgument("'stream_options' must be an object.", field="stream_options")
    check_fields(payload, CHAT_FIELDS)
    include_usage = bool(stream) and bool((options or {}).get("include_usage"))
    return bool(stream), include_usage


async def chat_completions(request: web.Request) -> web.StreamResponse:
    async with metered(request, CallKind.CHAT_COMPLETION) as call:
        payload = await read_json(request)
        model = require_model(payload)
        stream, include_usage = _validate(payload)
        target = await call.resolve_target(model)
        if isinstance(target, AgentRoute):
            payload = shape_chat_request(target, payload)
            if target.guardrails:
                return await guarded_chat(request, call, target, payload, stream=stream, include_usage=include_usage)
        route = target.base if isinstance(target, AgentRoute) else target
        require_task(route, TaskType.TEXT_GENERATION, TaskType.GUARDRAIL)
        if stream:
            payload["stream_options"] = {**(payload.get("stream_options") or {}), "include_usage": True}
        upstream = await post_json(request, route, Surface.CHAT, payload)
        if stream:
            return await relay_sse(request, upstream, call, include_usage=include_usage)
        raw, parsed = await read_upstream_json(upstream, call)
        call.count(parsed.get("usage"))
        raw = as_requested(raw, parsed, model)
        call.response_bytes = len(raw)
        return web.Response(body=raw, content_type="application/json")
