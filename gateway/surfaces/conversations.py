"""/v1/conversations: the OpenAI Conversations API over the store and rules of ConversationItemService.

Every route calls `server.domain.conversations` with the key's principal and the key's tenant, so the owner rule
(`server.permissions.conversations`), limits and item validation are the management API's. Wire shapes follow what
the official `openai` SDK parses:

    POST   /v1/conversations                         {items?, metadata?}  -> conversation
    GET    /v1/conversations/{id}                                         -> conversation
    POST   /v1/conversations/{id}                    {metadata}           -> conversation (metadata replaced)
    DELETE /v1/conversations/{id}                                         -> conversation.deleted
    POST   /v1/conversations/{id}/items              {items}              -> list of the created items
    GET    /v1/conversations/{id}/items?after&limit&order                 -> list page (order defaults to desc)
    GET    /v1/conversations/{id}/items/{item_id}                         -> item
    DELETE /v1/conversations/{id}/items/{item_id}                         -> conversation (as the SDK types it)

`include` is accepted and ignored: items are always returned whole.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from gateway.context import DB, PRINCIPAL
from gateway.middleware import read_json
from server.domain import conversations
from server.domain.conversations import Conversation, Item, Page, SortOrder
from server.errors import InvalidArgument

__all__ = ["routes"]

_SELF = ""  # the tenant: an API key acts only in its own tenant


def _json(body: dict[str, Any]) -> web.Response:
    return web.Response(body=orjson.dumps(body), content_type="application/json")


def _conversation(value: Conversation) -> dict[str, Any]:
    return {
        "id": value.id,
        "object": "conversation",
        "created_at": int(value.created_at.timestamp()),
        "metadata": value.metadata,
    }


def _list(page: Page[Item]) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [item.body for item in page.items],
        "first_id": page.first_id,
        "last_id": page.last_id,
        "has_more": page.has_more,
    }


def _items(payload: dict[str, Any], *, required: bool) -> list[Any]:
    items = payload.get("items")
    if items is None and not required:
        return []
    if not isinstance(items, list):
        raise InvalidArgument("'items' must be an array of items.", field="items")
    return items


def _metadata(payload: dict[str, Any], *, required: bool) -> dict[str, Any]:
    if "metadata" not in payload and required:
        raise InvalidArgument("'metadata' is required.", field="metadata")
    metadata = payload.get("metadata")
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise InvalidArgument("'metadata' must be an object of string values.", field="metadata")
    return metadata


def _limit(request: web.Request) -> int | None:
    raw = request.query.get("limit")
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise InvalidArgument("'limit' must be an integer between 1 and 100.", field="limit") from None


def _order(request: web.Request) -> SortOrder:
    raw = request.query.get("order") or "desc"
    try:
        return SortOrder(raw)
    except ValueError:
        raise InvalidArgument("'order' must be 'asc' or 'desc'.", field="order") from None


async def create_conversation(request: web.Request) -> web.StreamResponse:
    payload = await read_json(request)
    items, metadata = _items(payload, required=False), _metadata(payload, required=False)
    async with request.app[DB].transaction() as s:
        created = await conversations.create_conversation(s, request[PRINCIPAL], _SELF, metadata, items)
    return _json(_conversation(created))


async def get_conversation(request: web.Request) -> web.StreamResponse:
    async with request.app[DB].read() as s:
        found = await conversations.get_conversation(s, request[PRINCIPAL], _SELF, request.match_info["id"])
    return _json(_conversation(found))


async def update_conversation(request: web.Request) -> web.StreamResponse:
    metadata = _metadata(await read_json(request), required=True)
    async with request.app[DB].transaction() as s:
        updated = await conversations.update_conversation(
            s, request[PRINCIPAL], _SELF, request.match_info["id"], metadata
        )
    return _json(_conversation(updated))


async def delete_conversation(request: web.Request) -> web.StreamResponse:
    conversation_id = request.match_info["id"]
    async with request.app[DB].transaction() as s:
        await conversations.delete_conversation(s, request[PRINCIPAL], _SELF, conversation_id)
    return _json({"id": conversation_id, "object": "conversation.deleted", "deleted": True})


async def create_items(request: web.Request) -> web.StreamResponse:
    items = _items(await read_json(request), required=True)
    async with request.app[DB].transaction() as s:
        page = await conversations.create_items(s, request[PRINCIPAL], _SELF, request.match_info["id"], items)
    return _json(_list(page))


async def list_items(request: web.Request) -> web.StreamResponse:
    limit, order = _limit(request), _order(request)
    async with request.app[DB].read() as s:
        page = await conversations.list_items(
            s,
            request[PRINCIPAL],
            _SELF,
            request.match_info["id"],
            after=request.query.get("after", ""),
            limit=limit,
            order=order,
        )
    return _json(_list(page))


async def get_item(request: web.Request) -> web.StreamResponse:
    async with request.app[DB].read() as s:
        item = await conversations.get_item(
            s, request[PRINCIPAL], _SELF, request.match_info["id"], request.match_info["item_id"]
        )
    return _json(item.body)


async def delete_item(request: web.Request) -> web.StreamResponse:
    async with request.app[DB].transaction() as s:
        updated = await conversations.delete_item(
            s, request[PRINCIPAL], _SELF, request.match_info["id"], request.match_info["item_id"]
        )
    return _json(_conversation(updated))


def routes(app: web.Application) -> None:
    base = "/v1/conversations"
    app.router.add_post(base, create_conversation)
    app.router.add_get(base + "/{id}", get_conversation)
    app.router.add_post(base + "/{id}", update_conversation)
    app.router.add_delete(base + "/{id}", delete_conversation)
    app.router.add_post(base + "/{id}/items", create_items)
    app.router.add_get(base + "/{id}/items", list_items)
    app.router.add_get(base + "/{id}/items/{item_id}", get_item)
    app.router.add_delete(base + "/{id}/items/{item_id}", delete_item)
