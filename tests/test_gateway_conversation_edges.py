"""State kept across /v1/responses calls (conversations and stored responses) at its edges, through the real gateway,
the real management server and the loopback fake model (tests/fakes/upstream.py). Each was once a bug:

- History sent upstream: a `tool` message whose assistant tool call is not before it (the 128-item history window
  starting between a function_call and its output, a function_call item the user deleted) is left out, as chat
  providers refuse it; a call the conversation left pending is kept when this turn's input answers it.
- Content parts: a conversation refuses, when the item is stored, a part no chat model can be sent (a file, an image
  by `file_id`, audio, a user's refusal) or a message of no parts, instead of storing it and failing every later turn
  on a param the caller never sent; an image by URL is kept and sent.
- Tool calls from the model: one without an id gets a `call_…` id of ours (streamed, unstreamed, in the tool loop), so
  the turn is kept in its conversation; one naming no function is the backend's failure (502, `response.failed`).
- A conversation deleted while a turn on it runs: the stored response is still stored (the stream already said so),
  and no ERROR or traceback is logged for what is a user's ordinary action.
- A member removed from the tenant no longer reads their stored responses, as they no longer read conversations.
- Input item ids: one id sent twice is refused (as OpenAI does), so `after=<id>` paging of input_items ends.
- An unknown `conversation` is a 404 naming `conversation`, the request's param.
- A model answer cut off at `finish_reason: length` makes its message item `incomplete` with the response.
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest

from server.mcp.toolnames import model_name
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.mcp_servers import serve_asgi, tools_server
from tests.gateway_fixtures import Fakes, Gateway, shared_mcp_server
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, create_models
from tests.world import TENANTS, make_world, must

pytestmark = ONE_BACKEND

# `vector_store_ids: []` opts out of the default RAG tools: the turn takes the plain (loop-less) path.
_NO_RAGS = {"type": "file_search", "vector_store_ids": []}

_WEATHER_TURN: list[Any] = [
    {"role": "user", "content": "weather?"},
    {"type": "function_call", "call_id": "call_w", "name": "weather", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_w", "output": "sunny"},
]


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _req(gateway: Gateway, verb: str, path: str, key: str, body: Any = None) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(verb, f"{gateway.base_url}{path}", json=body, headers=_headers(key)) as resp,
    ):
        raw = await resp.read()
        try:
            return resp.status, orjson.loads(raw)
        except orjson.JSONDecodeError:
            return resp.status, raw


async def _stream(gateway: Gateway, key: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """A streamed POST /v1/responses: its events, in order."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/responses", json={**body, "stream": True}, headers=_headers(key)) as resp,
    ):
        assert resp.status == 200, await resp.text()
        raw = await asyncio.wait_for(resp.read(), 15)
    return [orjson.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: ")]


async def _new_conversation(gateway: Gateway, key: str, items: list[Any] | None = None) -> str:
    status, body = await _req(gateway, "POST", "/conversations", key, {"items": items or []})
    assert status == 200, body
    return str(body["id"])


async def _items(gateway: Gateway, key: str, conversation: str) -> list[dict[str, Any]]:
    status, listed = await _req(gateway, "GET", f"/conversations/{conversation}/items?order=asc&limit=100", key)
    assert status == 200, listed
    return list(listed["data"])


async def _turn(gateway: Gateway, key: str, model: str, conversation: str, **more: Any) -> tuple[int, Any]:
    body = {"model": model, "input": "and now?", "conversation": conversation, "tools": [_NO_RAGS], **more}
    return await _req(gateway, "POST", "/responses", key, body)


def _assert_every_tool_message_answers_a_call(messages: list[dict[str, Any]]) -> None:
    """Chat Completions upstreams (OpenAI, vLLM) refuse a `tool` message that does not follow an assistant message
    carrying its tool call (OpenAI: 400 "messages with role 'tool' must be a response to a preceding message with
    'tool_calls'"), and an assistant message whose tool calls are not all answered by the `tool` messages right after
    it ("An assistant message with 'tool_calls' must be followed by tool messages responding to each
    'tool_call_id'")."""
    calls: set[str] = set()
    for at, message in enumerate(messages):
        for call in message.get("tool_calls") or ():
            calls.add(call["id"])
        if message.get("role") == "tool":
            assert message["tool_call_id"] in calls, messages[:3]
        asked = {call["id"] for call in message.get("tool_calls") or ()}
        answers = itertools.takewhile(lambda m: m.get("role") == "tool", messages[at + 1 :])
        assert asked <= {m["tool_call_id"] for m in answers}, messages


@pytest.fixture
def script(fakes: Fakes) -> Iterator[list[dict[str, Any]]]:
    """The fake model's script, empty before and after the test (an answer a test left unused would answer the next
    test's call)."""
    fakes.openai.script.clear()
    yield fakes.openai.script
    fakes.openai.script.clear()


# --- the history sent upstream ------------------------------------------------------------------------------------


async def test_a_history_window_starting_after_a_call_sends_no_orphan_tool_message(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, script: list[dict[str, Any]]
) -> None:
    """With 130 items the 128-item window starts at a function_call_output whose function_call fell out of it; sent
    as it is, a real upstream refuses the turn, nothing is appended, the window never moves and the conversation is
    stuck for good."""
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key, _WEATHER_TURN)
    for start in range(0, 127, 18):
        batch = [{"role": "user", "content": f"m{i}"} for i in range(start, min(start + 18, 127))]
        status, body = await _req(gateway, "POST", f"/conversations/{conv}/items", key, {"items": batch})
        assert status == 200, body
    status, body = await _turn(gateway, key, gw_world.model("chat"), conv)
    assert status == 200, body
    sent = (fakes.openai.last().json or {})["messages"]
    _assert_every_tool_message_answers_a_call(sent)
    assert sent[0] == {"role": "user", "content": [{"type": "text", "text": "m0"}]}


