"""/platform.conversations.v1.ConversationItemService/* — rules in server.domain.conversations (limits and item
shapes in server.domain.conversation_items), the owner rule in server.permissions.conversations."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.conversations.v1 import conversation_item_service_pb2 as pb
from gen.platform.conversations.v1.conversation_item_service_connect import ConversationItemService
from server.domain import conversations
from server.services import Deps
from server.services.context import current_principal
from server.services.conversations import convert

__all__ = ["ConversationItemServiceHandler"]

Ctx = RequestContext[Any, Any]


class ConversationItemServiceHandler(ConversationItemService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_items(self, request: pb.CreateItemsRequest, ctx: Ctx) -> pb.CreateItemsResponse:
        items = convert.items_in(request.items)
        async with self._db.transaction() as s:
            page = await conversations.create_items(
                s, current_principal(), request.tenant_id, request.conversation_id, items
            )
        return pb.CreateItemsResponse(
            items=[convert.item(i) for i in page.items],
            first_id=page.first_id or "",
            last_id=page.last_id or "",
            has_more=page.has_more,
        )

    async def list_items(self, request: pb.ListItemsRequest, ctx: Ctx) -> pb.ListItemsResponse:
        async with self._db.read() as s:
            page = await conversations.list_items(
                s,
                current_principal(),
                request.tenant_id,
                request.conversation_id,
                after=request.after,
                limit=request.limit or None,
                order=convert.order_in(request.order),
            )
        return pb.ListItemsResponse(
            items=[convert.item(i) for i in page.items],
            first_id=page.first_id or "",
            last_id=page.last_id or "",
            has_more=page.has_more,
        )

    async def get_item(self, request: pb.GetItemRequest, ctx: Ctx) -> pb.GetItemResponse:
        async with self._db.read() as s:
            found = await conversations.get_item(
                s, current_principal(), request.tenant_id, request.conversation_id, request.item_id
            )
        return pb.GetItemResponse(item=convert.item(found))

    async def delete_item(self, request: pb.DeleteItemRequest, ctx: Ctx) -> pb.DeleteItemResponse:
        async with self._db.transaction() as s:
            updated = await conversations.delete_item(
                s, current_principal(), request.tenant_id, request.conversation_id, request.item_id
            )
        return pb.DeleteItemResponse(conversation=convert.conversation(updated))

    async def truncate_conversation(
        self, request: pb.TruncateConversationRequest, ctx: Ctx
    ) -> pb.TruncateConversationResponse:
        async with self._db.transaction() as s:
            updated = await conversations.truncate_conversation(
                s, current_principal(), request.tenant_id, request.conversation_id, request.from_item_id
            )
        return pb.TruncateConversationResponse(conversation=convert.conversation(updated))
