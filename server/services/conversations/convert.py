"""platform.conversations.v1 messages <-> domain values, nothing else.

A ConversationItem message carries the common item fields typed (type, role, status, content parts, call_id, name,
arguments, output) and every other field of the OpenAI item shape in `extra`, so an item written through /v1 reads
back here field for field, and the other way round. (google.protobuf.Struct holds numbers as doubles; whole numbers
are turned back into integers on the way in.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from google.protobuf import json_format
from google.protobuf.struct_pb2 import Struct

from gen.platform.conversations.v1 import conversation_pb2 as pb
from server.domain.conversation_items import TEXT_PART_TYPES, required_fields
from server.domain.conversations import Conversation, Item, SortOrder
from server.errors import InvalidArgument
from server.services.tenants.convert import timestamp

__all__ = ["conversation", "item", "items_in", "order_in"]

_TYPED_STRINGS = ("call_id", "name", "arguments", "output")


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole(v) for v in value]
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    return value


def _struct_in(value: Struct, where: str) -> dict[str, Any]:
    try:
        values: dict[str, Any] = _whole(json_format.MessageToDict(value))
    except ValueError:  # a NaN or infinite number: binary protobuf carries one, JSON (the item's stored form) cannot
        raise InvalidArgument(f"{where} holds a number that is NaN or infinite", field=where) from None
    return values


def _struct(value: dict[str, Any]) -> Struct | None:
    if not value:
        return None
    message = Struct()
    message.update(value)
    return message


def _typed(value: Any, implied: bool) -> bool:
    """Whether a field's value goes in its typed field: a string, and not an empty one the item could leave out.
    Proto JSON omits an empty typed string, and the way in (`_item_in`) can tell "" from absent only where the field
    is always present (a required field, a text part's text), so any other "" stays in `extra`, where it shows."""
    return isinstance(value, str) and (bool(value) or implied)


def conversation(value: Conversation) -> pb.Conversation:
    return pb.Conversation(
        id=value.id,
        tenant_id=value.tenant_id,
        create_time=timestamp(value.created_at),
        metadata=dict(value.metadata),
        item_count=value.item_count,
        owner_user_id=value.owner_user_id or "",
        owner_service_account_id=value.owner_service_account_id or "",
    )


def _part(value: dict[str, Any]) -> pb.ConversationContentPart:
    rest = dict(value)
    kind = str(rest.pop("type"))
    text = rest.pop("text") if _typed(rest.get("text"), kind in TEXT_PART_TYPES) else ""
    return pb.ConversationContentPart(type=kind, text=text, extra=_struct(rest))


def _parts(kind: str, content: Any) -> list[dict[str, Any]] | None:
    """The content as typed parts, when it is a list of parts (never empty unless the item is a message)."""
    if not isinstance(content, list) or not (content or kind == "message"):
        return None
    if all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in content):
        return content
    return None


def item(value: Item) -> pb.ConversationItem:
    body = dict(value.body)
    kind = str(body.pop("type"))
    body.pop("id", None)
    parts = _parts(kind, body.get("content"))
    if parts is not None:
        body.pop("content")
    required = required_fields(kind)
    typed = {name: body.pop(name) for name in _TYPED_STRINGS if _typed(body.get(name), name in required)}
    return pb.ConversationItem(
        id=value.id,
        type=kind,
        role=str(body.pop("role", "")),
        status=str(body.pop("status", "")),
        content=[_part(p) for p in parts or []],
        extra=_struct(body),
        create_time=timestamp(value.created_at),
        sequence=value.sequence,
        **typed,
    )


def _part_in(value: pb.ConversationContentPart, where: str) -> dict[str, Any]:
    out = _struct_in(value.extra, f"{where}.extra")
    out["type"] = value.type
    if value.text or value.type in TEXT_PART_TYPES:
        out["text"] = value.text
    return out


def items_in(values: Iterable[pb.ConversationItem]) -> list[dict[str, Any]]:
    """A request's `items` as the domain validates them; a refusal names the item (`items[2].extra`)."""
    return [_item_in(value, f"items[{i}]") for i, value in enumerate(values)]


def _item_in(value: pb.ConversationItem, where: str) -> dict[str, Any]:
    """The item as the OpenAI-shaped object the domain validates (the id, output only, is not read)."""
    out = _struct_in(value.extra, f"{where}.extra")
    out.pop("id", None)
    if value.type:
        out["type"] = value.type
    for name in ("role", "status"):
        if getattr(value, name):
            out[name] = getattr(value, name)
    if value.content:
        out["content"] = [_part_in(p, f"{where}.content[{j}]") for j, p in enumerate(value.content)]
    required = required_fields(value.type)
    for name in _TYPED_STRINGS:
        typed = getattr(value, name)
        if typed or (name in required and name not in out):
            out[name] = typed
    return out


def order_in(value: pb.SortOrder) -> SortOrder:
    return SortOrder.ASC if value == pb.SORT_ORDER_ASC else SortOrder.DESC