async def test_a_deleted_function_call_item_leaves_no_orphan_tool_message(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, script: list[dict[str, Any]]
) -> None:
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key, _WEATHER_TURN)
    call_item = (await _items(gateway, key, conv))[1]
    assert call_item["type"] == "function_call"
    status, _ = await _req(gateway, "DELETE", f"/conversations/{conv}/items/{call_item['id']}", key)
    assert status == 200
    status, body = await _turn(gateway, key, gw_world.model("chat"), conv)
    assert status == 200, body
    sent = (fakes.openai.last().json or {})["messages"]
    _assert_every_tool_message_answers_a_call(sent)
    assert [m["role"] for m in sent] == ["user", "user"]


async def test_a_call_the_conversation_left_pending_is_answered_by_the_next_turn(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, script: list[dict[str, Any]]
) -> None:
    """A turn that ended in a function call for the client: the next turn's input is its output, and the call
    must reach the model with it (the conversation's history alone shows the call unanswered)."""
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key, _WEATHER_TURN[:2])
    output = {"type": "function_call_output", "call_id": "call_w", "output": "sunny"}
    status, body = await _turn(gateway, key, gw_world.model("chat"), conv, input=[output])
    assert status == 200, body
    sent = (fakes.openai.last().json or {})["messages"]
    _assert_every_tool_message_answers_a_call(sent)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[1]["tool_calls"][0]["id"] == "call_w"


