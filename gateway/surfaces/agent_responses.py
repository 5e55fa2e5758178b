"""A guarded preset agent on /v1/responses: the whole turn (the tool loop included) runs first, the output guardrails
judge its answer, and only then is it answered — as one Response, or replayed as a Responses event stream.

A refusal is a completed Response whose output is one assistant message with a `refusal` content part (OpenAI's
shape; the SDK's `output_text` is empty), so clients tell it apart from a backend failure (an OpenAI error, HTTP 5xx,
or a `response.failed` event). The turn's tool calls are withheld with the answer. It is metered with status
`GUARDRAIL_REFUSED`; a guardrail that cannot judge fails closed (gateway.guardrails).

Streaming: the event stream opens at once with an SSE comment and carries a comment keepalive every
`KEEPALIVE_SECONDS` while the turn and the guardrails work; the checked output is then replayed as a valid event
sequence from `response.created` through `response.completed`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web

from gateway import guardrails
from gateway.agents import AgentRoute
from gateway.calls import CLIENT_CLOSED, GUARDRAIL_REFUSED, Call
from gateway.context import PRINCIPAL, REQUEST_ID
from gateway.responses import loop, translate
from gateway.responses.events import ResponseStream
from gateway.security_events import guardrail_refused
from gateway.surfaces.agent_chat import kept_alive
from server.errors import SwitchboardError, wire_error_for

__all__ = ["guarded_response"]

log = logging.getLogger("switchboard.gateway.agents")


def _prompt(plan: translate.ChatPlan) -> str:
    for message in reversed(plan.turn):
        if message.get("role") == "user":
            return guardrails.text_of(message.get("content"))
    return ""


def _checked_text(output: list[dict[str, Any]]) -> str:
    """What the guardrails judge: the answer's text and each call the turn hands the client, with its arguments."""
    parts: list[str] = []
    for item in output:
        kind = item.get("type")
        if kind == "message":
            parts += [str(p.get("text", "")) for p in item.get("content") or () if p.get("type") == "output_text"]
        elif kind in ("function_call", "mcp_approval_request"):
            parts.append(f"{item.get('name', '')}({item.get('arguments', '')})")
    return "\n".join(p for p in parts if p)


async def _checked(
    request: web.Request,
    call: Call,
    agent: AgentRoute,
    plan: translate.ChatPlan,
    run_turn: Callable[[], Awaitable[loop.LoopResult]],
) -> loop.LoopResult:
    result = await run_turn()
    refusal = await guardrails.check(request, agent.guardrails, _prompt(plan), _checked_text(result.output))
    if refusal is None:
        return result
    call.status = GUARDRAIL_REFUSED
    guardrail_refused(request, request[PRINCIPAL], agent.public_model_id)
    text = refusal.message()
    added = [{"role": "assistant", "content": text}]
    return dataclasses.replace(result, output=[translate.refusal_item(text)], added=added, incomplete_reason=None)


async def guarded_response(
    request: web.Request,
    call: Call,
    agent: AgentRoute,
    plan: translate.ChatPlan,
    *,
    stream: bool,
    events: ResponseStream,
    run_turn: Callable[[], Awaitable[loop.LoopResult]],
    body_of: Callable[[loop.LoopResult], dict[str, Any]],
    remember: Callable[[dict[str, Any], loop.LoopResult], Awaitable[None]],
) -> web.StreamResponse:
    """`run_turn` runs the tool loop without events; `body_of` makes the Response, `remember` stores the turn."""
    if not stream:
        result = await _checked(request, call, agent, plan, run_turn)
        body = body_of(result)
        await remember(body, result)
        encoded = orjson.dumps(body)
        call.response_bytes = len(encoded)
        return web.Response(body=encoded, content_type="application/json")
    out = events.out
    await out.prepare(request)
    try:
        async with kept_alive(out, _checked(request, call, agent, plan, run_turn)) as work:
            await events.start()
            try:
                result = work.result()
            except SwitchboardError as exc:
                call.status = wire_error_for(exc).http_status
                await events.fail(exc.message)
                return out
            except Exception:
                log.exception("unexpected error in a guarded agent stream (correlation id %s)", request[REQUEST_ID])
                call.status = 500
                await events.fail(f"The response could not be completed (correlation id {request[REQUEST_ID]}).")
                return out
            result = dataclasses.replace(result, output=await events.replay(result.output))
            body = body_of(result)
            await events.end(body)
            await remember(body, result)
    except ConnectionError:
        call.status = CLIENT_CLOSED  # the client went away; nothing left to tell it
    finally:
        call.response_bytes = out.length
    return out
