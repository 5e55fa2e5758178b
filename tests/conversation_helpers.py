"""Shared helpers for conversation tests: item builders and calls through the management API (Connect JSON)."""

from __future__ import annotations

from typing import Any

from tests.clients import ConnectJsonCaller, Result
from tests.world import must

CONVERSATIONS = "platform.conversations.v1.ConversationService"
ITEMS = "platform.conversations.v1.ConversationItemService"


def message(text: str, role: str = "user") -> dict[str, Any]:
    """A message item as a ConversationItem message in proto JSON."""
    part = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


async def create_conversation(
    connect: ConnectJsonCaller,
    token: str,
    tenant_id: str,
    items: list[dict[str, Any]] | None = None,
    metadata: dict[str, str] | None = None,
) -> dict[str, Any]:
    body = {"tenantId": tenant_id, "items": items or [], "metadata": metadata or {}}
    return must(await connect.call(f"{CONVERSATIONS}/CreateConversation", body, token=token))["conversation"]


async def add_items(
    connect: ConnectJsonCaller, token: str, tenant_id: str, conversation_id: str, items: list[dict[str, Any]]
) -> Result:
    body = {"tenantId": tenant_id, "conversationId": conversation_id, "items": items}
    return await connect.call(f"{ITEMS}/CreateItems", body, token=token)


async def list_items(
    connect: ConnectJsonCaller, token: str, tenant_id: str, conversation_id: str, **query: Any
) -> Result:
    body = {"tenantId": tenant_id, "conversationId": conversation_id, **query}
    return await connect.call(f"{ITEMS}/ListItems", body, token=token, get=True)


async def all_item_ids(connect: ConnectJsonCaller, token: str, tenant_id: str, conversation_id: str) -> list[str]:
    """Every item id, oldest first (one page of 100 is enough for these tests)."""
    page = must(await list_items(connect, token, tenant_id, conversation_id, limit=100, order="SORT_ORDER_ASC"))
    assert not page.get("hasMore")
    return [item["id"] for item in page.get("items", [])]
