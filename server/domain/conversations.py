"""Conversations and their items: the one implementation behind ConversationService, ConversationItemService and
the gateway's /v1/conversations.

Who owns and who sees a conversation is `server.permissions.conversations`: every use case first asks it for the
caller's owner in the tenant, then only ever touches conversations of that owner; any other conversation id is
not_found. Items are ordered by a per-conversation sequence number that only grows (a truncated conversation never
reuses numbers). Item shapes and limits are `server.domain.conversation_items`.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Generic, TypeVar

from sqlalchemy import delete, func, select, tuple_, update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.conversation_items import (
    DEFAULT_LIST_LIMIT,
    HISTORY_LIMIT,
    MAX_LIST_LIMIT,
    NewItem,
    new_item_id,
    normalize_items,
)
from server.domain.principal import Principal
from server.domain.validation import require_nonempty
from server.errors import InvalidArgument, NotFound
from server.store.db import as_utc
from server.store.models import ConversationItemRow, ConversationRow, utcnow

__all__ = [
    "Conversation",
    "Item",
    "Page",
    "SortOrder",
    "append_items",
    "create_conversation",
    "create_items",
    "delete_conversation",
    "delete_item",
    "get_conversation",
    "get_item",
    "history",
    "list_conversations",
    "list_items",
    "require_conversation",
    "truncate_conversation",
    "update_conversation",
]

T = TypeVar("T")
_MAX_ID = 64  # the id columns' length
MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512


class SortOrder(Enum):
    ASC = "asc"
    DESC = "desc"


@dataclass(frozen=True)
class Conversation:
    id: str
    tenant_id: str
    created_at: datetime
    metadata: dict[str, str]
    item_count: int
    owner_user_id: str | None
    owner_service_account_id: str | None


@dataclass(frozen=True)
class Item:
    """One stored item; `body` is its OpenAI shape (id, type, role, status and the stored fields)."""

    id: str
    sequence: int
    created_at: datetime
    body: dict[str, Any]


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    has_more: bool = False
    first_id: str | None = None
    last_id: str | None = None


def _page(items: list[T], ids: list[str], has_more: bool) -> Page[T]:
    return Page(items, has_more, ids[0] if ids else None, ids[-1] if ids else None)


def _conversation(row: ConversationRow, item_count: int) -> Conversation:
    return Conversation(
        id=row.id,
        tenant_id=row.tenant_id,
        created_at=as_utc(row.created_at) or row.created_at,
        metadata=dict(row.metadata_ or {}),
        item_count=item_count,
        owner_user_id=row.owner_user_id,
        owner_service_account_id=row.owner_service_account_id,
    )


def _item(row: ConversationItemRow) -> Item:
    body: dict[str, Any] = {"id": row.id, "type": row.type}
    if row.role:
        body["role"] = row.role
    if row.status:
        body["status"] = row.status
    body.update(row.data or {})
    return Item(row.id, row.sequence, as_utc(row.created_at) or row.created_at, body)


def _metadata(metadata: Mapping[str, Any] | None) -> dict[str, str]:
    metadata = dict(metadata or {})
    if len(metadata) > MAX_METADATA_PAIRS:
        raise InvalidArgument(f"metadata may hold at most {MAX_METADATA_PAIRS} pairs", field="metadata")
    for key, value in metadata.items():
        if not isinstance(key, str) or not 1 <= len(key) <= MAX_METADATA_KEY:
            raise InvalidArgument(f"metadata keys must be 1 to {MAX_METADATA_KEY} characters", field="metadata")
        if not isinstance(value, str) or len(value) > MAX_METADATA_VALUE:
            raise InvalidArgument(
                f"metadata[{key!r}] must be a string of at most {MAX_METADATA_VALUE} characters", field="metadata"
            )
    return metadata


def _limit(limit: int | None) -> int:
    if limit is None:
        return DEFAULT_LIST_LIMIT
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidArgument(f"limit must be between 1 and {MAX_LIST_LIMIT}", field="limit")
    return limit


def _plausible(value: str) -> bool:
    """Whether `value` could be one of our ids at all; a longer one is unknown without asking the database. (No
    request string reaches here holding NUL: both APIs refuse it as they read a request.)"""
    return len(value) <= _MAX_ID


async def _count(session: AsyncSession, conversation_id: str) -> int:
    query = select(func.count()).where(ConversationItemRow.conversation_id == conversation_id)
    return int(await session.scalar(query) or 0)


async def require_conversation(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    conversation_id: str,
    *,
    field: str = "conversation_id",
) -> ConversationRow:
    """The caller's own conversation, or not_found (whether it does not exist or belongs to someone else). `field`
    is the request's name for the id (the gateway's /v1/responses calls it `conversation`)."""
    owner = await permissions.conversation_owner(session, principal, tenant_id)
    require_nonempty(conversation_id, field)
    row = await session.get(ConversationRow, conversation_id) if _plausible(conversation_id) else None
    if row is None or not permissions.owns_conversation(owner, row):
        raise NotFound(f"{field} {conversation_id!r} not found", field=field)
    return row


async def append_items(session: AsyncSession, conversation_id: str, items: Sequence[NewItem]) -> list[Item]:
    """Store validated items at the end of a conversation whose access was already checked.

    One UPDATE … RETURNING reserves the sequence numbers: on PostgreSQL its row lock makes concurrent appends to one
    conversation wait for each other, so numbers are never handed out twice. A conversation deleted since it was
    checked (by a concurrent request) is not_found.
    """
    if not items:
        return []
    last = await session.scalar(
        update(ConversationRow)
        .where(ConversationRow.id == conversation_id)
        .values(last_sequence=ConversationRow.last_sequence + len(items))
        .returning(ConversationRow.last_sequence)
        .execution_options(synchronize_session=False)
    )
    if last is None:
        raise NotFound(f"conversation_id {conversation_id!r} not found", field="conversation_id")
    now = utcnow()
    rows = [
        ConversationItemRow(
            id=item.id or new_item_id(item.type),
            conversation_id=conversation_id,
            sequence=last - len(items) + 1 + i,
            type=item.type,
            role=item.role,
            status=item.status,
            data=item.data,
            created_at=now,
        )
        for i, item in enumerate(items)
    ]
    session.add_all(rows)
    await session.flush()
    return [_item(row) for row in rows]


# ---- conversations ----------------------------------------------------------------------------------------------


async def create_conversation(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    metadata: Mapping[str, Any] | None,
    items: Sequence[Any],
) -> Conversation:
    owner = await permissions.conversation_owner(session, principal, tenant_id)
    clean = _metadata(metadata)
    new_items = normalize_items(items, allow_empty=True)
    row = ConversationRow(
        id=f"conv_{secrets.token_hex(24)}",
        tenant_id=owner.tenant_id,
        owner_user_id=owner.user_id,
        owner_service_account_id=owner.service_account_id,
        metadata_=clean,
        last_sequence=0,
        created_at=utcnow(),
    )
    session.add(row)
    await session.flush()
    await append_items(session, row.id, new_items)
    return _conversation(row, len(new_items))


async def get_conversation(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str
) -> Conversation:
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    return _conversation(row, await _count(session, row.id))


async def update_conversation(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str, metadata: Mapping[str, Any]
) -> Conversation:
    """Replaces the metadata."""
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    row.metadata_ = _metadata(metadata)
    await session.flush()
    return _conversation(row, await _count(session, row.id))


async def delete_conversation(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str
) -> None:
    """Deletes the conversation and its items."""
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    await session.execute(delete(ConversationItemRow).where(ConversationItemRow.conversation_id == row.id))
    await session.delete(row)
    await session.flush()


async def list_conversations(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    *,
    after: str = "",
    limit: int | None = None,
    order: SortOrder = SortOrder.DESC,
) -> Page[Conversation]:
    """The caller's own conversations in the tenant, by creation time."""
    owner = await permissions.conversation_owner(session, principal, tenant_id)
    size = _limit(limit)
    mine = permissions.owned_conversations(owner)
    key = tuple_(ConversationRow.created_at, ConversationRow.id)
    # One query: each row's item count is an index range count on (conversation_id, sequence).
    count = (
        select(func.count())
        .where(ConversationItemRow.conversation_id == ConversationRow.id)
        .correlate(ConversationRow)
        .scalar_subquery()
    )
    query = select(ConversationRow, count).where(mine)
    if after:
        at = select(ConversationRow.created_at, ConversationRow.id).where(mine, ConversationRow.id == after)
        cursor = (await session.execute(at)).first() if _plausible(after) else None
        if cursor is None:
            raise InvalidArgument(f"after {after!r} is not one of your conversations", field="after")
        query = query.where(key > tuple_(*cursor) if order == SortOrder.ASC else key < tuple_(*cursor))
    if order == SortOrder.ASC:
        query = query.order_by(ConversationRow.created_at, ConversationRow.id)
    else:
        query = query.order_by(ConversationRow.created_at.desc(), ConversationRow.id.desc())
    rows = (await session.execute(query.limit(size + 1))).all()
    found = [_conversation(row, int(n)) for row, n in rows[:size]]
    return _page(found, [c.id for c in found], len(rows) > size)


