"""The Responses built-in tool loop over MCP: model call, MCP tool calls run here, repeat until the model answers.

Per turn:
1. Each `mcp` tool's server is listed once per response chain: a listing already in the chain (the previous
   response's, or the conversation's) is reused without a new `mcp_list_tools` item; otherwise the server is listed
   (filtered by `allowed_tools`) and the item emitted. Its tools reach the model as function tools named
   `{server}{tool}` (server.mcp.toolnames).
2. Approval responses in the input run (or decline) the calls their requests stood for.
3. Model call (upstream Chat Completions, streamed to the client in a streamed turn; SSE comment keepalives while it is
   silent). For each tool call:
   a function tool goes back to the client (`function_call`, the turn ends after this round); an MCP tool that needs
   approval becomes an `mcp_approval_request` (the turn ends); any other MCP tool is validated against its
   `inputSchema` (server.mcp.tool_schemas: linear-time regexes, no `$ref` cycles, bounded size; a tool whose schema
   is refused reaches the model without it, and calling it fails naming why) and called through the egress guard, a
   `response.in_progress` heartbeat re-sent while it runs. Validation errors, tool errors and failures become the
   tool's output for the model (an `mcp_call` with `error`), and the loop goes on.
4. Bounds end the turn `incomplete` with a reason: `max_tool_calls`, the configured iteration cap
   (`max_iterations`), a tool call that outlives the per-call timeout (`tool_call_timeout`).

A pending approval's tool call is kept in the history under the approval request's id, so the continuation answers it
by that id. Each tool call is metered (CALL_KIND_MCP_TOOL_CALL: server, tool, status, latency) and traced with ids
and counts; arguments and outputs never reach logs, spans or meters.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson
from aiohttp import web
from opentelemetry import trace

from gateway import metrics
from gateway.calls import Call
from gateway.catalog import Route
from gateway.context import METER, PRINCIPAL, TRACING
from gateway.providers import Surface
from gateway.responses import translate
from gateway.responses.events import ResponseStream
from gateway.responses.mcp_tools import MCP_RUNTIME, McpToolSpec
from gateway.responses.rag_tools import INCLUDE_RESULTS, RagConnection, results_of
from gateway.security_events import approval_decided
from gateway.streaming import chat_chunks
from gateway.surfaces._upstream import post_json, read_upstream_json
from server.mcp.tool_client import McpTool, ToolFailure, ToolResult
from server.mcp.tool_schemas import ToolSchema, problems, vet
from server.mcp.toolnames import ToolNames
from server.metering import CallKind, UsageEvent
from server.permissions import ResourceKind

__all__ = ["LoopResult", "run"]

_tracer = trace.get_tracer("switchboard.gateway.tools")
_ANY_OBJECT: dict[str, Any] = {"type": "object"}


@dataclass
class LoopResult:
    output: list[dict[str, Any]]
    added: list[dict[str, Any]]  # chat messages this turn added after its input (the model's calls and answers)
    usage: dict[str, int]
    listings: list[dict[str, Any]]  # every mcp_list_tools item of the chain, this turn's included
    incomplete_reason: str | None = None


@dataclass
class _Tool:
    spec: McpToolSpec
    tool: McpTool
    schema: ToolSchema  # its inputSchema, vetted (server.mcp.tool_schemas)


class _Link(Protocol):
    """A tool source's connection for one turn: a remote MCP server's, or an in-process RAG's."""

    async def list_tools(self) -> list[McpTool]: ...
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult: ...
    async def close(self) -> None: ...


