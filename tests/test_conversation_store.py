"""The conversation store read directly: the gateway's history window and what deleting an owner removes.

Data is written through the management API; the domain function and the tables are then read on the same database.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import pytest
from sqlalchemy import func, select

from server.domain import conversations
from server.domain.conversation_items import HISTORY_LIMIT, normalize_items
from server.store.db import Database
from server.store.models import ConversationItemRow, ConversationRow
from tests.clients import ConnectJsonCaller
from tests.conversation_helpers import ITEMS, add_items, create_conversation, list_items, message
from tests.world import World, make_world, must


@pytest.fixture
async def world(server: object, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


@pytest.fixture
async def db(server: Any) -> AsyncIterator[Database]:
    database = Database(server.settings.database_url)
    yield database
    await database.close()


async def _ids(connect: ConnectJsonCaller, token: str, tenant_id: str, conv_id: str) -> list[str]:
    ids, after = [], ""
    while True:
        page = must(
            await list_items(connect, token, tenant_id, conv_id, limit=100, order="SORT_ORDER_ASC", after=after)
        )
        ids += [i["id"] for i in page["items"]]
        if not page.get("hasMore"):
            return ids
        after = page["lastId"]


async def test_history_is_the_latest_128_items_oldest_first(
    connect: ConnectJsonCaller, world: World, db: Database
) -> None:
    assert HISTORY_LIMIT == 128
    token = world.tokens["member"]
    conv = await create_conversation(connect, token, world.tenant_id)
    for start in range(0, 130, 20):
        batch = [message(str(i)) for i in range(start, min(start + 20, 130))]
        must(await add_items(connect, token, world.tenant_id, conv["id"], batch))
    ids = await _ids(connect, token, world.tenant_id, conv["id"])
    assert len(ids) == 130
    async with db.read() as session:
        window = await conversations.history(session, conv["id"])
        assert [i.id for i in window] == ids[-128:]
        assert window[0].body["content"][0]["text"] == "2" and window[-1].body["content"][0]["text"] == "129"
        assert [i.id for i in await conversations.history(session, conv["id"], limit=3)] == ids[-3:]
    must(
        await connect.call(
            f"{ITEMS}/TruncateConversation",
            {"tenantId": world.tenant_id, "conversationId": conv["id"], "fromItemId": ids[10]},
            token=token,
        )
    )
    async with db.read() as session:
        assert [i.id for i in await conversations.history(session, conv["id"])] == ids[:10]


async def test_deleting_a_service_account_deletes_its_conversations(
    connect: ConnectJsonCaller, world: World, db: Database
) -> None:
    admin = world.tokens["admin"]
    body = {"tenantId": world.tenant_id, "name": f"bot-{secrets.token_hex(3)}"}
    account = must(
        await connect.call("platform.tenants.v1.ServiceAccountService/CreateServiceAccount", body, token=admin)
    )["serviceAccount"]["id"]
    body = {
        "tenantId": world.tenant_id,
        "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
        "name": "bot-key",
        "serviceAccountId": account,
    }
    key = must(await connect.call("platform.tenants.v1.ApiKeyService/CreateApiKey", body, token=admin))["secret"]
    conv = await create_conversation(connect, key, world.tenant_id, [message("beep")])
    users = await create_conversation(connect, admin, world.tenant_id, [message("kept")])
    must(
        await connect.call(
            "platform.tenants.v1.ServiceAccountService/DeleteServiceAccount",
            {"tenantId": world.tenant_id, "serviceAccountId": account},
            token=admin,
        )
    )
    async with db.read() as session:
        assert await session.get(ConversationRow, conv["id"]) is None
        count = select(func.count()).where(ConversationItemRow.conversation_id == conv["id"])
        assert await session.scalar(count) == 0
        assert await session.get(ConversationRow, users["id"]) is not None


async def test_server_code_may_store_items_under_ids_it_already_gave_out(
    connect: ConnectJsonCaller, world: World, db: Database
) -> None:
    """What a Responses turn does with its output: the items keep the ids the client saw in the response."""
    token = world.tokens["member"]
    conv = await create_conversation(connect, token, world.tenant_id, [message("question")])
    answer = normalize_items([{"role": "assistant", "content": "answer"}])[0]
    chosen = f"msg_{secrets.token_hex(24)}"
    async with db.transaction() as session:
        [stored] = await conversations.append_items(session, conv["id"], [replace(answer, id=chosen)])
    assert stored.id == chosen
    got = must(
        await connect.call(
            f"{ITEMS}/GetItem",
            {"tenantId": world.tenant_id, "conversationId": conv["id"], "itemId": chosen},
            token=token,
        )
    )
    assert got["item"]["content"][0]["text"] == "answer" and got["item"]["status"] == "completed"
    async with db.read() as session:
        assert [i.id for i in await conversations.history(session, conv["id"])][-1] == chosen
