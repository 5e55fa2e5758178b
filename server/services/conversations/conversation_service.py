"""/platform.conversations.v1.ConversationService/* — rules in server.domain.conversations, the owner rule in
server.permissions.conversations."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.conversations.v1 import conversation_service_pb2 as pb
from gen.platform.conversations.v1.conversation_service_connect import ConversationService
from server.domain import conversations
from server.services import Deps
from server.services.context import current_principal
from server.services.conversations import convert

__all__ = ["ConversationServiceHandler"]

Ctx = RequestContext[Any, Any]


class ConversationServiceHandler(ConversationService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def create_conversation(
        self, request: pb.CreateConversationRequest, ctx: Ctx
    ) -> pb.CreateConversationResponse:
        items = convert.items_in(request.items)
        async with self._db.transaction() as s:
            created = await conversations.create_conversation(
                s, current_principal(), request.tenant_id, dict(request.metadata), items
            )
        return pb.CreateConversationResponse(conversation=convert.conversation(created))

    async def get_conversation(self, request: pb.GetConversationRequest, ctx: Ctx) -> pb.GetConversationResponse:
        async with self._db.read() as s:
            found = await conversations.get_conversation(
                s, current_principal(), request.tenant_id, request.conversation_id
            )
        return pb.GetConversationResponse(conversation=convert.conversation(found))

    async def update_conversation(
        self, request: pb.UpdateConversationRequest, ctx: Ctx
    ) -> pb.UpdateConversationResponse:
        async with self._db.transaction() as s:
            updated = await conversations.update_conversation(
                s, current_principal(), request.tenant_id, request.conversation_id, dict(request.metadata)
            )
        return pb.UpdateConversationResponse(conversation=convert.conversation(updated))

    async def delete_conversation(
        self, request: pb.DeleteConversationRequest, ctx: Ctx
    ) -> pb.DeleteConversationResponse:
        async with self._db.transaction() as s:
            await conversations.delete_conversation(s, current_principal(), request.tenant_id, request.conversation_id)
        return pb.DeleteConversationResponse()

    async def list_conversations(self, request: pb.ListConversationsRequest, ctx: Ctx) -> pb.ListConversationsResponse:
        async with self._db.read() as s:
            page = await conversations.list_conversations(
                s,
                current_principal(),
                request.tenant_id,
                after=request.after,
                limit=request.limit or None,
                order=convert.order_in(request.order),
            )
        return pb.ListConversationsResponse(
            conversations=[convert.conversation(c) for c in page.items],
            first_id=page.first_id or "",
            last_id=page.last_id or "",
            has_more=page.has_more,
        )