@dataclass
class _Turn:
    request: web.Request
    call: Call
    route: Route
    events: ResponseStream | None
    include_results: bool = False  # file_search_call items carry their results
    connections: dict[str, _Link] = field(default_factory=dict)
    output: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: int = 0

    def gone(self) -> bool:
        transport = self.request.transport
        return transport is None or transport.is_closing()

    async def add(self, item: dict[str, Any]) -> int:
        self.output.append(item)
        if self.events is None:
            return -1
        return await self.events.add_item(item)

    async def done(self, index: int, item: dict[str, Any]) -> None:
        self.output[self._position(item)] = item
        if self.events is not None:
            await self.events.done_item(index, item)

    def _position(self, item: dict[str, Any]) -> int:
        return next(i for i, o in enumerate(self.output) if o.get("id") == item["id"])

    async def event(self, kind: str, **fields: Any) -> None:
        if self.events is not None:
            await self.events.event(kind, **fields)

    async def while_running(self, work: Awaitable[Any], beat: Callable[[], Awaitable[None]] | None) -> Any:
        """Await `work` in this task while a side task beats every heartbeat interval; a client gone mid-wait stops
        the work."""
        interval = self.request.app[MCP_RUNTIME].settings.responses_heartbeat_seconds
        current = asyncio.current_task()

        async def beats() -> None:
            while True:
                await asyncio.sleep(interval)
                try:
                    if beat is not None:
                        await beat()
                    elif self.gone():
                        raise ConnectionResetError
                except (ConnectionError, RuntimeError):
                    if current is not None:
                        current.cancel()
                    return

        side = asyncio.create_task(beats())
        try:
            return await work
        except asyncio.CancelledError:
            if self.gone():
                raise ConnectionResetError from None
            raise
        finally:
            side.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await side


def _argument_errors(tool: _Tool, raw: str) -> tuple[dict[str, Any] | None, str | None]:
    name = tool.tool.name
    if tool.schema.refusal is not None:
        return None, f"The tool {name!r} cannot be called: {tool.schema.refusal}."
    try:
        arguments = orjson.loads(raw or "{}")
    except orjson.JSONDecodeError:
        return None, f"Invalid arguments for tool {name!r}: they are not valid JSON."
    if not isinstance(arguments, dict):
        return None, f"Invalid arguments for tool {name!r}: they must be a JSON object."
    found = problems(tool.schema, arguments)
    if not found:
        return arguments, None
    return None, f"Invalid arguments for tool {name!r}; fix them and call it again:\n" + "\n".join(
        f"- {line}" for line in found
    )


def _listing_item(label: str, tools: list[McpTool], error: str | None) -> dict[str, Any]:
    return {
        "id": translate.new_id("mcpl"),
        "type": "mcp_list_tools",
        "server_label": label,
        "tools": [t.listed() for t in tools],
        "error": error,
    }


def _tools_of(item: dict[str, Any]) -> list[McpTool]:
    tools = []
    for listed in item.get("tools") or ():
        if isinstance(listed, dict) and isinstance(listed.get("name"), str):
            tools.append(
                McpTool(
                    name=listed["name"],
                    description=str(listed.get("description") or ""),
                    input_schema=listed.get("input_schema") or {"type": "object"},
                    annotations=listed.get("annotations"),
                )
            )
    return tools


def _connection(turn: _Turn, spec: McpToolSpec) -> _Link:
    conn = turn.connections.get(spec.source.label)
    if conn is None and spec.rag is not None:
        conn = turn.connections[spec.source.label] = RagConnection(turn.request, spec.rag)
    if conn is None:
        conn = turn.connections[spec.source.label] = turn.request.app[MCP_RUNTIME].pool.connection(spec.source)
    return conn


async def _list(turn: _Turn, spec: McpToolSpec) -> dict[str, Any]:
    label = spec.source.label
    item = _listing_item(label, [], None)
    index = await turn.add(item)
    await turn.event("response.mcp_list_tools.in_progress", item_id=item["id"], output_index=index)
    try:
        tools = await turn.while_running(_connection(turn, spec).list_tools(), None)
    except ToolFailure as failure:
        done = {**item, "error": failure.message}
        await turn.event("response.mcp_list_tools.failed", item_id=item["id"], output_index=index)
        await turn.done(index, done)
        return done
    if spec.allowed is not None:
        tools = [t for t in tools if t.name in spec.allowed]
    done = {**item, "tools": [t.listed() for t in tools]}
    await turn.event("response.mcp_list_tools.completed", item_id=item["id"], output_index=index)
    await turn.done(index, done)
    return done