# --- content parts ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("part", "param"),
    [
        ({"type": "input_file", "file_id": "file_abc", "filename": "a.pdf"}, "items[0].content[1].type"),
        ({"type": "input_image", "file_id": "file_img"}, "items[0].content[1].image_url"),
        ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}, "items[0].content[1].type"),
        ({"type": "refusal", "refusal": "no"}, "items[0].content[1].type"),
    ],
)
async def test_a_part_no_model_can_be_sent_is_refused_when_stored(
    gateway: Gateway, gw_world: GatewayWorld, part: dict[str, Any], param: str
) -> None:
    """Once stored, every later Responses turn on the conversation was a 400 naming `input[0].content[1]…`, a param
    the caller never sent (the stored history's index): the conversation was unusable until the item was deleted."""
    key = gw_world.keys["all"]
    items = [{"role": "user", "content": [{"type": "input_text", "text": "see attached"}, part]}]
    status, body = await _req(gateway, "POST", "/conversations", key, {"items": items})
    assert status == 400, body
    assert body["error"]["param"] == param, body
    conv = await _new_conversation(gateway, key)
    status, body = await _req(gateway, "POST", f"/conversations/{conv}/items", key, {"items": items})
    assert (status, body["error"]["param"]) == (400, param), body
    assert await _items(gateway, key, conv) == []


async def test_a_message_of_no_content_parts_is_refused_when_stored(gateway: Gateway, gw_world: GatewayWorld) -> None:
    """Stored, it went upstream as `content: []` on every later turn, which chat models refuse (OpenAI: "empty
    array. Expected an array with minimum length 1"); so it is refused as a turn's input too."""
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key)
    items = [{"type": "message", "role": "user", "content": []}]
    status, body = await _req(gateway, "POST", f"/conversations/{conv}/items", key, {"items": items})
    assert (status, body["error"]["param"]) == (400, "items[0].content"), body
    assert await _items(gateway, key, conv) == []
    status, body = await _turn(gateway, key, gw_world.model("chat"), conv, input=items)
    assert (status, body["error"]["param"]) == (400, "input[0].content"), body


