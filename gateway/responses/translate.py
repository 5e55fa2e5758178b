"""Responses API <-> Chat Completions: every provider behind the gateway speaks Chat Completions, so a Responses
request becomes a chat request and the chat answer becomes Responses output items.

Request: `instructions` becomes the first system message (not carried over to follow-ups); `input` (a string or
items: messages with text/image parts, function_call, function_call_output) becomes messages after the context of
`previous_response_id` (or of a conversation); input item ids are each the client's to send once; flat function
tools become nested chat tools; sampling and output limits carry over. Before each model call the history goes
through `answered`, which leaves out what chat models refuse: tool calls nobody answered, answers to no call.
Answer: the assistant text becomes a `message` item with one `output_text` part, each tool call a `function_call`
item (with a `call_…` id of ours when the backend sent none; a call naming no function is the backend's failure);
`finish_reason: length` makes the response and its message `incomplete`.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.providers import invalid_answer
from server.domain.conversation_items import TEXT_PART_TYPES, image_url
from server.domain.json_values import count_or_zero, is_integer
from server.errors import InvalidArgument
from server.mcp.toolnames import model_name

__all__ = [
    "DECLINED",
    "ChatPlan",
    "answered",
    "call_id",
    "chat_tool_call",
    "error_text",
    "function_call_item",
    "function_name",
    "item_status",
    "message_item",
    "messages",
    "new_id",
    "plan",
    "refusal_item",
    "response_object",
    "usage_of",
]

_ROLES = frozenset({"user", "assistant", "system", "developer"})


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(16)}"


@dataclass
class ChatPlan:
    """The chat request to send, and what the response object echoes back."""

    payload: dict[str, Any]
    input_items: list[Any]
    context: list[dict[str, Any]]  # messages before this turn's input (from previous_response_id), no instructions
    turn: list[dict[str, Any]]  # this turn's input as messages
    echo: dict[str, Any] = field(default_factory=dict)
    include: tuple[str, ...] = ()  # the request's `include` (extra output data, e.g. file_search_call.results)


def _part_text(part: dict[str, Any], where: str) -> str:
    text = part.get("text", "")
    if not isinstance(text, str):
        raise InvalidArgument(f"'{where}.text' must be a string.", field=f"{where}.text")
    return text


def _text_of(parts: Any, field_name: str) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list):
        return "".join(
            _part_text(p, f"{field_name}[{i}]")
            for i, p in enumerate(parts)
            if isinstance(p, dict) and p.get("type") in TEXT_PART_TYPES
        )
    raise InvalidArgument(f"'{field_name}' must be a string or a list of content parts.", field=field_name)


def _user_content(content: Any, field_name: str) -> Any:
    """A user message's parts as chat parts: the parts a conversation item may hold (server.domain.conversation_items,
    whose stored history comes through here on every turn) but a refusal, which is no user's."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise InvalidArgument(f"'{field_name}' must be a string or a list of content parts.", field=field_name)
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in TEXT_PART_TYPES:
            parts.append({"type": "text", "text": _part_text(part, f"{field_name}[{i}]")})
        elif kind == "input_image":
            url = image_url(part, f"{field_name}[{i}]")
            parts.append({"type": "image_url", "image_url": {"url": url, "detail": part.get("detail", "auto")}})
        else:
            raise InvalidArgument(f"Content part type {kind!r} is not supported.", field=f"{field_name}[{i}].type")
    return parts


