"""ConversationService and ConversationItemService through the real server, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from tests.clients import Caller, ConnectJsonCaller
from tests.conversation_helpers import (
    CONVERSATIONS,
    ITEMS,
    add_items,
    all_item_ids,
    create_conversation,
    list_items,
    message,
)
from tests.world import World, make_world, must


@pytest.fixture
async def world(server: object, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


def _conv(world: World, conversation_id: str, **extra: Any) -> dict[str, Any]:
    return {"tenantId": world.tenant_id, "conversationId": conversation_id, **extra}


async def test_conversation_lifecycle_through_every_client(caller: Caller, world: World) -> None:
    token = world.tokens["member"]
    body = {
        "tenantId": world.tenant_id,
        "metadata": {"topic": "demo"},
        "items": [message("hi"), message("yo", "assistant")],
    }
    created = await caller.call(f"{CONVERSATIONS}/CreateConversation", body, token=token)
    assert created.ok, created
    conv = created.body["conversation"]
    assert conv["id"].startswith("conv_") and len(conv["id"]) == 53
    assert conv["tenantId"] == world.tenant_id
    assert conv["metadata"] == {"topic": "demo"}
    assert conv["itemCount"] == 2
    assert conv["ownerUserId"] == world.user_ids["member"]
    assert "ownerServiceAccountId" not in conv and "createTime" in conv

    got = await caller.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=token, get=True)
    assert got.ok and got.body["conversation"] == conv

    update = _conv(world, conv["id"], metadata={"topic": "other", "k": "v"})
    updated = await caller.call(f"{CONVERSATIONS}/UpdateConversation", update, token=token)
    assert updated.ok and updated.body["conversation"]["metadata"] == {"topic": "other", "k": "v"}

    listed = await caller.call(f"{CONVERSATIONS}/ListConversations", {"tenantId": world.tenant_id}, token=token)
    assert listed.ok and listed.body["conversations"] == [updated.body["conversation"]]
    assert listed.body["conversations"][0]["itemCount"] == 2

    items = await caller.call(
        f"{ITEMS}/ListItems", {**_conv(world, conv["id"]), "order": "SORT_ORDER_ASC"}, token=token
    )
    assert items.ok, items
    assert [(i["role"], i["content"][0]["text"]) for i in items.body["items"]] == [("user", "hi"), ("assistant", "yo")]

    assert (await caller.call(f"{CONVERSATIONS}/DeleteConversation", _conv(world, conv["id"]), token=token)).ok
    gone = await caller.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=token)
    assert gone.code == "not_found"


async def test_create_items_returns_the_created_items_as_a_page(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    conv = await create_conversation(connect, token, world.tenant_id)
    items = [
        message("what is the weather?"),
        {"type": "function_call", "callId": "call_1", "name": "weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "callId": "call_1", "output": "sunny"},
    ]
    page = must(await add_items(connect, token, world.tenant_id, conv["id"], items))
    created = page["items"]
    assert [i["id"].split("_")[0] for i in created] == ["msg", "fc", "fco"]
    assert page["firstId"] == created[0]["id"] and page["lastId"] == created[-1]["id"]
    assert page.get("hasMore", False) is False
    assert [int(i["sequence"]) for i in created] == sorted(int(i["sequence"]) for i in created)
    assert all(i["status"] == "completed" for i in created)
    assert created[1]["callId"] == "call_1" and created[1]["arguments"] == '{"city":"Paris"}'
    assert created[2]["output"] == "sunny"
    got = must(await connect.call(f"{ITEMS}/GetItem", _conv(world, conv["id"], itemId=created[1]["id"]), token=token))
    assert got["item"] == created[1]


async def test_at_most_20_items_per_call_and_a_refused_call_writes_nothing(
    connect: ConnectJsonCaller, world: World
) -> None:
    token = world.tokens["member"]
    conv = await create_conversation(connect, token, world.tenant_id, [message("first")])
    too_many = await add_items(connect, token, world.tenant_id, conv["id"], [message(str(i)) for i in range(21)])
    assert too_many.code == "invalid_argument" and "items" in too_many.message
    empty = await add_items(connect, token, world.tenant_id, conv["id"], [])
    assert empty.code == "invalid_argument" and "items" in empty.message
    # one bad item among good ones: nothing of the call is kept
    bad = [
        message("a"),
        message("b"),
        {"type": "message", "role": "wizard", "content": [{"type": "input_text", "text": "x"}]},
    ]
    refused = await add_items(connect, token, world.tenant_id, conv["id"], bad)
    assert refused.code == "invalid_argument" and "items[2].role" in refused.message
    assert len(await all_item_ids(connect, token, world.tenant_id, conv["id"])) == 1
    twenty = must(await add_items(connect, token, world.tenant_id, conv["id"], [message(str(i)) for i in range(20)]))
    assert len(twenty["items"]) == 20
    assert len(await all_item_ids(connect, token, world.tenant_id, conv["id"])) == 21


async def test_create_conversation_with_too_many_items_creates_nothing(
    connect: ConnectJsonCaller, world: World
) -> None:
    token = world.tokens["editor"]
    body = {"tenantId": world.tenant_id, "items": [message(str(i)) for i in range(21)]}
    refused = await connect.call(f"{CONVERSATIONS}/CreateConversation", body, token=token)
    assert refused.code == "invalid_argument" and "items" in refused.message
    listed = must(await connect.call(f"{CONVERSATIONS}/ListConversations", {"tenantId": world.tenant_id}, token=token))
    assert listed.get("conversations", []) == []


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"type": "telepathy"}, "items[0].type"),
        ({"type": "item_reference", "extra": {"id": "msg_1"}}, "items[0].type"),
        ({"type": "message", "content": [{"type": "input_text", "text": "x"}]}, "items[0].role"),
        ({"type": "message", "role": "user", "content": [{"type": "smell"}]}, "items[0].content[0].type"),
        ({"type": "message", "role": "assistant", "content": [{"type": "refusal"}]}, "items[0].content[0].refusal"),
        (
            {"type": "message", "role": "user", "status": "done", "content": [{"type": "input_text", "text": "x"}]},
            "items[0].status",
        ),
        ({"type": "message", "role": "user"}, "items[0].content"),  # no parts: every later turn would fail upstream
        ({"type": "message", "role": "assistant", "content": []}, "items[0].content"),
        ({"type": "function_call", "name": "f", "arguments": "{}"}, "items[0].call_id"),
        ({"type": "function_call_output", "output": "x"}, "items[0].call_id"),
        ({"type": "mcp_call", "name": "t", "arguments": "{}"}, "items[0].server_label"),
    ],
)
async def test_item_validation_names_the_field(
    connect: ConnectJsonCaller, world: World, item: dict[str, Any], field: str
) -> None:
    token = world.tokens["member"]
    conv = await create_conversation(connect, token, world.tenant_id)
    refused = await add_items(connect, token, world.tenant_id, conv["id"], [item])
    assert refused.code == "invalid_argument", refused
    assert field in refused.message


async def test_metadata_limits_name_the_field(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    for metadata in ({f"k{i}": "v" for i in range(17)}, {"k" * 65: "v"}, {"k": "v" * 513}):
        body = {"tenantId": world.tenant_id, "metadata": metadata}
        refused = await connect.call(f"{CONVERSATIONS}/CreateConversation", body, token=token)
        assert refused.code == "invalid_argument" and "metadata" in refused.message
    conv = await create_conversation(connect, token, world.tenant_id, metadata={f"k{i}": "v" for i in range(16)})
    assert len(conv["metadata"]) == 16


async def test_items_round_trip_every_field(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    mcp_call = {
        "type": "mcp_call",
        "name": "search",
        "arguments": '{"q": "x"}',
        "status": "failed",
        "extra": {
            "server_label": "docs",
            "output": None,
            "error": {"type": "http_error", "code": 502, "message": "bad gateway"},
            "approval_request_id": None,
        },
    }
    reasoning = {"type": "reasoning", "extra": {"summary": [{"type": "summary_text", "text": "thought"}]}}
    image = {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": ""},
            {"type": "input_image", "extra": {"image_url": "https://example.com/a.png", "detail": "auto"}},
        ],
    }
    conv = await create_conversation(connect, token, world.tenant_id)
    created = must(await add_items(connect, token, world.tenant_id, conv["id"], [mcp_call, reasoning, image]))["items"]
    got = [
        must(await connect.call(f"{ITEMS}/GetItem", _conv(world, conv["id"], itemId=i["id"]), token=token))["item"]
        for i in created
    ]
    assert got == created
    assert got[0]["extra"] == mcp_call["extra"] and got[0]["status"] == "failed"
    assert got[1]["extra"] == reasoning["extra"]
    assert got[2]["content"][0] == {"type": "input_text"}  # proto JSON omits the empty text
    assert got[2]["content"][1] == {"type": "input_image", "extra": image["content"][1]["extra"]}


async def _numbered(connect: ConnectJsonCaller, token: str, world: World, count: int) -> tuple[str, list[str]]:
    conv = await create_conversation(connect, token, world.tenant_id)
    texts = [str(i) for i in range(count)]
    for start in range(0, count, 20):
        must(
            await add_items(
                connect, token, world.tenant_id, conv["id"], [message(t) for t in texts[start : start + 20]]
            )
        )
    return conv["id"], await all_item_ids(connect, token, world.tenant_id, conv["id"])


async def _pages(connect: ConnectJsonCaller, token: str, world: World, conv_id: str, **query: Any) -> list[dict]:
    pages, after = [], ""
    while True:
        page = must(await list_items(connect, token, world.tenant_id, conv_id, after=after, **query))
        pages.append(page)
        if not page.get("hasMore"):
            return pages
        after = page["lastId"]


@pytest.mark.parametrize("order", ["SORT_ORDER_ASC", "SORT_ORDER_DESC"])
async def test_pagination_in_both_orders(connect: ConnectJsonCaller, world: World, order: str) -> None:
    token = world.tokens["member"]
    conv_id, ids = await _numbered(connect, token, world, 25)
    expected = ids if order == "SORT_ORDER_ASC" else ids[::-1]
    pages = await _pages(connect, token, world, conv_id, limit=10, order=order)
    assert [len(p["items"]) for p in pages] == [10, 10, 5]
    assert [p.get("hasMore", False) for p in pages] == [True, True, False]
    assert [i["id"] for p in pages for i in p["items"]] == expected
    for page in pages:
        assert page["firstId"] == page["items"][0]["id"] and page["lastId"] == page["items"][-1]["id"]
    # a page that ends exactly at the last item says so
    exact = must(await list_items(connect, token, world.tenant_id, conv_id, limit=5, after=expected[19], order=order))
    assert [i["id"] for i in exact["items"]] == expected[20:] and not exact.get("hasMore")
    # the cursor at the very end yields an empty page without ids
    end = must(await list_items(connect, token, world.tenant_id, conv_id, after=expected[-1], order=order))
    assert end.get("items", []) == [] and not end.get("hasMore") and "firstId" not in end


async def test_list_defaults_are_newest_first_and_20(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    conv_id, ids = await _numbered(connect, token, world, 25)
    for query in ({}, {"limit": 0}):
        page = must(await list_items(connect, token, world.tenant_id, conv_id, **query))
        assert [i["id"] for i in page["items"]] == ids[::-1][:20] and page["hasMore"] is True


async def test_list_refusals_name_their_field(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    conv_id, _ = await _numbered(connect, token, world, 3)
    _, other_ids = await _numbered(connect, token, world, 1)
    for limit in (101, -1):
        refused = await list_items(connect, token, world.tenant_id, conv_id, limit=limit)
        assert refused.code == "invalid_argument" and "limit" in refused.message
    ok = must(await list_items(connect, token, world.tenant_id, conv_id, limit=100))
    assert len(ok["items"]) == 3
    for after in ("msg_nope", other_ids[0]):  # unknown, or an item of another conversation
        refused = await list_items(connect, token, world.tenant_id, conv_id, after=after)
        assert refused.code == "invalid_argument" and "after" in refused.message


async def test_get_and_delete_item(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    conv_id, ids = await _numbered(connect, token, world, 3)
    other_id, other_ids = await _numbered(connect, token, world, 1)
    for item_id in ("msg_nope", other_ids[0]):
        got = await connect.call(f"{ITEMS}/GetItem", _conv(world, conv_id, itemId=item_id), token=token)
        assert got.code == "not_found", got
    deleted = must(await connect.call(f"{ITEMS}/DeleteItem", _conv(world, conv_id, itemId=ids[1]), token=token))
    assert deleted["conversation"]["id"] == conv_id and deleted["conversation"]["itemCount"] == 2
    assert await all_item_ids(connect, token, world.tenant_id, conv_id) == [ids[0], ids[2]]
    again = await connect.call(f"{ITEMS}/DeleteItem", _conv(world, conv_id, itemId=ids[1]), token=token)
    assert again.code == "not_found"
    cross = await connect.call(f"{ITEMS}/DeleteItem", _conv(world, conv_id, itemId=other_ids[0]), token=token)
    assert cross.code == "not_found"
    assert await all_item_ids(connect, token, world.tenant_id, other_id) == other_ids


async def test_truncate_deletes_the_item_and_everything_after_it(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    conv_id, ids = await _numbered(connect, token, world, 6)
    # delete a middle item first: truncation goes by sequence, not by position
    must(await connect.call(f"{ITEMS}/DeleteItem", _conv(world, conv_id, itemId=ids[2]), token=token))
    truncated = must(
        await connect.call(f"{ITEMS}/TruncateConversation", _conv(world, conv_id, fromItemId=ids[3]), token=token)
    )
    assert truncated["conversation"]["itemCount"] == 2
    assert await all_item_ids(connect, token, world.tenant_id, conv_id) == ids[:2]
    # the retry: new items continue after the kept ones, numbered after everything ever stored
    added = must(await add_items(connect, token, world.tenant_id, conv_id, [message("edited")]))["items"]
    page = must(await list_items(connect, token, world.tenant_id, conv_id, order="SORT_ORDER_ASC"))
    assert [i["id"] for i in page["items"]] == [*ids[:2], added[0]["id"]]
    assert int(added[0]["sequence"]) > max(int(i["sequence"]) for i in page["items"][:2])
    for missing in ("msg_nope", ids[4]):  # unknown, or already truncated away
        refused = await connect.call(
            f"{ITEMS}/TruncateConversation", _conv(world, conv_id, fromItemId=missing), token=token
        )
        assert refused.code == "not_found" and "from_item_id" in refused.message
    everything = must(
        await connect.call(f"{ITEMS}/TruncateConversation", _conv(world, conv_id, fromItemId=ids[0]), token=token)
    )
    assert everything["conversation"].get("itemCount", 0) == 0


async def test_concurrent_appends_get_distinct_contiguous_sequences(connect: ConnectJsonCaller, world: World) -> None:
    token = world.tokens["member"]
    conv = await create_conversation(connect, token, world.tenant_id)
    calls = [
        add_items(connect, token, world.tenant_id, conv["id"], [message(f"{c}-{i}") for i in range(4)])
        for c in range(5)
    ]
    results = await asyncio.gather(*calls)
    assert all(r.ok for r in results), results
    sequences = [int(i["sequence"]) for r in results for i in r.body["items"]]
    assert len(set(sequences)) == 20
    for r in results:
        mine = [int(i["sequence"]) for i in r.body["items"]]
        assert mine == list(range(mine[0], mine[0] + 4))
    page = must(await list_items(connect, token, world.tenant_id, conv["id"], limit=100, order="SORT_ORDER_ASC"))
    assert [int(i["sequence"]) for i in page["items"]] == sorted(sequences)


async def test_list_conversations_shows_only_the_callers_own_with_cursors(
    connect: ConnectJsonCaller, world: World
) -> None:
    mine = [(await create_conversation(connect, world.tokens["editor"], world.tenant_id))["id"] for _ in range(5)]
    await create_conversation(connect, world.tokens["admin"], world.tenant_id)
    for order, expected in (("SORT_ORDER_ASC", mine), ("SORT_ORDER_DESC", mine[::-1])):
        seen, after = [], ""
        while True:
            body = {"tenantId": world.tenant_id, "limit": 2, "order": order, "after": after}
            page = must(await connect.call(f"{CONVERSATIONS}/ListConversations", body, token=world.tokens["editor"]))
            seen += [c["id"] for c in page["conversations"]]
            if not page.get("hasMore"):
                break
            after = page["lastId"]
        assert seen == expected
    body = {"tenantId": world.tenant_id, "after": "conv_nope"}
    refused = await connect.call(f"{CONVERSATIONS}/ListConversations", body, token=world.tokens["editor"])
    assert refused.code == "invalid_argument" and "after" in refused.message


# ---- ownership --------------------------------------------------------------------------------------------------


async def _key(connect: ConnectJsonCaller, world: World, token: str, key_type: str, **extra: Any) -> str:
    body = {"tenantId": world.tenant_id, "type": key_type, "name": f"k-{secrets.token_hex(3)}", **extra}
    return str(must(await connect.call("platform.tenants.v1.ApiKeyService/CreateApiKey", body, token=token))["secret"])


async def _service_account(connect: ConnectJsonCaller, world: World) -> str:
    body = {"tenantId": world.tenant_id, "name": f"bot-{secrets.token_hex(3)}"}
    created = await connect.call(
        "platform.tenants.v1.ServiceAccountService/CreateServiceAccount", body, token=world.tokens["admin"]
    )
    return str(must(created)["serviceAccount"]["id"])


async def test_only_the_owner_sees_a_conversation(connect: ConnectJsonCaller, world: World, server: Any) -> None:
    member = world.tokens["member"]
    conv = await create_conversation(connect, member, world.tenant_id, [message("private")])
    personal = await _key(connect, world, member, "API_KEY_TYPE_PERSONAL")
    everything = await _key(connect, world, member, "API_KEY_TYPE_PERSONAL_ALL_RESOURCES")
    account = await _service_account(connect, world)
    sa_key = await _key(connect, world, world.tokens["admin"], "API_KEY_TYPE_SERVICE_ACCOUNT", serviceAccountId=account)
    admins_key = await _key(connect, world, world.tokens["admin"], "API_KEY_TYPE_PERSONAL")
    got = must(await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=personal))
    assert got["conversation"]["id"] == conv["id"]  # the member's own keys act as the member
    got = must(await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=everything))
    assert got["conversation"]["itemCount"] == 1
    # everyone else in the tenant, the tenant admin included, is told it does not exist
    for token in (world.tokens["editor"], world.tokens["admin"], admins_key, sa_key):
        result = await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=token)
        assert result.code == "not_found", result
        items = await list_items(connect, token, world.tenant_id, conv["id"])
        assert items.code == "not_found", items
        for method, extra in (
            ("CreateItems", {"items": [message("intrusion")]}),
            ("TruncateConversation", {"fromItemId": "msg_x"}),
            ("DeleteItem", {"itemId": "msg_x"}),
        ):
            result = await connect.call(f"{ITEMS}/{method}", _conv(world, conv["id"], **extra), token=token)
            assert result.code == "not_found" and "conversation_id" in result.message, (method, result)
        deleted = await connect.call(f"{CONVERSATIONS}/DeleteConversation", _conv(world, conv["id"]), token=token)
        assert deleted.code == "not_found"
    # outsiders: not members of the tenant at all; with their own tenant, the conversation does not exist there
    outsider = world.tokens["outsider"]
    refused = await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=outsider)
    assert refused.code == "permission_denied"
    body = {"tenantId": world.other_tenant_id, "conversationId": conv["id"]}
    assert (await connect.call(f"{CONVERSATIONS}/GetConversation", body, token=outsider)).code == "not_found"
    # platform operators hold no tenant role here and get nothing either
    refused = await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=server.admin_token)
    assert refused.code == "permission_denied"
    # nothing was changed by any of it
    assert len(await all_item_ids(connect, member, world.tenant_id, conv["id"])) == 1


async def test_service_account_keys_own_conversations(connect: ConnectJsonCaller, world: World) -> None:
    admin = world.tokens["admin"]
    account = await _service_account(connect, world)
    key_a = await _key(connect, world, admin, "API_KEY_TYPE_SERVICE_ACCOUNT", serviceAccountId=account)
    key_b = await _key(connect, world, admin, "API_KEY_TYPE_SERVICE_ACCOUNT", serviceAccountId=account)
    other_key = await _key(
        connect, world, admin, "API_KEY_TYPE_SERVICE_ACCOUNT", serviceAccountId=await _service_account(connect, world)
    )
    conv = await create_conversation(connect, key_a, world.tenant_id, [message("from a bot")])
    assert conv["ownerServiceAccountId"] == account and "ownerUserId" not in conv
    # every key of the service account shares its conversations
    assert must(await add_items(connect, key_b, world.tenant_id, conv["id"], [message("and its twin")]))
    listed = must(await connect.call(f"{CONVERSATIONS}/ListConversations", {"tenantId": world.tenant_id}, token=key_b))
    assert [c["id"] for c in listed["conversations"]] == [conv["id"]]
    # another service account, the admin who created the account, and the admin's keys see nothing
    admins_key = await _key(connect, world, admin, "API_KEY_TYPE_PERSONAL")
    for token in (other_key, admin, admins_key):
        result = await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, conv["id"]), token=token)
        assert result.code == "not_found", result
        listed = must(
            await connect.call(f"{CONVERSATIONS}/ListConversations", {"tenantId": world.tenant_id}, token=token)
        )
        assert conv["id"] not in [c["id"] for c in listed.get("conversations", [])]
    # a user's conversations are not the service account's either
    users = await create_conversation(connect, admin, world.tenant_id)
    result = await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, users["id"]), token=key_a)
    assert result.code == "not_found"


async def test_tenant_scoping(connect: ConnectJsonCaller, world: World) -> None:
    member = world.tokens["member"]
    key = await _key(connect, world, member, "API_KEY_TYPE_PERSONAL")
    # a key acts only in its own tenant; a tenantId it does not belong to is refused
    body = {"tenantId": world.other_tenant_id}
    assert (await connect.call(f"{CONVERSATIONS}/CreateConversation", body, token=key)).code == "permission_denied"
    # a key with no tenantId acts in its tenant
    made = must(await connect.call(f"{CONVERSATIONS}/CreateConversation", {}, token=key))["conversation"]
    assert made["tenantId"] == world.tenant_id
    # a session scoped by X-Platform-Tenant-Id cannot name another tenant; unscoped it must name one
    scoped = await connect.call(f"{CONVERSATIONS}/CreateConversation", body, token=member, tenant=world.tenant_id)
    assert scoped.code == "permission_denied"
    unscoped = await connect.call(f"{CONVERSATIONS}/CreateConversation", {}, token=member)
    assert unscoped.code == "invalid_argument" and "tenant_id" in unscoped.message
    by_header = await connect.call(
        f"{CONVERSATIONS}/GetConversation", {"conversationId": made["id"]}, token=member, tenant=world.tenant_id
    )
    assert by_header.ok
    # a member who leaves the tenant loses access to their conversations (and so do their keys)
    must(
        await connect.call(
            "platform.tenants.v1.TenantService/RemoveTenantMember",
            {"tenantId": world.tenant_id, "userId": world.user_ids["member"]},
            token=world.tokens["admin"],
        )
    )
    refused = await connect.call(f"{CONVERSATIONS}/GetConversation", _conv(world, made["id"]), token=member)
    assert refused.code == "permission_denied"