# ---- items ------------------------------------------------------------------------------------------------------


async def create_items(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str, items: Sequence[Any]
) -> Page[Item]:
    """Appends 1 to 20 items; the page holds exactly the created items (has_more is false)."""
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    created = await append_items(session, row.id, normalize_items(items))
    return _page(created, [i.id for i in created], False)


async def _sequence_of(session: AsyncSession, conversation_id: str, item_id: str) -> int | None:
    if not _plausible(item_id):
        return None
    query = select(ConversationItemRow.sequence).where(
        ConversationItemRow.conversation_id == conversation_id, ConversationItemRow.id == item_id
    )
    return await session.scalar(query)


async def list_items(
    session: AsyncSession,
    principal: Principal,
    tenant_id: str,
    conversation_id: str,
    *,
    after: str = "",
    limit: int | None = None,
    order: SortOrder = SortOrder.DESC,
) -> Page[Item]:
    """One page of items in sequence order (`after` is the id of the last item of the previous page)."""
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    size = _limit(limit)
    query = select(ConversationItemRow).where(ConversationItemRow.conversation_id == row.id)
    if after:
        cursor = await _sequence_of(session, row.id, after)
        if cursor is None:
            raise InvalidArgument(f"after {after!r} is not an item of this conversation", field="after")
        ascending = order == SortOrder.ASC
        query = query.where(
            ConversationItemRow.sequence > cursor if ascending else ConversationItemRow.sequence < cursor
        )
    if order == SortOrder.ASC:
        query = query.order_by(ConversationItemRow.sequence)
    else:
        query = query.order_by(ConversationItemRow.sequence.desc())
    rows = list(await session.scalars(query.limit(size + 1)))
    found = [_item(r) for r in rows[:size]]
    return _page(found, [i.id for i in found], len(rows) > size)