def _message(item: dict[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if not isinstance(role, str) or role not in _ROLES:
        raise InvalidArgument(
            f"'{where}.role' must be one of user, assistant, system, developer.", field=f"{where}.role"
        )
    content = item.get("content", "")
    if role == "user":
        return {"role": "user", "content": _user_content(content, f"{where}.content")}
    return {"role": "assistant" if role == "assistant" else "system", "content": _text_of(content, f"{where}.content")}


def _function_call(item: dict[str, Any], where: str) -> dict[str, Any]:
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise InvalidArgument("function_call items need call_id and name.", field=where)
    arguments = item.get("arguments")
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": str(arguments or "")}}


def _function_output(item: dict[str, Any], where: str) -> dict[str, Any]:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidArgument("function_call_output items need call_id.", field=f"{where}.call_id")
    return {"role": "tool", "tool_call_id": call_id, "content": _text_of(item.get("output", ""), f"{where}.output")}


_MCP_ITEMS = frozenset({"mcp_list_tools", "mcp_call", "mcp_approval_request", "mcp_approval_response"})


def _assistant_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [chat_tool_call(call_id, name, arguments)]}


def chat_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _mcp_messages(item: dict[str, Any], kind: str, where: str) -> list[dict[str, Any]]:
    """MCP loop items as chat history: a call is an assistant tool call and its tool message (an approved call
    answers the tool call its approval request stands for, whose id is the request's); a pending approval request is
    a tool call that its approval response (or a later mcp_call) answers; listings are not chat."""
    label, name = str(item.get("server_label") or ""), str(item.get("name") or "")
    if kind == "mcp_call":
        error = item.get("error")
        text = str(item.get("output") or "") if error in (None, "") else error_text(error)
        approval = item.get("approval_request_id")
        call_id = str(approval or item.get("id") or new_id("mcp"))
        tool = {"role": "tool", "tool_call_id": call_id, "content": text}
        if approval:
            return [tool]
        return [_assistant_call(call_id, model_name(label, name), str(item.get("arguments") or "")), tool]
    if kind == "mcp_approval_request":
        request_id = item.get("id")
        if not isinstance(request_id, str) or not request_id:
            raise InvalidArgument("mcp_approval_request items need their id.", field=f"{where}.id")
        return [_assistant_call(request_id, model_name(label, name), str(item.get("arguments") or ""))]
    if kind == "mcp_approval_response":
        request_id = item.get("approval_request_id")
        if not isinstance(request_id, str) or not request_id:
            raise InvalidArgument(
                "mcp_approval_response items need approval_request_id.", field=f"{where}.approval_request_id"
            )
        if not isinstance(item.get("approve"), bool):
            raise InvalidArgument("mcp_approval_response items need approve (a boolean).", field=f"{where}.approve")
        if not item["approve"]:
            return [{"role": "tool", "tool_call_id": request_id, "content": DECLINED}]
    return []


DECLINED = "The user declined to run this tool call."


def error_text(error: Any) -> str:
    """The text of an mcp_call error, in any of OpenAI's shapes (a string, or a typed object)."""
    if isinstance(error, str):
        return error
    if isinstance(error, dict):
        if isinstance(error.get("message"), str):
            return str(error["message"])
        content = error.get("content")
        if isinstance(content, list):
            return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return orjson.dumps(error).decode()


def _is_call(message: dict[str, Any]) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls")) and not message.get("content")


def _joined_rounds(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Calls of one model answer as one assistant message, followed by their answers. A conversation's items hold
    a round's calls one by one (a client's function_call, then an MCP call with its output, or an approval request),
    with the client's output of its function after them all; as messages, a call's assistant message was followed
    by the next call's instead of its answer, which chat models refuse. A call message that comes while earlier
    calls are still unanswered belongs to their round; one after every call was answered starts a new round."""
    out: list[dict[str, Any]] = []
    at = 0
    while at < len(history):
        message = history[at]
        at += 1
        if not _is_call(message):
            out.append(message)
            continue
        calls = list(message["tool_calls"])
        pending = {c.get("id") for c in calls}
        answers: list[dict[str, Any]] = []
        while at < len(history):
            following = history[at]
            if following.get("role") == "tool":
                answers.append(following)
                pending.discard(following.get("tool_call_id"))
            elif pending and _is_call(following):
                calls += following["tool_calls"]
                pending.update(c.get("id") for c in following["tool_calls"])
            else:
                break
            at += 1
        out += [{**message, "tool_calls": calls}, *answers]
    return out


def answered(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The history as chat models take it: a round's calls in one message before their answers (`_joined_rounds`),
    without tool calls nobody answered (an approval request the user moved on from) and without answers to no
    earlier call (a conversation's history window that begins between a call and its output, a call item the user
    deleted), all of which chat models refuse. Applied to the whole history a model call sends, as this turn's input
    (or the tool loop's approvals) may answer a call of the context."""
    history = _joined_rounds(history)
    answers = {m.get("tool_call_id") for m in history if m.get("role") == "tool"}
    asked: set[Any] = set()
    out: list[dict[str, Any]] = []
    for message in history:
        if message.get("role") == "tool":
            if message.get("tool_call_id") in asked:
                out.append(message)
            continue
        calls = message.get("tool_calls")
        if not calls:
            out.append(message)
            continue
        kept = [c for c in calls if c.get("id") in answers]
        asked.update(c.get("id") for c in kept)
        if kept:
            out.append({**message, "tool_calls": kept})
        elif message.get("content"):
            out.append({k: v for k, v in message.items() if k != "tool_calls"})
    return out


def messages(items: list[Any]) -> list[dict[str, Any]]:
    """Input items as chat messages; consecutive function calls share one assistant message, as chat requires."""
    out: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise InvalidArgument("Each input item must be an object.", field=where)
        kind = item.get("type", "message")
        if not isinstance(kind, str):
            raise InvalidArgument(f"'{where}.type' must be a string.", field=f"{where}.type")
        if kind == "message":
            out.append(_message(item, where))
        elif kind == "function_call":
            call = _function_call(item, where)
            last = out[-1] if out else None
            if last is not None and last.get("tool_calls") and not last.get("content"):
                last["tool_calls"].append(call)
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            out.append(_function_output(item, where))
        elif kind in _MCP_ITEMS:
            out += _mcp_messages(item, kind, where)
        elif kind == "file_search_call":
            continue  # a search the gateway ran: its results reached the model in that turn
        else:
            raise InvalidArgument(f"Input item type {kind!r} is not supported.", field=f"{where}.type")
    return out


def _tools(tools: Any) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise InvalidArgument("'tools' must be an array.", field="tools")
    out = []
    for i, tool in enumerate(tools):
        if isinstance(tool, dict) and tool.get("type") in ("mcp", "file_search"):
            continue  # served by the tool loop (gateway.responses.mcp_tools, gateway.responses.rag_tools)
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise InvalidArgument(f"Tool type {kind!r} is not supported here.", field=f"tools[{i}].type")
        name = tool.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidArgument("Function tools need a name.", field=f"tools[{i}].name")
        function: dict[str, Any] = {"name": name, "parameters": tool.get("parameters") or {"type": "object"}}
        if tool.get("description"):
            function["description"] = tool["description"]
        if tool.get("strict") is not None:
            function["strict"] = bool(tool["strict"])
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if choice is None or choice in ("none", "auto", "required"):
        return choice
    if isinstance(choice, dict) and choice.get("type") == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise InvalidArgument("'tool_choice' must be none, auto, required or a function.", field="tool_choice")


def _response_format(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, dict) or not isinstance(text.get("format"), dict):
        return None
    fmt = text["format"]
    if fmt.get("type") == "json_object":
        return {"type": "json_object"}
    if fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    return None


def _echoed_tool(tool: Any) -> Any:
    """A tool as the response echoes it: an MCP tool's per-user token and header values are credentials, never
    sent back (or stored)."""
    if not isinstance(tool, dict) or tool.get("type") != "mcp":
        return tool
    echoed = {k: v for k, v in tool.items() if k not in ("authorization", "headers")}
    if isinstance(tool.get("headers"), dict):
        echoed["headers"] = dict.fromkeys(tool["headers"], "<redacted>")
    return echoed


def plan(payload: dict[str, Any], context: list[dict[str, Any]]) -> ChatPlan:
    """The chat request for a Responses request, after `context` (the previous response's history)."""
    raw = payload.get("input")
    if isinstance(raw, str):
        items: list[Any] = [{"type": "message", "role": "user", "content": raw}]
    elif isinstance(raw, list) and raw:
        items = raw
    else:
        raise InvalidArgument("'input' must be a string or a non-empty array of input items.", field="input")
    turn = _turn(items, context)
    history = list(context) + turn
    instructions = payload.get("instructions")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise InvalidArgument("'instructions' must be a string.", field="instructions")
        history = [{"role": "system", "content": instructions}, *history]
    chat: dict[str, Any] = {"messages": history}
    tools = _tools(payload.get("tools"))
    if tools:
        chat["tools"] = tools
    choice = _tool_choice(payload.get("tool_choice"))
    if choice is not None and tools:
        chat["tool_choice"] = choice
    for name in ("temperature", "top_p", "parallel_tool_calls", "user"):
        if payload.get(name) is not None:
            chat[name] = payload[name]
    limit = payload.get("max_output_tokens")
    if limit is not None:
        if not is_integer(limit) or limit < 1:
            raise InvalidArgument("'max_output_tokens' must be a positive integer.", field="max_output_tokens")
        chat["max_tokens"] = limit
    fmt = _response_format(payload.get("text"))
    if fmt is not None:
        chat["response_format"] = fmt
    echo = {
        "instructions": instructions,
        "max_output_tokens": limit,
        "temperature": _number(payload, "temperature", 1.0),
        "top_p": _number(payload, "top_p", 1.0),
        "tools": [_echoed_tool(t) for t in payload.get("tools") or []],
        "tool_choice": payload.get("tool_choice") or "auto",
        "parallel_tool_calls": payload.get("parallel_tool_calls") is not False,  # null is "not set" here too
        "text": payload.get("text") or {"format": {"type": "text"}},
        "metadata": payload.get("metadata") or {},
        "user": payload.get("user"),
        "store": bool(payload.get("store", True)),
        "previous_response_id": payload.get("previous_response_id"),
    }
    return ChatPlan(chat, _input_items(items), list(context), turn, echo, _include(payload))


def _number(payload: dict[str, Any], name: str, default: float) -> float:
    """A sampling number as echoed: null is "not set" (the SDK sends None so), as in chat completions."""
    value = payload.get(name)
    return default if value is None else float(value)


def _turn(items: list[Any], context: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This turn's input as messages. Input with no chat message (listings, approvals) and no earlier turn would send
    the model none at all; an approval response there answers a request of no chain, so its id is what is wrong."""
    turn = messages(items)
    if turn or context:
        return turn
    for i, item in enumerate(items):
        if item.get("type") == "mcp_approval_response":
            raise InvalidArgument(
                "No approval request with this id in this response chain.", field=f"input[{i}].approval_request_id"
            )
    raise InvalidArgument("'input' has no message for the model.", field="input")


def _include(payload: dict[str, Any]) -> tuple[str, ...]:
    include = payload.get("include")
    if include is not None and (not isinstance(include, list) or not all(isinstance(i, str) for i in include)):
        raise InvalidArgument("'include' must be an array of strings.", field="include")
    return tuple(include or ())


_ID_PREFIX = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "mcp_approval_response": "mcpa",
}


def _input_items(items: list[Any]) -> list[dict[str, Any]]:
    """The input as `input_items` lists it. An id the client sent is kept, so it may name one item only, as OpenAI
    requires too: `after=<id>` paging through the list needs each id to mark one place."""
    seen: set[str] = set()
    for i, item in enumerate(items):
        item_id = item.get("id")
        if item_id is None or item_id == "":
            continue
        if not isinstance(item_id, str):
            raise InvalidArgument(f"'input[{i}].id' must be a string.", field=f"input[{i}].id")
        if item_id in seen:
            raise InvalidArgument(
                f"Duplicate item found with id '{item_id}'. Remove duplicate items from your input and try again.",
                field=f"input[{i}].id",
            )
        seen.add(item_id)
    return [_listed(item) for item in items]


def _listed(item: dict[str, Any]) -> dict[str, Any]:
    """An input item as `input_items` lists it: typed, with an id and a status."""
    kind = item.get("type", "message")
    listed = {**item, "id": item.get("id") or new_id(_ID_PREFIX.get(kind, "item")), "type": kind}
    listed.setdefault("status", "completed")
    if kind == "message" and isinstance(listed.get("content"), str):
        part = "output_text" if listed.get("role") == "assistant" else "input_text"
        listed["content"] = [{"type": part, "text": listed["content"]}]
    return listed


def item_status(finish_reason: Any) -> str:
    """The status of the message a model call ended: one cut off at the output limit is `incomplete`, as OpenAI
    marks it (and its response)."""
    return "incomplete" if finish_reason == "length" else "completed"


def message_item(text: str, *, status: str = "completed", item_id: str | None = None) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}]
    return {
        "id": item_id or new_id("msg"),
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }


def refusal_item(text: str, *, item_id: str | None = None) -> dict[str, Any]:
    """An assistant message refusing to answer: OpenAI's `refusal` content part."""
    return {
        "id": item_id or new_id("msg"),
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "refusal", "refusal": text}],
    }


