"""A guarded preset agent on /v1/chat/completions: ask the base model for its whole answer, run the output guardrails
on it, and only then answer — as one completion, or replayed as a Chat Completions stream.

A refusal is an ordinary completion whose choice has `finish_reason: "content_filter"`, `content: null` and the
refusal text in `message.refusal` (streamed as a `refusal` delta), so clients tell it apart from a backend failure
(an OpenAI error, HTTP 5xx or a stream error event); the SDK's parse/stream helpers raise
ContentFilterFinishReasonError on it. It is metered with status `GUARDRAIL_REFUSED`.

Streaming: a guarded agent accepts `stream: true` but buffers. Once the request is accepted the event stream opens
with an SSE comment and carries a comment keepalive every `KEEPALIVE_SECONDS` while the base model and the
guardrails work; the checked answer is then replayed as chunks ending in `[DONE]`. Since the base model is asked
for a non-streamed answer, the guardrails add only their own calls to the time to the first token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import orjson
from aiohttp import web

from gateway import guardrails
from gateway.agents import AgentRoute
from gateway.calls import CLIENT_CLOSED, GUARDRAIL_REFUSED, Call
from gateway.catalog import TaskType
from gateway.context import PRINCIPAL, REQUEST_ID
from gateway.event_stream import EventStream
from gateway.middleware import error_payload
from gateway.providers import Surface, invalid_answer
from gateway.security_events import guardrail_refused
from gateway.surfaces._upstream import post_json, read_upstream_json, require_task
from server.errors import SwitchboardError, wire_error_for

__all__ = ["guarded_chat", "kept_alive"]

log = logging.getLogger("switchboard.gateway.agents")

KEEPALIVE_SECONDS = 2.0
_OPENED = b": accepted; the answer is sent once the output guardrails have checked it\n\n"
_KEEPALIVE = b": keepalive\n\n"
_DONE = b"data: [DONE]\n\n"

T = TypeVar("T")


@contextlib.asynccontextmanager
async def kept_alive(out: web.StreamResponse, answer: Awaitable[T]) -> AsyncIterator[asyncio.Future[T]]:
    """Run `answer` while the prepared event stream `out` says it was accepted and carries a comment keepalive every
    `KEEPALIVE_SECONDS`; yields it once done. Leaving early (the client gone) cancels it."""
    work = asyncio.ensure_future(answer)
    try:
        await out.write(_OPENED)
        while not (await asyncio.wait({work}, timeout=KEEPALIVE_SECONDS))[0]:
            await out.write(_KEEPALIVE)
        yield work
    finally:
        if not work.done():
            work.cancel()
            with contextlib.suppress(BaseException):
                await work


def _last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return guardrails.text_of(message.get("content"))
    return ""


def _checked_text(message: dict[str, Any]) -> str:
    """What the guardrails judge: the answer's text and, if it calls tools, each call with its arguments."""
    parts = [guardrails.text_of(message.get("content"))]
    for tool_call in message.get("tool_calls") or ():
        function = tool_call.get("function") if isinstance(tool_call, dict) else None
        if isinstance(function, dict):
            parts.append(f"{function.get('name', '')}({function.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


def _refused(completion: dict[str, Any], refusal: guardrails.Refusal) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "refusal": refusal.message()}
    choice = {"index": 0, "finish_reason": "content_filter", "logprobs": None, "message": message}
    return {**completion, "choices": [choice]}


async def _answer(request: web.Request, call: Call, agent: AgentRoute, body: dict[str, Any]) -> dict[str, Any]:
    """The checked completion (the base model's, or a refusal), named after the agent."""
    upstream = await post_json(request, agent.base, Surface.CHAT, body)
    _raw, parsed = await read_upstream_json(upstream, call)
    completion: dict[str, Any] = parsed
    call.count(completion.get("usage"))
    choices = completion.get("choices")
    if not isinstance(choices, list) or not choices or not all(isinstance(c, dict) for c in choices):
        raise invalid_answer()
    completion["model"] = agent.public_model_id
    prompt = _last_user_text(body["messages"])
    for choice in choices:
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        refusal = await guardrails.check(request, agent.guardrails, prompt, _checked_text(message))
        if refusal is not None:
            call.status = GUARDRAIL_REFUSED
            guardrail_refused(request, request[PRINCIPAL], agent.public_model_id)
            return _refused(completion, refusal)
    return completion


def _replay(completion: dict[str, Any], include_usage: bool) -> bytes:
    """A finished completion as Chat Completions stream events, ending in [DONE]."""
    base = {
        "id": completion.get("id") or "chatcmpl-agent",
        "object": "chat.completion.chunk",
        "created": completion.get("created") or int(time.time()),
        "model": completion.get("model"),
        "system_fingerprint": completion.get("system_fingerprint"),
        **({"usage": None} if include_usage else {}),
    }
    events: list[bytes] = []

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> None:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish}
        events.append(b"data: " + orjson.dumps({**base, "choices": [choice]}) + b"\n\n")

    for position, choice in enumerate(completion["choices"]):
        index = choice.get("index", position)
        message = choice.get("message") or {}
        chunk(index, {"role": "assistant", "content": ""})
        if message.get("refusal"):
            chunk(index, {"refusal": message["refusal"]})
        if message.get("content"):
            chunk(index, {"content": message["content"]})
        calls = [
            {"index": i, "id": c.get("id"), "type": c.get("type", "function"), "function": c.get("function")}
            for i, c in enumerate(message.get("tool_calls") or ())
        ]
        if calls:
            chunk(index, {"tool_calls": calls})
        chunk(index, {}, choice.get("finish_reason") or "stop")
    if include_usage and completion.get("usage"):
        events.append(b"data: " + orjson.dumps({**base, "choices": [], "usage": completion["usage"]}) + b"\n\n")
    events.append(_DONE)
    return b"".join(events)


async def _stream(
    request: web.Request, call: Call, agent: AgentRoute, body: dict[str, Any], include_usage: bool
) -> web.StreamResponse:
    out = EventStream()
    await out.prepare(request)
    try:
        async with kept_alive(out, _answer(request, call, agent, body)) as work:
            try:
                completion = work.result()
            except SwitchboardError as exc:
                call.status = wire_error_for(exc).http_status
                await out.write(b"data: " + orjson.dumps(error_payload(exc)) + b"\n\n")
                return out
            except Exception:
                correlation_id = request[REQUEST_ID]
                log.exception("unexpected error in a guarded agent stream (correlation id %s)", correlation_id)
                call.status = 500
                failure = {
                    "error": {"message": f"internal error (correlation id {correlation_id})", "type": "server_error"}
                }
                await out.write(b"data: " + orjson.dumps(failure) + b"\n\n")
                return out
            out.end(_replay(completion, include_usage))
    except ConnectionError:
        call.status = CLIENT_CLOSED  # the client went away; nothing left to tell it
    finally:
        call.response_bytes = out.length
    return out


async def guarded_chat(
    request: web.Request, call: Call, agent: AgentRoute, payload: dict[str, Any], *, stream: bool, include_usage: bool
) -> web.StreamResponse:
    """`payload` is already shaped by the agent (instructions, sampling defaults)."""
    require_task(agent.base, TaskType.TEXT_GENERATION)
    body = {k: v for k, v in payload.items() if k not in ("stream", "stream_options")}
    if stream:
        return await _stream(request, call, agent, body, include_usage)
    completion = await _answer(request, call, agent, body)
    raw = orjson.dumps(completion)
    call.response_bytes = len(raw)
    return web.Response(body=raw, content_type="application/json")