def _meter(turn: _Turn, label: str, tool: str, status: int, started: float) -> None:
    principal = turn.request[PRINCIPAL]
    key = principal.api_key
    latency_ms = (time.perf_counter() - started) * 1000
    turn.request.app[METER].usage(
        UsageEvent(
            tenant_id=key.tenant_id if key else (principal.scoped_tenant_id or ""),
            api_key_id=key.key_id if key else "",
            user_id=principal.user_id or "",
            model_id=tool,
            call_kind=int(CallKind.MCP_TOOL_CALL),
            target_kind=int(ResourceKind.MCP_SERVER),
            target_name=label,
            status=status,
            latency_ms=latency_ms,
        )
    )


async def _run_tool(turn: _Turn, tool: _Tool, arguments: dict[str, Any]) -> tuple[ToolResult | None, str | None, int]:
    """(result, failure message, status) of one tools/call, metered and traced."""
    label, name = tool.spec.source.label, tool.tool.name
    started = time.perf_counter()
    status, result, failure = 200, None, None
    span = _tracer.start_span("mcp.tools/call") if turn.request.app[TRACING] else None
    try:
        beat = turn.events.heartbeat if turn.events is not None else None
        result = await turn.while_running(_connection(turn, tool.spec).call_tool(name, arguments), beat)
        if result.is_error:
            status = 422
    except ToolFailure as exc:
        status, failure = (504 if exc.timed_out else 502), exc.message
    finally:
        metrics.observe_tool_call(status)
        if tool.spec.rag is None:  # a RAG search meters itself (CALL_KIND_RAG_CONTEXT)
            _meter(turn, label, name, status, started)
        if span is not None:
            span.set_attribute("switchboard.mcp.server", label)
            span.set_attribute("switchboard.mcp.tool", name)
            span.set_attribute("switchboard.mcp.status", status)
            span.set_attribute("switchboard.mcp.argument_count", len(arguments))
            span.end()
    return result, failure, status


async def _mcp_call(turn: _Turn, tool: _Tool, raw_arguments: str, approval_request_id: str | None) -> tuple[str, bool]:
    """Run one MCP tool call with its events; returns (what the model sees, whether the call timed out)."""
    item: dict[str, Any] = {
        "id": translate.new_id("mcp"),
        "type": "mcp_call",
        "server_label": tool.spec.source.label,
        "name": tool.tool.name,
        "arguments": "",
        "output": None,
        "error": None,
        "approval_request_id": approval_request_id,
        "status": "in_progress",
    }
    index = await turn.add(item)
    common = {"item_id": item["id"], "output_index": index}
    await turn.event("response.mcp_call.in_progress", **common)
    await turn.event("response.mcp_call_arguments.delta", **common, delta=raw_arguments)
    await turn.event("response.mcp_call_arguments.done", **common, arguments=raw_arguments)
    arguments, invalid = _argument_errors(tool, raw_arguments)
    timed_out = False
    output: str | None = None
    error: dict[str, Any] | None = _execution_error(invalid) if invalid is not None else None
    if arguments is not None:
        turn.tool_calls += 1
        result, failure, status = await _run_tool(turn, tool, arguments)
        timed_out = status == 504
        if result is None:
            error = {"type": "http_error", "code": status, "message": failure or ""}
        elif result.is_error:
            error = _execution_error(result.text)
        else:
            output = result.text
    done = {
        **item,
        "arguments": raw_arguments,
        "output": output,
        "error": error,
        "status": "failed" if error is not None else "completed",
    }
    await turn.event("response.mcp_call.failed" if error is not None else "response.mcp_call.completed", **common)
    await turn.done(index, done)
    return ((output or "") if error is None else translate.error_text(error)), timed_out