def function_call_item(call_id: str, name: str, arguments: str, *, item_id: str | None = None) -> dict[str, Any]:
    return {
        "id": item_id or new_id("fc"),
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def answer_of(parsed: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]], Any]:
    """The text, tool calls (as `chat_tool_call`s, each with an id: `call_id`) and finish reason of a chat answer's
    first choice; the backend's failure (`invalid_answer`) when its message or a tool call is not an object of the
    shape they have, or a call names no function."""
    choices = parsed.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise invalid_answer()
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    calls = message.get("tool_calls") or [] if isinstance(message, dict) else None
    if not isinstance(calls, list) or not all(
        isinstance(call, dict) and isinstance(call.get("function") or {}, dict) for call in calls
    ):
        raise invalid_answer()
    text = str(message["content"]) if message.get("content") else None
    return text, [_answer_call(call) for call in calls], choice.get("finish_reason")


def _answer_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function") or {}
    return chat_tool_call(
        call_id(call.get("id")), function_name(function.get("name")), str(function.get("arguments") or "")
    )


def call_id(sent: Any) -> str:
    """A tool call's id as the backend sent it, or one of ours when it sent none: the client answers a call by its id
    (`function_call_output.call_id`), and a conversation keeps no call without one."""
    return str(sent) if sent not in (None, "") else new_id("call")


