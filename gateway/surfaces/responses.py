"""POST /v1/responses (streaming and not), GET and DELETE /v1/responses/{id}.

Each Responses request becomes one chat completion at the resolved target (gateway.responses.translate); function
tools come back as `function_call` items for the client to run, and the client continues with
`previous_response_id` and `function_call_output` items. Stored responses (`store`, default true) keep the whole
model-facing history, owned by the caller (server.domain.responses).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from typing import Any

import orjson
from aiohttp import web

from gateway.agents import AgentRoute, shape_chat_request
from gateway.calls import Call, metered
from gateway.catalog import Route, TaskType
from gateway.context import DB, PRINCIPAL, REQUEST_ID
from gateway.limits import LimitExceeded
from gateway.middleware import read_json, require_model
from gateway.providers import Surface
from gateway.responses import loop, mcp_tools, rag_tools, translate
from gateway.responses.agent_tools import with_agent_tools
from gateway.responses.events import ResponseStream
from gateway.sampling import RESPONSES_FIELDS, check_fields
from gateway.streaming import chat_chunks
from gateway.surfaces._upstream import post_json, read_upstream_json, require_task
from gateway.surfaces.agent_responses import guarded_response
from server.domain import conversation_items, conversations
from server.domain import responses as stored
from server.domain.json_values import is_integer
from server.errors import InvalidArgument, NotFound, PermissionDenied, UpstreamFailed, wire_error_for
from server.metering import CallKind

__all__ = ["create_response", "delete_response", "get_response", "list_input_items"]

log = logging.getLogger("switchboard.gateway.responses")


def _validate(payload: dict[str, Any]) -> bool:
    stream = payload.get("stream", False)
    if stream is not None and not isinstance(stream, bool):
        raise InvalidArgument("'stream' must be a boolean.", field="stream")
    if payload.get("conversation") is not None and payload.get("previous_response_id") is not None:
        raise InvalidArgument("'conversation' cannot be combined with 'previous_response_id'.", field="conversation")
    if payload.get("background"):
        raise InvalidArgument("'background' responses are not supported.", field="background")
    check_fields(payload, RESPONSES_FIELDS)
    return bool(stream)


def _assistant_messages(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This turn's output as chat history, for follow-ups."""
    messages: list[dict[str, Any]] = []
    calls = [
        {"id": i["call_id"], "type": "function", "function": {"name": i["name"], "arguments": i["arguments"]}}
        for i in output
        if i.get("type") == "function_call"
    ]
    text = "".join(part.get("text", "") for i in output if i.get("type") == "message" for part in i.get("content", ()))
    if text or not calls:
        messages.append({"role": "assistant", "content": text})
    if calls:
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
    return messages


def _output_of(parsed: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    text, calls, finish_reason = translate.answer_of(parsed)
    output: list[dict[str, Any]] = []
    if text:
        output.append(translate.message_item(text, status=translate.item_status(finish_reason)))
    for call in calls:
        function = call["function"]
        output.append(translate.function_call_item(call["id"], function["name"], function["arguments"]))
    return output, finish_reason


_CHAT_ITEMS = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "mcp_call",
        "mcp_approval_request",
        "mcp_approval_response",
    }
)


