"""/v1/conversations through the official openai SDK, over the same store as ConversationItemService."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import openai
import pytest
import pytest_asyncio

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.conversation_helpers import CONVERSATIONS, ITEMS, add_items, create_conversation, message
from tests.gateway_fixtures import Gateway
from tests.gateway_world import KEYS, GatewayWorld
from tests.world import must


@dataclass
class Keys:
    tenant_id: str
    member: str  # the member's personal key
    member_all: str  # the member's Personal (all resources) key
    editor: str  # the editor's personal key
    service_account: str  # a service-account key
    member_token: str  # the member's session
    service_account_id: str = ""


@pytest_asyncio.fixture(scope="session")
async def keys(server: Server, gw_world: GatewayWorld) -> Keys:
    connect = ConnectJsonCaller(server.base_url)

    async def key(person: str, key_type: str) -> str:
        body = {"tenantId": gw_world.tenant_id, "type": key_type, "name": f"conv-{person}"}
        return str(must(await connect.call(f"{KEYS}/CreateApiKey", body, token=gw_world.tokens[person]))["secret"])

    return Keys(
        tenant_id=gw_world.tenant_id,
        member=await key("member", "API_KEY_TYPE_PERSONAL"),
        member_all=gw_world.keys["all"],
        editor=await key("editor", "API_KEY_TYPE_PERSONAL"),
        service_account=gw_world.keys["chat-only"],
        member_token=gw_world.tokens["member"],
    )


Sdk = Callable[[str], openai.OpenAI]


@pytest.fixture
def sdk(gateway: Gateway) -> Iterator[Sdk]:
    """Sync openai clients for keys, closed after the test (an unclosed client warns from its finalizer)."""
    made: list[openai.OpenAI] = []

    def make(key: str) -> openai.OpenAI:
        made.append(openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0))
        return made[-1]

    yield make
    for client in made:
        client.close()


def test_conversation_lifecycle(sdk: Sdk, keys: Keys) -> None:
    client = sdk(keys.member)
    conv = client.conversations.create(
        metadata={"topic": "demo"},
        items=[{"type": "message", "role": "user", "content": "hello"}, {"role": "assistant", "content": "hi!"}],
    )
    assert conv.id.startswith("conv_") and conv.object == "conversation"
    assert conv.metadata == {"topic": "demo"} and isinstance(conv.created_at, int)
    got = client.conversations.retrieve(conv.id)
    assert got.model_dump() == conv.model_dump()
    updated = client.conversations.update(conv.id, metadata={"topic": "changed"})
    assert updated.metadata == {"topic": "changed"}
    assert client.conversations.retrieve(conv.id).metadata == {"topic": "changed"}
    items = list(client.conversations.items.list(conv.id, order="asc"))
    assert [(i.type, i.role, i.status) for i in items] == [
        ("message", "user", "completed"),
        ("message", "assistant", "completed"),
    ]
    # the easy string form is stored as one text part of the kind the role implies
    assert items[0].content[0].model_dump(exclude_none=True) == {"type": "input_text", "text": "hello"}
    assert items[1].content[0].type == "output_text" and items[1].content[0].text == "hi!"
    assert items[0].id.startswith("msg_")
    deleted = client.conversations.delete(conv.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (conv.id, "conversation.deleted", True)
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conv.id)


def test_items_create_list_retrieve_delete(sdk: Sdk, keys: Keys) -> None:
    client = sdk(keys.member)
    conv = client.conversations.create()
    created = client.conversations.items.create(
        conv.id,
        items=[
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "weather in Paris?"}]},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
        ],
        include=["message.output_text.logprobs"],
    )
    assert created.object == "list" and created.has_more is False
    assert [i.type for i in created.data] == ["message", "function_call", "function_call_output"]
    assert created.first_id == created.data[0].id and created.last_id == created.data[-1].id
    call = client.conversations.items.retrieve(created.data[1].id, conversation_id=conv.id)
    assert call.model_dump() == created.data[1].model_dump()
    assert (call.call_id, call.name, call.arguments, call.status) == (
        "call_1",
        "weather",
        '{"city":"Paris"}',
        "completed",
    )
    newest_first = client.conversations.items.list(conv.id)  # OpenAI's default order is desc
    assert [i.id for i in newest_first.data] == [i.id for i in created.data][::-1]
    after = client.conversations.items.delete(created.data[0].id, conversation_id=conv.id)
    assert after.id == conv.id and after.object == "conversation"  # the SDK types DELETE item as the Conversation
    assert [i.id for i in client.conversations.items.list(conv.id, order="asc")] == [i.id for i in created.data[1:]]
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.retrieve(created.data[0].id, conversation_id=conv.id)
    with pytest.raises(openai.NotFoundError):
        client.conversations.items.delete(created.data[0].id, conversation_id=conv.id)


@pytest.mark.parametrize("order", ["asc", "desc"])
def test_sdk_auto_pagination_in_both_orders(sdk: Sdk, keys: Keys, order: str) -> None:
    client = sdk(keys.member)
    conv = client.conversations.create(items=[{"role": "user", "content": str(i)} for i in range(7)])
    page = client.conversations.items.list(conv.id, limit=3, order=order)
    assert len(page.data) == 3 and page.has_more is True and page.last_id == page.data[-1].id
    texts = [item.content[0].text for item in page]
    expected = [str(i) for i in range(7)]
    assert texts == (expected if order == "asc" else expected[::-1])
    pages = list(page.iter_pages())
    assert [len(p.data) for p in pages] == [3, 3, 1] and [p.has_more for p in pages] == [True, True, False]


async def test_async_client_and_auto_pagination(gateway: Gateway, keys: Keys) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=keys.member, max_retries=0)
    conv = await client.conversations.create(items=[{"role": "user", "content": str(i)} for i in range(5)])
    more = await client.conversations.items.create(conv.id, items=[{"role": "user", "content": "5"}])
    assert len(more.data) == 1
    seen = [item.content[0].text async for item in client.conversations.items.list(conv.id, limit=2, order="asc")]
    assert seen == [str(i) for i in range(6)]
    assert (await client.conversations.delete(conv.id)).deleted is True
    await client.close()


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda c, conv: c.conversations.items.create(conv, items=[{"role": "user", "content": "x"}] * 21), "items"),
        (lambda c, conv: c.conversations.create(items=[{"role": "user", "content": "x"}] * 21), "items"),
        (lambda c, conv: c.conversations.items.create(conv, items=[]), "items"),
        (lambda c, conv: c.conversations.items.create(conv, items=[{"type": "nope"}]), "items[0].type"),
        (
            lambda c, conv: c.conversations.items.create(
                conv, items=[{"type": "message", "role": "user", "content": [{"type": "input_text"}]}]
            ),
            "items[0].content[0].text",
        ),
        (
            lambda c, conv: c.conversations.items.create(
                conv, items=[{"type": "function_call", "call_id": "c", "name": "f", "arguments": {"a": 1}}]
            ),
            "items[0].arguments",
        ),
        (  # a tool output's parts are checked as a message's (a later turn would read them)
            lambda c, conv: c.conversations.items.create(
                conv,
                items=[{"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": 7}]}],
            ),
            "items[0].output[0].text",
        ),
        (
            lambda c, conv: c.conversations.items.create(
                conv, items=[{"role": "user", "content": [{"type": {"nested": True}, "text": "x"}]}]
            ),
            "items[0].content[0].type",
        ),
        (
            lambda c, conv: c.conversations.items.create(
                conv, items=[{"role": "user", "content": "x", "status": "done\u0000"}]
            ),
            "items[0].status",
        ),
        (lambda c, conv: c.conversations.items.list(conv, limit=0), "limit"),
        (lambda c, conv: c.conversations.items.list(conv, limit=101), "limit"),
        (lambda c, conv: c.conversations.items.list(conv, after="msg_unknown"), "after"),
        (lambda c, conv: c.conversations.items.list(conv, order="sideways"), "order"),
        (lambda c, conv: c.conversations.create(metadata={str(i): "v" for i in range(17)}), "metadata"),
        (lambda c, conv: c.conversations.update(conv, metadata={"k": 1}), "metadata"),
    ],
)
def test_refusals_are_openai_400s_naming_the_param(sdk: Sdk, keys: Keys, call: Any, param: str) -> None:
    client = sdk(keys.member)
    conv = client.conversations.create(items=[{"role": "user", "content": "keep me"}])
    with pytest.raises(openai.BadRequestError) as err:
        call(client, conv.id)
    assert err.value.param == param and err.value.type == "invalid_request_error"
    assert param in err.value.message
    assert [i.type for i in client.conversations.items.list(conv.id)] == ["message"]  # nothing was written


async def test_refused_create_writes_no_conversation(gateway: Gateway, keys: Keys, connect: ConnectJsonCaller) -> None:
    async def own() -> set[str]:
        page = must(await connect.call(f"{CONVERSATIONS}/ListConversations", {"limit": 100}, token=keys.editor))
        return {c["id"] for c in page.get("conversations", [])}

    client = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=keys.editor, max_retries=0)
    before = await own()
    with pytest.raises(openai.BadRequestError):
        await client.conversations.create(items=[{"role": "user", "content": "x"}, {"type": "nope"}])
    assert await own() == before
    await client.close()


def test_ownership_isolation(sdk: Sdk, keys: Keys) -> None:
    mine = sdk(keys.member).conversations.create(items=[{"role": "user", "content": "private"}])
    # the member's Personal (all resources) key acts as the member too
    assert sdk(keys.member_all).conversations.retrieve(mine.id).id == mine.id
    for key in (keys.editor, keys.service_account):
        other = sdk(key)
        with pytest.raises(openai.NotFoundError):
            other.conversations.retrieve(mine.id)
        with pytest.raises(openai.NotFoundError):
            other.conversations.items.list(mine.id)
        with pytest.raises(openai.NotFoundError):
            other.conversations.items.create(mine.id, items=[{"role": "user", "content": "intrusion"}])
        with pytest.raises(openai.NotFoundError):
            other.conversations.update(mine.id, metadata={"x": "y"})
        with pytest.raises(openai.NotFoundError):
            other.conversations.delete(mine.id)
    bots = sdk(keys.service_account).conversations.create(metadata={"owner": "bot"})
    for key in (keys.member, keys.member_all, keys.editor):
        with pytest.raises(openai.NotFoundError):
            sdk(key).conversations.retrieve(bots.id)
    assert [i.type for i in sdk(keys.member).conversations.items.list(mine.id)] == ["message"]


async def test_missing_or_bad_key_is_401(gateway: Gateway) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{gateway.base_url}/conversations", json={}) as resp:
            assert resp.status == 401
        headers = {"Authorization": "Bearer sk-nope"}
        async with http.get(f"{gateway.base_url}/conversations/conv_x", headers=headers) as resp:
            assert resp.status == 401 and (await resp.json())["error"]["code"] == "invalid_api_key"


async def test_v1_and_management_share_one_store(
    gateway: Gateway, keys: Keys, connect: ConnectJsonCaller, server: Server
) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=keys.member, max_retries=0)
    # written through /v1, read through ConversationItemService with the member's session
    conv = await client.conversations.create(metadata={"via": "v1"})
    created = await client.conversations.items.create(
        conv.id,
        items=[
            {"role": "user", "content": "hi"},
            {
                "type": "mcp_call",
                "id": "mcp_client_chosen",
                "server_label": "docs",
                "name": "search",
                "arguments": "{}",
                "output": None,
                "error": {"type": "http_error", "code": 502, "message": "bad gateway"},
                "status": "failed",
            },
        ],
    )
    assert created.data[1].id.startswith("mcp_") and created.data[1].id != "mcp_client_chosen"  # ids are ours
    body = {"tenantId": keys.tenant_id, "conversationId": conv.id, "order": "SORT_ORDER_ASC"}
    listed = must(await connect.call(f"{ITEMS}/ListItems", body, token=keys.member_token, get=True))["items"]
    assert [i["id"] for i in listed] == [i.id for i in created.data]
    assert listed[0]["content"] == [{"type": "input_text", "text": "hi"}]
    assert listed[1]["name"] == "search" and listed[1]["status"] == "failed"
    assert listed[1]["extra"] == {
        "server_label": "docs",
        "output": None,
        "error": {"type": "http_error", "code": 502, "message": "bad gateway"},
    }
    got = must(
        await connect.call(
            f"{CONVERSATIONS}/GetConversation",
            {"tenantId": keys.tenant_id, "conversationId": conv.id},
            token=keys.member_token,
        )
    )["conversation"]
    assert got["metadata"] == {"via": "v1"} and got["itemCount"] == 2
    # written through the management API, read through /v1 (exactly what /v1 itself returns for such items)
    conv2 = await create_conversation(connect, keys.member_token, keys.tenant_id, [message("from management")])
    page = must(
        await add_items(
            connect,
            keys.member_token,
            keys.tenant_id,
            conv2["id"],
            [{"type": "function_call", "callId": "call_9", "name": "f", "arguments": '{"n":1}'}],
        )
    )
    items = [i async for i in client.conversations.items.list(conv2["id"], order="asc")]
    assert [i.type for i in items] == ["message", "function_call"]
    assert items[0].content[0].text == "from management" and items[0].role == "user"
    assert items[1].id == page["items"][0]["id"] and items[1].call_id == "call_9"
    raw = await _raw_item(gateway, keys.member, conv2["id"], items[1].id)
    assert raw == {
        "id": items[1].id,
        "type": "function_call",
        "status": "completed",
        "call_id": "call_9",
        "name": "f",
        "arguments": '{"n":1}',
    }
    # truncation through the management API is seen by /v1
    must(
        await connect.call(
            f"{ITEMS}/TruncateConversation",
            {"tenantId": keys.tenant_id, "conversationId": conv2["id"], "fromItemId": items[1].id},
            token=keys.member_token,
        )
    )
    assert [i.id async for i in client.conversations.items.list(conv2["id"])] == [items[0].id]
    await client.close()


async def _raw_item(gateway: Gateway, key: str, conversation_id: str, item_id: str) -> dict[str, Any]:
    url = f"{gateway.base_url}/conversations/{conversation_id}/items/{item_id}"
    async with aiohttp.ClientSession() as http, http.get(url, headers={"Authorization": f"Bearer {key}"}) as resp:
        assert resp.status == 200
        return dict(await resp.json())


async def test_ids_that_cannot_exist_are_plain_not_found(gateway: Gateway, keys: Keys) -> None:
    client = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=keys.member, max_retries=0)
    conv = await client.conversations.create(items=[{"role": "user", "content": "x"}])
    headers = {"Authorization": f"Bearer {keys.member}"}
    long_id = "c" * 300
    cases = [
        ("GET", "/conversations/conv_%00x", 404),
        ("GET", f"/conversations/{long_id}", 404),
        ("GET", f"/conversations/{conv.id}/items/msg_%00", 404),
        ("DELETE", f"/conversations/{conv.id}/items/{long_id}", 404),
        ("GET", f"/conversations/{conv.id}/items?after=msg_%00", 400),
    ]
    async with aiohttp.ClientSession() as http:
        for verb, path, status in cases:
            async with http.request(verb, f"{gateway.base_url}{path}", headers=headers) as resp:
                assert resp.status == status, (path, await resp.text())
    await client.close()


async def test_empty_strings_round_trip_between_the_two_surfaces(
    gateway: Gateway, keys: Keys, connect: ConnectJsonCaller
) -> None:
    """An empty string where the item may leave the field out is a value of its own: proto JSON omits an empty typed
    field, so the management API must carry it in `extra`, or an item read there and written back loses it."""
    items = [
        {"type": "mcp_call", "server_label": "docs", "name": "search", "arguments": "", "output": ""},
        {"type": "computer_call", "call_id": "", "name": ""},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_image", "image_url": "https://x/a.png", "text": ""}],
        },
    ]
    headers = {"Authorization": f"Bearer {keys.member}"}
    async with aiohttp.ClientSession() as http:

        async def v1_items(conversation_id: str) -> list[dict[str, Any]]:
            url = f"{gateway.base_url}/conversations/{conversation_id}/items?order=asc"
            async with http.get(url, headers=headers) as resp:
                assert resp.status == 200
                return [{k: v for k, v in i.items() if k != "id"} for i in (await resp.json())["data"]]

        async with http.post(f"{gateway.base_url}/conversations", json={"items": items}, headers=headers) as resp:
            assert resp.status == 200
            first = (await resp.json())["id"]
        written = await v1_items(first)
        body = {"tenantId": keys.tenant_id, "conversationId": first, "order": "SORT_ORDER_ASC"}
        read = must(await connect.call(f"{ITEMS}/ListItems", body, token=keys.member_token, get=True))["items"]
        assert read[0]["extra"] == {"server_label": "docs", "output": ""}  # arguments is required: "" is implied
        assert read[1]["extra"] == {"call_id": "", "name": ""}
        assert read[2]["content"][0]["extra"] == {"image_url": "https://x/a.png", "text": ""}
        again = [{k: v for k, v in i.items() if k not in ("id", "createTime", "sequence")} for i in read]
        second = await create_conversation(connect, keys.member_token, keys.tenant_id, again)
        assert await v1_items(second["id"]) == written
