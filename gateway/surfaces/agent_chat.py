"""A guarded preset agent on /v1/chat/completions: ask the base model for its whole answer, run the output guardrails
on it, and only then answer — as one completion, or replayed as a Chat Completions stream.

What is released is what was judged: each choice's message is rebuilt from the text it carries — `content` (the text
parts of a list, joined), `refusal`, each tool call (a function's or a custom tool's) and a legacy `function_call` as
`name(arguments)` — all of which the guardrails judge, and nothing else reaches the client (audio, reasoning,
logprobs, whatever field a provider adds later). Text guardrails cannot hear, so a request for an audio answer is
refused (400) before any model is called. An answer of the wrong shape (no choices, more choices than the `n` asked
for, a tool call that is not an object or names no function) is the backend's failure (502, `invalid_answer()`),
found before any guardrail runs: the upstream's answer cannot drive more guardrail calls than `n` x guardrails.

A refusal is an ordinary completion whose choice has `finish_reason: "content_filter"`, `content: null` and the
refusal text in `message.refusal` (streamed as a `refusal` delta), so clients tell it apart from a backend failure
(an OpenAI error, HTTP 5xx or a stream error event); the SDK's parse/stream helpers raise
ContentFilterFinishReasonError on it. It is metered with status `GUARDRAIL_REFUSED`.

Streaming: a guarded agent accepts `stream: true` but buffers. Once the request is accepted the event stream opens
with an SSE comment and carries a comment keepalive every `KEEPALIVE_SECONDS` while the base model and the
guardrails work; the checked answer is then replayed as chunks ending in `[DONE]`, and whatever fails once the
stream has started (the answer, the guardrails, the replay) ends it with an error event. Since the base model is
asked for a non-streamed answer, the guardrails add only their own calls to the time to the first token.
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
from gateway.responses.translate import call_id, function_name
from gateway.security_events import guardrail_refused
from gateway.surfaces._upstream import completion_choices, post_json, read_upstream_json, require_task
from server.errors import InvalidArgument, SwitchboardError, wire_error_for

__all__ = ["guarded_chat", "kept_alive"]

log = logging.getLogger("switchboard.gateway.agents")

KEEPALIVE_SECONDS = 2.0
_OPENED = b": accepted; the answer is sent once the output guardrails have checked it\n\n"
_KEEPALIVE = b": keepalive\n\n"
_DONE = b"data: [DONE]\n\n"
# The tool-call types and the field holding what each passes to its tool (a function's JSON arguments, a custom
# tool's free text).
_CALL_INPUTS = {"function": "arguments", "custom": "input"}
# The top-level fields of a completion a guarded agent releases; the rest (a provider's own additions) is not text
# anyone judged.
_COMPLETION_FIELDS = ("id", "object", "created", "model", "usage", "system_fingerprint", "service_tier")

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


def _text_only(payload: dict[str, Any]) -> None:
    """A guarded agent answers in text: its guardrails judge text and cannot check what an audio answer says."""
    modalities = payload.get("modalities")
    wants_audio = isinstance(modalities, list) and "audio" in modalities
    if wants_audio or payload.get("audio") is not None:
        raise InvalidArgument(
            "This preset agent's output guardrails judge text only, so it cannot answer with audio.",
            field="modalities" if wants_audio else "audio",
        )


def _last_user_text(messages: list[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, dict) and message.get("role") == "user":
            return guardrails.text_of(message.get("content"))
    return ""


def _named_call(body: Any, input_field: str) -> tuple[dict[str, str], str]:
    """A function's (or custom tool's) `{name, arguments|input}` as released, and as judged: `name(arguments)`."""
    if not isinstance(body, dict):
        raise invalid_answer()
    name, value = function_name(body.get("name")), body.get(input_field)
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise invalid_answer()
    return {"name": name, input_field: value}, f"{name}({value})"


def _tool_call(call: Any) -> tuple[dict[str, Any], str]:
    kind = (call.get("type") or "function") if isinstance(call, dict) else None
    input_field = _CALL_INPUTS.get(kind) if isinstance(kind, str) else None
    if kind is None or input_field is None:
        raise invalid_answer()
    body, judged = _named_call(call.get(kind), input_field)
    return {"id": call_id(call.get("id")), "type": kind, kind: body}, judged


def _released(message: Any) -> tuple[dict[str, Any], str]:
    """The message a guarded agent releases and the text its guardrails judge: every text the message carries (see
    the module docstring), rebuilt from those fields alone; one of the wrong shape is the backend's failure."""
    if not isinstance(message, dict):
        raise invalid_answer()
    content, refusal = message.get("content"), message.get("refusal")
    if isinstance(content, list):
        content = guardrails.text_of(content) or None
    if not isinstance(content, str | None) or not isinstance(refusal, str | None):
        raise invalid_answer()
    released: dict[str, Any] = {"role": "assistant", "content": content}
    judged = [content or "", refusal or ""]
    if refusal:
        released["refusal"] = refusal
    calls = message.get("tool_calls")
    if calls is not None:
        if not isinstance(calls, list):
            raise invalid_answer()
        if calls:
            checked = [_tool_call(c) for c in calls]
            released["tool_calls"] = [call for call, _ in checked]
            judged += [text for _, text in checked]
    if message.get("function_call") is not None:  # the legacy `functions` answer, which the gateway forwards
        released["function_call"], text = _named_call(message["function_call"], "arguments")
        judged.append(text)
    return released, "\n".join(p for p in judged if p)