async def _file_search_call(turn: _Turn, tool: _Tool, raw_arguments: str) -> tuple[str, bool]:
    """A RAG source's search as OpenAI's `file_search_call` item and events; returns what the model sees."""
    arguments, invalid = _argument_errors(tool, raw_arguments)
    query = str((arguments or {}).get("query") or "")
    item: dict[str, Any] = {
        "id": translate.new_id("fs"),
        "type": "file_search_call",
        "status": "in_progress",
        "queries": [query] if query else [],
        "results": None,
    }
    index = await turn.add(item)
    common = {"item_id": item["id"], "output_index": index}
    await turn.event("response.file_search_call.in_progress", **common)
    if arguments is None:
        await turn.done(index, {**item, "status": "failed"})
        return invalid or "", False
    turn.tool_calls += 1
    await turn.event("response.file_search_call.searching", **common)
    result, failure, status = await _run_tool(turn, tool, arguments)
    if result is None or result.is_error:
        await turn.done(index, {**item, "status": "failed"})
        return (failure or "") if result is None else result.text, status == 504
    await turn.event("response.file_search_call.completed", **common)
    found = results_of(result.text) if turn.include_results else None
    await turn.done(index, {**item, "status": "completed", "results": found})
    return result.text, False


def _execution_error(text: str) -> dict[str, Any]:
    """OpenAI's shape for a tool that ran (or was refused its arguments) and failed: the model may correct it."""
    return {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": text}]}


async def _model(turn: _Turn, chat: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """One model call: (its answer in the Chat Completions shape, the message item already streamed or None)."""
    await turn.call.next_model_call(chat)  # each model call of the loop is rate-limited (gateway.limits)
    if turn.events is not None:
        return await _streamed_model(turn, turn.events, chat)

    async def ask() -> dict[str, Any]:
        upstream = await post_json(turn.request, turn.route, Surface.CHAT, chat)
        _raw, parsed = await read_upstream_json(upstream, turn.call)
        return dict(parsed)

    parsed: dict[str, Any] = await turn.while_running(ask(), None)
    turn.call.add(parsed.get("usage"))
    return parsed, None


async def _streamed_model(
    turn: _Turn, events: ResponseStream, chat: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The model call of a streamed turn, streamed: its text reaches the client token by token as it comes (the
    final answer above all); its tool calls are gathered and acted on once the call ends, as in the unstreamed
    case. SSE comment keepalives go out while it is silent."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    usage: Any = None
    finish: str | None = None

    async def ask() -> None:
        nonlocal usage, finish
        upstream = await post_json(
            turn.request, turn.route, Surface.CHAT, {**chat, "stream": True, "stream_options": {"include_usage": True}}
        )
        try:
            async for chunk in chat_chunks(upstream, turn.call):
                usage = chunk.get("usage") or usage
                for delta in translate.stream_deltas(chunk):
                    if delta.text:
                        text.append(delta.text)
                        await events.text_delta(delta.text)
                    for piece in delta.tool_pieces:
                        _gather_call(calls, piece)
                    finish = delta.finish_reason or finish
        finally:
            upstream.release()

    await turn.while_running(ask(), events.keepalive)
    turn.call.add(usage)
    item = await events.close_text(translate.item_status(finish)) if text else None
    message: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}, item


def _gather_call(calls: dict[int, dict[str, Any]], piece: translate.ToolPiece) -> None:
    """Fold one streamed tool-call piece into the call it continues (by its index)."""
    call = calls.setdefault(piece.index, {"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
    call["id"] = piece.call_id or call["id"]
    call["function"]["name"] += piece.name
    call["function"]["arguments"] += piece.arguments


def _approval_item(tool: _Tool, arguments: str) -> dict[str, Any]:
    return {
        "id": translate.new_id("mcpr"),
        "type": "mcp_approval_request",
        "server_label": tool.spec.source.label,
        "name": tool.tool.name,
        "arguments": arguments,
    }


async def run(
    request: web.Request,
    call: Call,
    route: Route,
    plan: translate.ChatPlan,
    specs: list[McpToolSpec],
    *,
    events: ResponseStream | None,
    prior_items: list[dict[str, Any]],
    listings: list[dict[str, Any]],
    max_tool_calls: int | None,
) -> LoopResult:
    """One turn of the loop (see the module docstring). `prior_items` are the chain's earlier output items (where
    approval requests are found); `listings` its earlier mcp_list_tools items."""
    turn = _Turn(request, call, route, events, INCLUDE_RESULTS in plan.include)
    try:
        table = await _tool_table(turn, specs, listings)
        added, reason = await _answer_approvals(turn, table, plan.input_items, prior_items, max_tool_calls)
        if reason is None:
            reason = await _iterate(turn, table, plan, added, max_tool_calls)
    finally:
        for conn in turn.connections.values():
            await conn.close()
    tokens = call.tokens  # what the turn's model calls used, added to the call as each ended
    usage = {name: tokens.get(name, 0) for name in ("prompt_tokens", "completion_tokens", "total_tokens")}
    return LoopResult(turn.output, added, usage, table.listings, reason)


@dataclass
class _Table:
    """This turn's MCP tools: by model-visible name, as chat tools, and the chain's listings."""

    tools: dict[str, _Tool]
    chat_tools: list[dict[str, Any]]
    listings: list[dict[str, Any]]


async def _tool_table(turn: _Turn, specs: list[McpToolSpec], listings: list[dict[str, Any]]) -> _Table:
    known = {item.get("server_label"): item for item in listings if not item.get("error")}
    table = _Table({}, [], list(listings))
    names = ToolNames()
    for spec in specs:
        listing = known.get(spec.source.label)
        if spec.rag is not None:  # in process: its tool is known without a listing (file_search shows none)
            rag_tools = await _connection(turn, spec).list_tools()
            listing = _listing_item(spec.source.label, rag_tools, None)
        elif listing is None:
            listing = await _list(turn, spec)
            table.listings.append(listing)
        for tool in _tools_of(listing):
            if spec.allowed is not None and tool.name not in spec.allowed:
                continue
            name = names.add(spec.source.label, tool.name)
            schema = vet(tool.input_schema)
            table.tools[name] = _Tool(spec, tool, schema)
            # A refused schema never goes upstream (a provider may choke on it too); calling the tool says why.
            parameters = _ANY_OBJECT if schema.refusal is not None else tool.input_schema
            function = {"name": name, "description": tool.description, "parameters": parameters}
            table.chat_tools.append({"type": "function", "function": function})
    return table


async def _answer_approvals(
    turn: _Turn, table: _Table, input_items: list[Any], prior_items: list[dict[str, Any]], limit: int | None
) -> tuple[list[dict[str, Any]], str | None]:
    """Run the calls that approval responses in the input approve (declines are already tool messages). An approval
    request is answered once: a second response to it (in this input, or to one a call already ran for or a
    response already decided, earlier in the chain or conversation) runs nothing, and the calls it runs count
    against `max_tool_calls`."""
    added: list[dict[str, Any]] = []
    reason: str | None = None
    requests = {i.get("id"): i for i in prior_items if i.get("type") == "mcp_approval_request"}
    answered = {
        i.get("approval_request_id") for i in prior_items if i.get("type") in ("mcp_call", "mcp_approval_response")
    }
    for item in input_items:
        if item.get("type") != "mcp_approval_response":
            continue
        request_id = item.get("approval_request_id")
        asked = requests.get(request_id)
        if asked is None or request_id in answered:
            continue  # not a request of this chain, or one already answered: nothing (more) to run
        answered.add(request_id)
        approved = bool(item.get("approve"))
        label, name = str(asked.get("server_label") or ""), str(asked.get("name") or "")
        approval_decided(turn.request, turn.request[PRINCIPAL], label, name, approved)
        if not approved:
            continue
        target = next(
            (
                t
                for t in table.tools.values()
                if t.spec.source.label == asked.get("server_label") and t.tool.name == asked.get("name")
            ),
            None,
        )
        if target is None or not target.spec.needs_approval(target.tool.name):
            # Not among this request's tools, or not one it gates by approval: conversation items are the client's
            # to write, so a request found there may be forged, and only a gated tool (the caller's own, which it
            # may run anyway) runs on an approval. A preset agent's tools never ask, and run on its authority.
            continue
        if limit is not None and turn.tool_calls >= limit:
            reason = "max_tool_calls"
            break
        request_id = str(asked["id"])
        text, timed_out = await _mcp_call(turn, target, str(asked.get("arguments") or ""), request_id)
        added.append({"role": "tool", "tool_call_id": request_id, "content": text})
        if timed_out:
            reason = "tool_call_timeout"
    return added, reason


@dataclass
class _Round:
    assistant: dict[str, Any]
    answers: list[dict[str, Any]] = field(default_factory=list)
    ends_turn: bool = False
    reason: str | None = None


async def _round(
    turn: _Turn, table: _Table, text: str | None, calls: list[dict[str, Any]], limit: int | None
) -> _Round:
    """Act on one model answer's tool calls (see the module docstring)."""
    done = _Round({"role": "assistant", "content": text, "tool_calls": []})
    for raw in calls:  # as `translate.answer_of` gives them: each with an id and a name
        call_id, name, arguments = raw["id"], raw["function"]["name"], raw["function"]["arguments"]
        target = table.tools.get(name)
        if target is None:  # a client function tool (or a name we do not serve): the client runs it
            item = translate.function_call_item(call_id, name, arguments)
            if turn.events is not None:
                await turn.events.function_call(item)
            turn.output.append(item)
            done.assistant["tool_calls"].append(translate.chat_tool_call(call_id, name, arguments))
            done.ends_turn = True
        elif target.spec.needs_approval(target.tool.name):
            asked = _approval_item(target, arguments)
            index = await turn.add(asked)
            await turn.done(index, asked)
            done.assistant["tool_calls"].append(translate.chat_tool_call(asked["id"], name, arguments))
            done.ends_turn = True
        elif limit is not None and turn.tool_calls >= limit:
            done.reason = "max_tool_calls"
        else:
            done.assistant["tool_calls"].append(translate.chat_tool_call(call_id, name, arguments))
            if target.spec.rag is not None:
                output, timed_out = await _file_search_call(turn, target, arguments)
            else:
                output, timed_out = await _mcp_call(turn, target, arguments, None)
            done.answers.append({"role": "tool", "tool_call_id": call_id, "content": output})
            if timed_out:
                done.reason = "tool_call_timeout"
    if not done.assistant["tool_calls"]:
        del done.assistant["tool_calls"]
    return done


async def _iterate(
    turn: _Turn, table: _Table, plan: translate.ChatPlan, added: list[dict[str, Any]], limit: int | None
) -> str | None:
    """Model calls until an answer without tool calls, a round that needs the client, or a bound (its reason)."""
    chat = dict(plan.payload)
    if table.chat_tools:
        chat["tools"] = [*chat.get("tools", []), *table.chat_tools]
        if plan.echo.get("tool_choice") in ("none", "auto", "required"):
            chat["tool_choice"] = plan.echo["tool_choice"]
    max_iterations = turn.request.app[MCP_RUNTIME].settings.responses_max_tool_iterations
    for _ in range(max_iterations):
        if turn.gone():
            raise ConnectionResetError
        chat["messages"] = translate.answered([*plan.payload["messages"], *added])
        parsed, streamed = await _model(turn, chat)
        text, calls, finish_reason = translate.answer_of(parsed)
        if text:
            status = translate.item_status(finish_reason)
            turn.output.append(streamed if streamed is not None else translate.message_item(text, status=status))
        if not calls:
            if text:
                added.append({"role": "assistant", "content": text})
            return "max_output_tokens" if finish_reason == "length" else None
        done = await _round(turn, table, text, calls, limit)
        if done.assistant.get("tool_calls") or text:
            added.append(done.assistant)
        added += done.answers
        if done.reason is not None or done.ends_turn:
            return done.reason
    return "max_iterations"