async def get_item(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str, item_id: str
) -> Item:
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    require_nonempty(item_id, "item_id")
    item = await session.get(ConversationItemRow, item_id) if _plausible(item_id) else None
    if item is None or item.conversation_id != row.id:
        raise NotFound(f"item_id {item_id!r} not found in this conversation", field="item_id")
    return _item(item)


async def delete_item(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str, item_id: str
) -> Conversation:
    """Deletes one item; returns the conversation as it is afterwards."""
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    require_nonempty(item_id, "item_id")
    if not _plausible(item_id):
        raise NotFound(f"item_id {item_id!r} not found in this conversation", field="item_id")
    result = await session.execute(
        delete(ConversationItemRow).where(
            ConversationItemRow.conversation_id == row.id, ConversationItemRow.id == item_id
        )
    )
    if not result.rowcount:  # type: ignore[attr-defined]
        raise NotFound(f"item_id {item_id!r} not found in this conversation", field="item_id")
    return _conversation(row, await _count(session, row.id))


async def truncate_conversation(
    session: AsyncSession, principal: Principal, tenant_id: str, conversation_id: str, from_item_id: str
) -> Conversation:
    """Deletes `from_item_id` and every item after it by sequence order (message editing and retry)."""
    row = await require_conversation(session, principal, tenant_id, conversation_id)
    require_nonempty(from_item_id, "from_item_id")
    start = await _sequence_of(session, row.id, from_item_id)
    if start is None:
        raise NotFound(f"from_item_id {from_item_id!r} not found in this conversation", field="from_item_id")
    await session.execute(
        delete(ConversationItemRow).where(
            ConversationItemRow.conversation_id == row.id, ConversationItemRow.sequence >= start
        )
    )
    return _conversation(row, await _count(session, row.id))


async def history(session: AsyncSession, conversation_id: str, limit: int = HISTORY_LIMIT) -> list[Item]:
    """The latest `limit` items (at most the gateway's 128 by default), oldest first: the model context a Responses
    call continues from. The caller has already checked access (`require_conversation`)."""
    if limit <= 0:
        return []
    query = (
        select(ConversationItemRow)
        .where(ConversationItemRow.conversation_id == conversation_id)
        .order_by(ConversationItemRow.sequence.desc())
        .limit(limit)
    )
    rows = list(await session.scalars(query))
    return [_item(r) for r in reversed(rows)]