def function_name(sent: Any) -> str:
    """The function a tool call names; a call that names none is the backend's failure (`invalid_answer`): no one
    could run it."""
    if not isinstance(sent, str) or not sent:
        raise invalid_answer()
    return sent


@dataclass(frozen=True, slots=True)
class ToolPiece:
    """One streamed tool-call delta: the call it continues (by `index`) and what it adds."""

    index: int
    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class StreamDelta:
    """The first choice's delta in one streamed chat chunk."""

    text: str
    tool_pieces: list[ToolPiece]
    finish_reason: str | None


def stream_deltas(chunk: dict[str, Any]) -> list[StreamDelta]:
    """The first choice's deltas in one streamed chat chunk (none in the usage chunk); the backend's failure
    (`invalid_answer`) when a delta, its text or a tool-call piece is not of the shape it has, as `answer_of` does for
    a whole answer: a stream the gateway cannot relay ends `response.failed`."""
    choices = chunk.get("choices")
    if choices is not None and not isinstance(choices, list):
        raise invalid_answer()
    deltas = []
    for choice in choices or ():
        if not isinstance(choice, dict) or choice.get("index", 0) != 0:
            continue
        delta = choice.get("delta") or {}
        text = delta.get("content") or "" if isinstance(delta, dict) else None
        pieces = delta.get("tool_calls") or [] if isinstance(delta, dict) else None
        if not isinstance(text, str) or not isinstance(pieces, list):
            raise invalid_answer()
        reason = choice.get("finish_reason")
        deltas.append(
            StreamDelta(
                text,
                [_tool_piece(piece) for piece in pieces if isinstance(piece, dict)],
                reason if isinstance(reason, str) and reason else None,
            )
        )
    return deltas