def _conversation_id(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("id")
    if not isinstance(value, str) or not value:
        raise InvalidArgument(
            "'conversation' must be a conversation id or an object with its id.", field="conversation"
        )
    return value


async def _conversation_history(request: web.Request, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's latest items (the gateway keeps 128), as stored."""
    async with request.app[DB].read() as session:
        await conversations.require_conversation(session, request[PRINCIPAL], "", conversation_id, field="conversation")
        items = await conversations.history(session, conversation_id)
    return [i.body for i in items]


def _as_chat(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Conversation items as chat history; items a chat model cannot take (reasoning, MCP listings) are left out.
    Calls and answers that lost their counterpart are left out with the turn's input (`translate.answered`), which
    may answer a call the conversation left pending."""
    return translate.messages([i for i in items if i.get("type") in _CHAT_ITEMS])


def _normalized(items: list[dict[str, Any]]) -> list[conversation_items.NewItem]:
    return conversation_items.normalize_items(items, field="input", allow_empty=True, capped=False)


def _conversation_input(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This turn's input with the ids its conversation items will have, checked before the model is called: input
    the conversation cannot keep is refused before it is paid for, and before a stream has started.

    The ids are the server's, as on POST /v1/conversations/{id}/items: item ids are unique across all
    conversations, so keeping an id the client sent (such as an output item of another response) would fail the
    save, and tell any caller whether that id exists anywhere."""
    fresh = [conversation_items.new_item_id(n.type) for n in _normalized(items)]
    return [{**item, "id": item_id} for item, item_id in zip(items, fresh, strict=True)]


def _new_items(items: list[dict[str, Any]]) -> list[conversation_items.NewItem]:
    """This turn's input and output as conversation items, keeping the ids the client has already seen: all of the
    server's making (the output's minted by this turn, the input's by `_conversation_input`)."""
    return [dataclasses.replace(n, id=raw.get("id")) for n, raw in zip(_normalized(items), items, strict=True)]


async def _remember(
    request: web.Request,
    body: dict[str, Any],
    plan: translate.ChatPlan,
    conversation_id: str | None,
    loop_result: loop.LoopResult | None = None,
) -> None:
    """Keep the turn: as a stored response (store: true) and at the end of its conversation, in one transaction.

    The conversation may be gone by now (deleted, or its owner removed from the tenant, while the model answered):
    that is the user's doing, not a failure. The turn is then kept as a stored response only, as the client was
    already told (a stream's terminal event, which echoes `store`, may have gone out)."""
    if not body.get("store") and conversation_id is None:
        return
    added = loop_result.added if loop_result is not None else _assistant_messages(body["output"])
    context = plan.context + plan.turn + added
    listings = loop_result.listings if loop_result is not None else None
    async with request.app[DB].transaction() as session:
        if body.get("store"):
            await stored.save(session, request[PRINCIPAL], body, plan.input_items, context, mcp_listings=listings)
        if conversation_id is not None:
            try:
                await conversations.require_conversation(
                    session, request[PRINCIPAL], "", conversation_id, field="conversation"
                )
                await conversations.append_items(
                    session, conversation_id, _new_items(plan.input_items + body["output"])
                )
            except (NotFound, PermissionDenied):  # neither writes before it refuses: the stored response stands
                log.warning(
                    "a turn's conversation was gone when the turn ended; not appended (correlation id %s)",
                    request[REQUEST_ID],
                )


async def _remember_streamed(
    request: web.Request,
    call: Call,
    body: dict[str, Any],
    plan: translate.ChatPlan,
    *,
    conversation_id: str | None,
    loop_result: loop.LoopResult | None = None,
) -> None:
    """`_remember` for a stream whose terminal event is already sent: a failure can only be logged, as any error
    answer now would be written into the stream's body."""
    try:
        await _remember(request, body, plan, conversation_id, loop_result)
    except Exception:
        log.exception("a streamed response could not be saved (correlation id %s)", request[REQUEST_ID])
        call.status = 500


async def create_response(request: web.Request) -> web.StreamResponse:
    async with metered(request, CallKind.RESPONSE) as call:
        payload = await read_json(request)
        model = require_model(payload)
        stream = _validate(payload)
        context: list[dict[str, Any]] = []
        prior_items: list[dict[str, Any]] = []  # the chain's earlier items, where the tool loop finds its state
        listings: list[dict[str, Any]] = []
        conversation_id = _conversation_id(payload.get("conversation"))
        if conversation_id is not None:
            prior_items = await _conversation_history(request, conversation_id)
            context = _as_chat(prior_items)
            listings = [i for i in prior_items if i.get("type") == "mcp_list_tools"]
        previous = payload.get("previous_response_id")
        if previous is not None:
            if not isinstance(previous, str) or not previous:
                raise InvalidArgument("'previous_response_id' must be a response id.", field="previous_response_id")
            async with request.app[DB].read() as session:
                found = await stored.load(session, request[PRINCIPAL], previous, field="previous_response_id")
            context, prior_items, listings = found.context, list(found.body.get("output") or ()), found.mcp_listings
        plan = translate.plan(payload, context)
        if conversation_id is not None:
            plan.echo["conversation"] = {"id": conversation_id}
            plan.input_items = _conversation_input(plan.input_items)
        max_tool_calls = _max_tool_calls(payload)
        plan.echo["max_tool_calls"] = max_tool_calls
        route, agent, specs = await _target_and_tools(request, call, model, payload, plan)
        approvals = any(i.get("type") == "mcp_approval_response" for i in plan.input_items)
        if specs or approvals or (agent is not None and agent.guardrails):
            loop_args = _LoopArgs(specs, prior_items, listings, max_tool_calls, agent)
            return await _with_loop(
                request, call, route, plan, model=model, stream=stream, conversation_id=conversation_id, args=loop_args
            )
        chat = plan.payload
        chat["messages"] = translate.answered(chat["messages"])  # as the tool loop sends each model call
        response_id, created_at = translate.new_id("resp"), int(time.time())
        if stream:
            chat["stream"], chat["stream_options"] = True, {"include_usage": True}
        upstream = await post_json(request, route, Surface.CHAT, chat)
        if stream:
            events = ResponseStream(response_id, model, plan.echo, created_at)
            return await _stream(request, upstream, call, plan, events, conversation_id=conversation_id)
        raw, parsed = await read_upstream_json(upstream, call)
        output, finish = _output_of(parsed)  # an answer that is no completion is the backend's 502, charged nothing
        call.count_answer(parsed, len(raw))
        incomplete = finish == "length"
        body = translate.response_object(
            response_id,
            model,
            plan.echo,
            status="incomplete" if incomplete else "completed",
            output=output,
            usage=translate.usage_of(parsed.get("usage")),
            created_at=created_at,
            incomplete_reason="max_output_tokens" if incomplete else None,
        )
        await _remember(request, body, plan, conversation_id)
        encoded = orjson.dumps(body)
        call.response_bytes = len(encoded)
        return web.Response(body=encoded, content_type="application/json")


async def _target_and_tools(
    request: web.Request, call: Call, model: str, payload: dict[str, Any], plan: translate.ChatPlan
) -> tuple[Route, AgentRoute | None, list[mcp_tools.McpToolSpec]]:
    """The model's route (a preset agent's: its base model, the plan shaped by the agent) and the turn's tool
    sources: the caller's MCP servers and RAGs (the key's RAGs by default, not for agents), after an agent's own."""
    target = await call.resolve_target(model)
    agent = target if isinstance(target, AgentRoute) else None
    route = target.base if isinstance(target, AgentRoute) else target
    if agent is not None:
        require_task(route, TaskType.TEXT_GENERATION)
        plan.payload = shape_chat_request(agent, plan.payload)  # the agent's instructions come first
        # The response says what was applied, as OpenAI's does: the agent's defaults where the caller set none.
        applied = plan.payload
        plan.echo["temperature"] = applied.get("temperature", plan.echo["temperature"])
        plan.echo["top_p"] = applied.get("top_p", plan.echo["top_p"])
        plan.echo["max_output_tokens"] = applied.get("max_tokens") or applied.get("max_completion_tokens")
    else:
        require_task(route, TaskType.TEXT_GENERATION, TaskType.GUARDRAIL)
    specs = await mcp_tools.resolve(request, payload.get("tools"))
    specs += await rag_tools.resolve(request, payload.get("tools"), offer_default=agent is None)
    if agent is not None:
        specs = await with_agent_tools(request, agent, specs)
    return route, agent, specs


def _max_tool_calls(payload: dict[str, Any]) -> int | None:
    value = payload.get("max_tool_calls")
    if value is not None and (not is_integer(value) or value < 1):
        raise InvalidArgument("'max_tool_calls' must be a positive integer.", field="max_tool_calls")
    return value


@dataclasses.dataclass
class _LoopArgs:
    specs: list[mcp_tools.McpToolSpec]
    prior_items: list[dict[str, Any]]
    listings: list[dict[str, Any]]
    max_tool_calls: int | None
    agent: AgentRoute | None = None  # a preset agent's turn: its guardrails judge the answer


async def _with_loop(
    request: web.Request,
    call: Any,
    route: Any,
    plan: translate.ChatPlan,
    *,
    model: str,
    stream: bool,
    conversation_id: str | None,
    args: _LoopArgs,
) -> web.StreamResponse:
    """A turn through the built-in MCP tool loop (gateway.responses.loop), streamed or not."""
    response_id, created_at = translate.new_id("resp"), int(time.time())

    async def turn(events: ResponseStream | None) -> loop.LoopResult:
        return await loop.run(
            request,
            call,
            route,
            plan,
            args.specs,
            events=events,
            prior_items=args.prior_items,
            listings=args.listings,
            max_tool_calls=args.max_tool_calls,
        )

    def body_of(result: loop.LoopResult) -> dict[str, Any]:
        reason = result.incomplete_reason
        return translate.response_object(
            response_id,
            model,
            plan.echo,
            status="incomplete" if reason else "completed",
            output=result.output,
            usage=translate.usage_of(result.usage),
            created_at=created_at,
            incomplete_reason=reason,
        )

    async def remember(body: dict[str, Any], result: loop.LoopResult) -> None:
        if stream:
            await _remember_streamed(request, call, body, plan, conversation_id=conversation_id, loop_result=result)
        else:
            await _remember(request, body, plan, conversation_id, result)

    if args.agent is not None and args.agent.guardrails:
        return await guarded_response(
            request,
            call,
            args.agent,
            plan,
            stream=stream,
            events=ResponseStream(response_id, model, plan.echo, created_at),
            run_turn=lambda: turn(None),
            body_of=body_of,
            remember=remember,
        )
    if not stream:
        result = await turn(None)
        body = body_of(result)
        await _remember(request, body, plan, conversation_id, result)
        encoded = orjson.dumps(body)
        call.response_bytes = len(encoded)
        return web.Response(body=encoded, content_type="application/json")
    events = ResponseStream(response_id, model, plan.echo, created_at)
    out = events.out
    await out.prepare(request)
    try:
        await events.start()
        try:
            result = await turn(events)
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a later model call of the loop may be refused by a rate limit, too
            await _end_failed(events, call, exc)
            return out
        body = body_of(result)
        await events.end(body)
        await _remember_streamed(request, call, body, plan, conversation_id=conversation_id, loop_result=result)
    except ConnectionError:
        call.status = 499  # the client went away: the loop stopped with it
    call.response_bytes = out.length
    return out


async def _end_failed(events: ResponseStream, call: Call, exc: Exception) -> None:
    """A stream that has started ends with `response.failed` whatever failed, never hangs: a backend's failure or a
    rate limit's refusal with its own message, anything else logged (its type and stack only: no model or tool
    data) and named as such."""
    if isinstance(exc, UpstreamFailed | LimitExceeded):
        call.status = wire_error_for(exc).http_status
        await events.fail(exc.message)
        return
    log.exception("a streamed response failed")
    call.status = 500
    await events.fail("The response could not be completed.")


async def _stream(
    request: web.Request,
    upstream: Any,
    call: Any,
    plan: translate.ChatPlan,
    events: ResponseStream,
    *,
    conversation_id: str | None,
) -> web.StreamResponse:
    out = events.out
    await out.prepare(request)
    try:
        await events.start()
        try:
            async for chunk in chat_chunks(upstream, call):
                await events.chunk(chunk)
            body = await events.finish()
        except (ConnectionError, asyncio.CancelledError):
            raise
        except Exception as exc:
            await _end_failed(events, call, exc)
            return out
        finally:
            upstream.release()
        call.count(events.usage)
        await _remember_streamed(request, call, body, plan, conversation_id=conversation_id)
    except ConnectionError:
        call.status = 499  # the client went away
    call.response_bytes = out.length
    return out


async def get_response(request: web.Request) -> web.StreamResponse:
    async with request.app[DB].read() as session:
        found = await stored.load(session, request[PRINCIPAL], request.match_info["response_id"])
    return web.Response(body=orjson.dumps(found.body), content_type="application/json")


async def delete_response(request: web.Request) -> web.StreamResponse:
    response_id = request.match_info["response_id"]
    async with request.app[DB].transaction() as session:
        await stored.delete(session, request[PRINCIPAL], response_id)
    body = {"id": response_id, "object": "response.deleted", "deleted": True}
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def _page_params(request: web.Request) -> tuple[int, str, str | None]:
    try:
        limit = int(request.query.get("limit", "20"))
    except ValueError:
        raise InvalidArgument("'limit' must be an integer between 1 and 100.", field="limit") from None
    if not 1 <= limit <= 100:
        raise InvalidArgument("'limit' must be an integer between 1 and 100.", field="limit")
    order = request.query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidArgument("'order' must be 'asc' or 'desc'.", field="order")
    return limit, order, request.query.get("after")


async def list_input_items(request: web.Request) -> web.StreamResponse:
    """GET /v1/responses/{id}/input_items: the stored response's input items, newest first by default."""
    limit, order, after = _page_params(request)
    async with request.app[DB].read() as session:
        found = await stored.load(session, request[PRINCIPAL], request.match_info["response_id"])
    items = found.input_items if order == "asc" else list(reversed(found.input_items))
    if after is not None:
        ids = [item.get("id") for item in items]
        if after not in ids:
            raise InvalidArgument(f"No input item with id '{after}' in this response.", field="after")
        # From its last place: ids name one input item each (translate refuses duplicates), but a response stored
        # before that was checked may repeat one, and paging must still end.
        items = items[len(ids) - ids[::-1].index(after) :]
    page = items[:limit]
    body = {
        "object": "list",
        "data": page,
        "first_id": page[0]["id"] if page else None,
        "last_id": page[-1]["id"] if page else None,
        "has_more": len(items) > limit,
    }
    return web.Response(body=orjson.dumps(body), content_type="application/json")