def _refused(completion: dict[str, Any], refusal: guardrails.Refusal) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, "refusal": refusal.message()}
    choice = {"index": 0, "finish_reason": "content_filter", "logprobs": None, "message": message}
    return {**completion, "choices": [choice]}


def _checked_answer(completion: dict[str, Any], asked: int) -> tuple[dict[str, Any], list[str]]:
    """The completion as it may be released (its choices rebuilt, see `_released`) and the text of each choice for
    the guardrails; the backend's failure when it is of the wrong shape or holds more choices than `asked`."""
    choices = completion_choices(completion)
    if len(choices) > asked:  # refused before any guardrail runs: each choice costs one call of each guardrail
        raise invalid_answer()
    released, judged = [], []
    for index, choice in enumerate(choices):
        message, text = _released(choice.get("message"))
        reason = choice.get("finish_reason")
        finish = reason if isinstance(reason, str) and reason else "stop"
        released.append({"index": index, "message": message, "logprobs": None, "finish_reason": finish})
        judged.append(text)
    kept = {name: completion[name] for name in _COMPLETION_FIELDS if name in completion}
    return {**kept, "object": "chat.completion", "choices": released}, judged


async def _answer(request: web.Request, call: Call, agent: AgentRoute, body: dict[str, Any]) -> dict[str, Any]:
    """The checked completion (the base model's, or a refusal), named after the agent."""
    upstream = await post_json(request, agent.base, Surface.CHAT, body)
    raw, parsed = await read_upstream_json(upstream, call)
    completion, judged = _checked_answer(parsed, body.get("n") or 1)
    call.count_answer(parsed, len(raw))
    completion["model"] = agent.public_model_id
    prompt = _last_user_text(body["messages"])
    for text in judged:
        refusal = await guardrails.check(request, agent.guardrails, prompt, text)
        if refusal is not None:
            call.status = GUARDRAIL_REFUSED
            guardrail_refused(request, request[PRINCIPAL], agent.public_model_id)
            return _refused(completion, refusal)
    return completion


def _replay(completion: dict[str, Any], include_usage: bool) -> bytes:
    """A checked completion (`_checked_answer`'s shape) as Chat Completions stream events, ending in [DONE]."""
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

    for choice in completion["choices"]:
        index, message = choice["index"], choice["message"]
        chunk(index, {"role": "assistant", "content": ""})
        for field in ("refusal", "content", "function_call"):
            if message.get(field):
                chunk(index, {field: message[field]})
        if message.get("tool_calls"):
            chunk(index, {"tool_calls": [{"index": i, **c} for i, c in enumerate(message["tool_calls"])]})
        chunk(index, {}, choice["finish_reason"])
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
            try:  # the replay too: once the stream has started, every failure ends it with an error event
                out.end(_replay(work.result(), include_usage))
            except SwitchboardError as exc:
                call.status = wire_error_for(exc).http_status
                await out.write(b"data: " + orjson.dumps(error_payload(exc)) + b"\n\n")
            except Exception:
                correlation_id = request[REQUEST_ID]
                log.exception("unexpected error in a guarded agent stream (correlation id %s)", correlation_id)
                call.status = 500
                failure = {
                    "error": {"message": f"internal error (correlation id {correlation_id})", "type": "server_error"}
                }
                await out.write(b"data: " + orjson.dumps(failure) + b"\n\n")
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
    _text_only(payload)
    body = {k: v for k, v in payload.items() if k not in ("stream", "stream_options")}
    if stream:
        return await _stream(request, call, agent, body, include_usage)
    completion = await _answer(request, call, agent, body)
    raw = orjson.dumps(completion)
    call.response_bytes = len(raw)
    return web.Response(body=raw, content_type="application/json")