def _tool_piece(piece: dict[str, Any]) -> ToolPiece:
    index, function = piece.get("index") or 0, piece.get("function") or {}
    if not isinstance(index, int) or not isinstance(function, dict):
        raise invalid_answer()
    call_id, name, arguments = piece.get("id") or "", function.get("name") or "", function.get("arguments") or ""
    if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str)):
        raise invalid_answer()
    return ToolPiece(index, call_id, name, arguments)


def usage_of(chat_usage: Any) -> dict[str, Any]:
    """A chat usage as Responses' (a count the upstream sent as anything but a non-negative integer is 0)."""
    usage = chat_usage if isinstance(chat_usage, dict) else {}
    prompt, completion = count_or_zero(usage.get("prompt_tokens")), count_or_zero(usage.get("completion_tokens"))
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": completion,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": count_or_zero(usage.get("total_tokens")) or prompt + completion,
    }


def response_object(
    response_id: str,
    model: str,
    echo: dict[str, Any],
    *,
    status: str,
    output: list[Any],
    usage: dict[str, Any] | None,
    created_at: int | None = None,
    error: dict[str, Any] | None = None,
    incomplete_reason: str | None = None,
) -> dict[str, Any]:
    """A full Response, with every field strict clients require (null where allowed, numbers as numbers)."""
    now = int(time.time())
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at or now,
        "completed_at": now if status in ("completed", "incomplete", "failed") else None,
        "status": status,
        "background": False,
        "error": error,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "model": model,
        "output": output,
        "usage": usage,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "truncation": "disabled",
        "top_logprobs": 0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tool_calls": None,
        "safety_identifier": None,
        "prompt_cache_key": None,
        **echo,
    }