async def test_an_image_by_url_is_stored_and_sent(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, script: list[dict[str, Any]]
) -> None:
    key = gw_world.keys["all"]
    image = {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"}
    conv = await _new_conversation(gateway, key, [{"role": "user", "content": [image]}])
    status, body = await _turn(gateway, key, gw_world.model("chat"), conv)
    assert status == 200, body
    sent = (fakes.openai.last().json or {})["messages"]
    assert sent[0]["content"] == [{"type": "image_url", "image_url": {"url": image["image_url"], "detail": "low"}}]


# --- tool calls from the model ------------------------------------------------------------------------------------


def _calling_f(gw_world: GatewayWorld, conversation: str) -> dict[str, Any]:
    """A turn offering the client function `f`, which the scripted model calls."""
    tools = [{"type": "function", "name": "f"}, _NO_RAGS]
    return {"model": gw_world.model("chat"), "input": "hi", "conversation": conversation, "tools": tools}


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_call_without_an_id_gets_one_and_the_turn_is_kept(
    gateway: Gateway, gw_world: GatewayWorld, script: list[dict[str, Any]], stream: bool
) -> None:
    """The upstream's call had no id: unstreamed, saving the turn failed validation after the model was called and
    the client got a 400 blaming `input[1].call_id`; streamed, `response.completed`, then an ERROR traceback and an
    empty conversation."""
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key)
    script.append({"tool_calls": [{"id": "", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    body = _calling_f(gw_world, conv)
    with gateway.logs_no_error():
        if stream:
            events = await _stream(gateway, key, body)
            assert events[-1]["type"] == "response.completed", events[-1]
            response = events[-1]["response"]
        else:
            status, response = await _req(gateway, "POST", "/responses", key, body)
            assert status == 200, response
    call = response["output"][0]
    assert call["type"] == "function_call" and call["call_id"].startswith("call_") and call["name"] == "f"
    kept = await _items(gateway, key, conv)
    assert [i["type"] for i in kept] == ["message", "function_call"]
    assert (kept[1]["id"], kept[1]["call_id"]) == (call["id"], call["call_id"])


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_call_naming_no_function_is_the_backends_failure(
    gateway: Gateway, gw_world: GatewayWorld, script: list[dict[str, Any]], stream: bool
) -> None:
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key)
    script.append({"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "", "arguments": "{}"}}]})
    body = _calling_f(gw_world, conv)
    if stream:
        events = await _stream(gateway, key, body)
        assert events[-1]["type"] == "response.failed", events[-1]
        assert not [e for e in events if e["type"] == "response.output_item.added"], events
    else:
        status, answer = await _req(gateway, "POST", "/responses", key, body)
        assert status == 502, answer
    assert await _items(gateway, key, conv) == []


# --- the tool loop's model calls (a tools/list-only MCP server starts the loop) -------------------------------------


@pytest.fixture(scope="module")
def tools_port() -> Iterator[int]:
    with serve_asgi(tools_server()) as port:
        yield port


@pytest.fixture(scope="module")
async def mcp_label(server: Server, tools_port: int, gw_world: GatewayWorld) -> str:
    return await shared_mcp_server(server, f"http://127.0.0.1:{tools_port}/mcp", "edge")


@pytest.mark.parametrize("stream", [False, True])
async def test_the_tool_loop_refuses_a_call_naming_no_function_and_mints_missing_ids(
    gateway: Gateway, gw_world: GatewayWorld, script: list[dict[str, Any]], mcp_label: str, stream: bool
) -> None:
    key = gw_world.keys["all"]
    tools = [{"type": "mcp", "server_label": mcp_label, "require_approval": "never"}, {"type": "function", "name": "f"}]
    body = {"model": gw_world.model("chat"), "input": "hi", "tools": tools}
    script.append({"tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "", "arguments": "{}"}}]})
    if stream:
        assert (await _stream(gateway, key, body))[-1]["type"] == "response.failed"
    else:
        status, answer = await _req(gateway, "POST", "/responses", key, body)
        assert status == 502, answer
    conv = await _new_conversation(gateway, key)
    script.append({"tool_calls": [{"id": "", "type": "function", "function": {"name": "f", "arguments": "{}"}}]})
    with gateway.logs_no_error():
        if stream:
            response = (await _stream(gateway, key, {**body, "conversation": conv}))[-1]["response"]
        else:
            status, response = await _req(gateway, "POST", "/responses", key, {**body, "conversation": conv})
            assert status == 200, response
    call = next(i for i in response["output"] if i["type"] == "function_call")
    assert call["call_id"].startswith("call_")
    assert [i["call_id"] for i in await _items(gateway, key, conv) if i["type"] == "function_call"] == [call["call_id"]]


@pytest.mark.parametrize("approval", ["never", "always"])
async def test_a_round_of_a_function_call_and_an_mcp_call_goes_on_as_one_assistant_message(
    gateway: Gateway,
    gw_world: GatewayWorld,
    *,
    fakes: Fakes,
    script: list[dict[str, Any]],
    mcp_label: str,
    approval: str,
) -> None:
    """One model answer calls the client's function and an MCP tool together. The conversation keeps them as items one
    by one, and the next turn sent the function call's assistant message followed by the MCP call's instead of its
    answer: a 400 from every Chat Completions upstream, on every later turn of the conversation (found by probing)."""
    key = gw_world.keys["all"]
    tools = [
        {"type": "mcp", "server_label": mcp_label, "require_approval": approval},
        {"type": "function", "name": "f"},
    ]
    conv = await _new_conversation(gateway, key)
    add = {"id": "call_m", "type": "function", "function": {"name": model_name(mcp_label, "add"), "arguments": "{}"}}
    f = {"id": "call_f", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    script.append({"tool_calls": [f, add]})
    first = {"model": gw_world.model("chat"), "input": "hi", "tools": tools, "conversation": conv}
    status, response = await _req(gateway, "POST", "/responses", key, first)
    assert status == 200, response
    approvals = [
        {"type": "mcp_approval_response", "approval_request_id": item["id"], "approve": True}
        for item in response["output"]
        if item["type"] == "mcp_approval_request"
    ]
    assert len(approvals) == (approval == "always")
    script.append({"content": "done"})
    output = {"type": "function_call_output", "call_id": "call_f", "output": "f says hi"}
    second = {**first, "input": [output, *approvals]}
    status, answer = await _req(gateway, "POST", "/responses", key, second)
    assert status == 200, answer
    sent = (fakes.openai.last().json or {})["messages"]
    _assert_every_tool_message_answers_a_call(sent)
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool"]


# --- finish_reason: length ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("way", ["plain", "plain-streamed", "tool-loop", "tool-loop-streamed"])
async def test_a_cut_off_answer_is_an_incomplete_message(
    gateway: Gateway, gw_world: GatewayWorld, script: list[dict[str, Any]], mcp_label: str, way: str
) -> None:
    """OpenAI marks the message of a response cut off at the output limit `incomplete`, as the response; it was
    `completed`, and kept in the conversation as a completed assistant message."""
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key)
    script.append({"content": "cut o", "finish_reason": "length"})
    loop = way.startswith("tool-loop")
    tools = [{"type": "mcp", "server_label": mcp_label, "require_approval": "never"}] if loop else [_NO_RAGS]
    body = {"model": gw_world.model("chat"), "input": "hi", "conversation": conv, "tools": tools}
    if way.endswith("streamed"):
        events = await _stream(gateway, key, body)
        assert events[-1]["type"] == "response.incomplete", events[-1]
        response = events[-1]["response"]
        done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
        assert [i["status"] for i in done if i["type"] == "message"] == ["incomplete"], done
    else:
        status, response = await _req(gateway, "POST", "/responses", key, body)
        assert status == 200, response
    assert response["status"] == "incomplete" and response["incomplete_details"] == {"reason": "max_output_tokens"}
    messages = [i for i in response["output"] if i["type"] == "message"]
    assert [m["status"] for m in messages] == ["incomplete"], response["output"]
    kept = [i for i in await _items(gateway, key, conv) if i.get("role") == "assistant"]
    assert [i["status"] for i in kept] == ["incomplete"], kept


# --- a conversation deleted while its turn runs -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_conversation_deleted_mid_turn_leaves_the_stored_response(
    gateway: Gateway, gw_world: GatewayWorld, script: list[dict[str, Any]], stream: bool
) -> None:
    """The stored response and the conversation append shared one transaction: the append's not_found rolled the
    stored response back after the stream had said `response.completed` with `store: true` (GET: 404), and an ERROR
    traceback was logged for an ordinary user action."""
    key = gw_world.keys["all"]
    conv = await _new_conversation(gateway, key, [{"role": "user", "content": "hello"}])
    script.append({"content": "late answer", "delay_seconds": 1.5})
    body = {"model": gw_world.model("chat"), "input": "hi", "conversation": conv, "tools": [_NO_RAGS], "store": True}

    async def run() -> dict[str, Any]:
        if stream:
            events = await _stream(gateway, key, body)
            assert events[-1]["type"] == "response.completed", events[-1]
            return dict(events[-1]["response"])
        status, answer = await _req(gateway, "POST", "/responses", key, body)
        assert status == 200, answer
        return dict(answer)

    with gateway.logs_no_error():
        task = asyncio.create_task(run())
        await asyncio.sleep(0.6)
        status, deleted = await _req(gateway, "DELETE", f"/conversations/{conv}", key)
        assert status == 200, deleted
        response = await asyncio.wait_for(task, 15)
    assert response["store"] is True
    got, answer = await _req(gateway, "GET", f"/responses/{response['id']}", key)
    assert got == 200, answer
    assert answer["output"][0]["content"][0]["text"] == "late answer"


# --- who reads stored responses -----------------------------------------------------------------------------------


async def test_a_removed_member_no_longer_reads_their_stored_responses(
    server: Server, gateway: Gateway, fakes: Fakes
) -> None:
    """Stored responses checked the owner and tenant ids only, never membership: offboarding a member did not cut
    their personal key's access to tenant-context model output (RAG answers included), while /v1/conversations
    already answered 403."""
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    world = GatewayWorld(tenant_id=people.tenant_id, tag=secrets.token_hex(3), tokens=dict(people.tokens))
    spec = ModelSpec("model", upstream=fakes.openai_url, upstream_model="served-chat")
    await create_models(connect, server.admin_token, world, [spec])
    secret = await all_resources_key(connect, world, people.tokens["member"], "all")
    body = {"model": world.model("model"), "input": "secret plan", "tools": [_NO_RAGS]}
    status, created = await _req(gateway, "POST", "/responses", secret, body)
    assert status == 200, created
    for path in (f"/responses/{created['id']}", f"/responses/{created['id']}/input_items"):
        assert (await _req(gateway, "GET", path, secret))[0] == 200
    leave = {"tenantId": people.tenant_id, "userId": people.user_ids["member"]}
    must(await connect.call(f"{TENANTS}/RemoveTenantMember", leave, token=people.tokens["admin"]))
    await asyncio.sleep(2.5)  # past the gateway's 1 s key/membership cache
    # Leaving the tenant disables the keys one owns there (a 401): their stored responses are out of reach with them.
    for path in (f"/responses/{created['id']}", f"/responses/{created['id']}/input_items"):
        status, answer = await _req(gateway, "GET", path, secret)
        assert status == 401, (path, answer)
    assert (await _req(gateway, "DELETE", f"/responses/{created['id']}", secret))[0] == 401


# --- input item ids -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_conversation", [False, True])
async def test_an_input_item_id_sent_twice_is_refused_before_the_model_is_called(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, in_conversation: bool
) -> None:
    """Input items kept the ids the client sent: with two items sharing one, `after=<that id>` restarted at the first
    of them and input_items said has_more forever, so the SDK's auto-pagination never ended."""
    key = gw_world.keys["all"]
    items = [{"id": "msg_dup", "role": "user", "content": f"m{i}"} for i in range(2)]
    body: dict[str, Any] = {"model": gw_world.model("chat"), "input": items, "tools": [_NO_RAGS]}
    if in_conversation:
        body["conversation"] = await _new_conversation(gateway, key)
    calls = len(fakes.openai.received)
    status, answer = await _req(gateway, "POST", "/responses", key, body)
    assert status == 400, answer
    assert answer["error"]["param"] == "input[1].id", answer
    assert len(fakes.openai.received) == calls
    if in_conversation:
        assert await _items(gateway, key, body["conversation"]) == []


async def test_input_items_keep_the_clients_ids_and_page_to_the_end(gateway: Gateway, gw_world: GatewayWorld) -> None:
    key = gw_world.keys["all"]
    items = [{"id": f"msg_{name}", "role": "user", "content": name} for name in ("a", "b", "c")]
    body = {"model": gw_world.model("chat"), "input": items, "tools": [_NO_RAGS]}
    status, created = await _req(gateway, "POST", "/responses", key, body)
    assert status == 200, created
    after, seen = None, []
    for _ in range(10):
        query = "?order=asc&limit=1" + (f"&after={after}" if after else "")
        got, page = await _req(gateway, "GET", f"/responses/{created['id']}/input_items{query}", key)
        assert got == 200, page
        seen += [d["id"] for d in page["data"]]
        if not page["has_more"]:
            break
        after = page["last_id"]
    assert seen == ["msg_a", "msg_b", "msg_c"], seen


# --- an unknown conversation --------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["id", "object"])
async def test_an_unknown_conversation_is_a_404_naming_the_conversation_param(
    gateway: Gateway, gw_world: GatewayWorld, form: str
) -> None:
    """The 404 named `conversation_id`, the management API's field, which a Responses request has no such field."""
    unknown = "conv_" + "0" * 48
    conversation: Any = unknown if form == "id" else {"id": unknown}
    status, body = await _turn(gateway, gw_world.keys["all"], gw_world.model("chat"), conversation)
    assert status == 404, body
    assert body["error"]["param"] == "conversation", body
