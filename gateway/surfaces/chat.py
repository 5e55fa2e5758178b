"""POST /v1/chat/completions, streaming and not.

The request goes to the resolved target with the provider's model id. Streams always ask the upstream for usage
(so they are metered) and hand the client only what it asked for. A preset agent shapes the request (its
instructions first, its sampling defaults) and sends it to its base model; a guarded agent answers through
`gateway.surfaces.agent_chat`.

Messages are checked as OpenAI checks them, before any model is called: each an object with a known role, its
content a string or an array of parts (null or absent only on an assistant message that calls tools or carries a
refusal or audio), else a 400 naming it (`messages[1].content`). A caller's mistake is not the backend's failure,
and a model server's refusal of it would come back as one (a retryable 502). A non-streamed answer that is not a
completion with choices (an upstream's `{"error": ...}` sent with HTTP 200) is the backend's failure, as in the
stream relay and the guarded path.
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
from gateway.surfaces._upstream import as_requested, completion_choices, post_json, read_upstream_json, require_task
from gateway.surfaces.agent_chat import guarded_chat
from server.errors import InvalidArgument
from server.metering import CallKind

__all__ = ["chat_completions"]

_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _carries_a_turn(message: dict[str, Any]) -> bool:
    """What an assistant message (a turn of the conversation the client sends back) may carry instead of content."""
    return bool(
        message.get("tool_calls") or message.get("function_call") or message.get("refusal") or message.get("audio")
    )


def _refusal(index: int, part: str, must: str) -> InvalidArgument:
    where = f"messages[{index}]{part}"
    return InvalidArgument(f"'{where}' {must}.", field=where)


def _check_message(message: Any, index: int) -> None:
    """A 400 naming what is wrong with this message, if anything (named only then: most messages pass). Content
    parts must be objects; what each holds is the model's to read (providers take different part types)."""
    if not isinstance(message, dict):
        raise _refusal(index, "", "must be an object")
    role = message.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise _refusal(index, ".role", "must be one of system, developer, user, assistant, tool, function")
    if role == "tool" and not (isinstance(message.get("tool_call_id"), str) and message["tool_call_id"]):
        raise _refusal(index, ".tool_call_id", "must be the id of the tool call the message answers")
    content = message.get("content")
    if isinstance(content, list):
        for at, part in enumerate(content):
            if not isinstance(part, dict):
                raise _refusal(index, f".content[{at}]", "must be an object")
    elif not isinstance(content, str) and not (content is None and role == "assistant" and _carries_a_turn(message)):
        raise _refusal(index, ".content", "must be a string or an array of content parts")


def _check_messages(messages: list[Any]) -> None:
    """Each message an object with a known role and content a model reads (see the module docstring). Every request
    checks every message: the usual one (text content) costs a few built-in calls, and only others are looked into."""
    for index, message in enumerate(messages):
        if isinstance(message, dict):
            role = message.get("role")
            if isinstance(role, str) and role in _ROLES and role != "tool" and isinstance(message.get("content"), str):
                continue
        _check_message(message, index)


def _validate(payload: dict[str, Any]) -> tuple[bool, bool]:
    """(stream, client asked for usage); raises InvalidArgument naming the field."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidArgument("'messages' must be a non-empty array of messages.", field="messages")
    _check_messages(messages)
    stream = payload.get("stream", False)
    if not isinstance(stream, bool) and stream is not None:
        raise InvalidArgument("'stream' must be a boolean.", field="stream")
    options = payload.get("stream_options")
    if options is not None and not isinstance(options, dict):
        raise InvalidArgument("'stream_options' must be an object.", field="stream_options")
    if options is not None and not stream:  # OpenAI's refusal, which an upstream would otherwise give or not
        raise InvalidArgument(
            "The 'stream_options' parameter is only allowed when 'stream' is enabled.", field="stream_options"
        )
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
        completion_choices(parsed)  # relayed as it is, once it is a completion at all
        call.count_answer(parsed, len(raw))
        raw = as_requested(raw, parsed, model)
        call.response_bytes = len(raw)
        return web.Response(body=raw, content_type="application/json")
