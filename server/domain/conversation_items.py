"""Conversation items: the OpenAI Responses item shapes a conversation stores, validated and normalised.

Items arrive as JSON objects (the gateway's /v1/conversations bodies, or ConversationItem messages converted by the
management handlers) and are stored as: type, role, status and the remaining fields verbatim (`data`). Validation
names the offending field as `items[i].<field>`. Content parts are text of any kind, images by URL and (in assistant
messages) refusals: what a conversation holds is sent to a chat model on every later turn, so a part no chat model
can be sent (a file, an image by `file_id`: the platform keeps no uploaded files; audio; a screenshot) is refused
when it is stored, not on every turn after. Ids are always assigned here: `msg_…` for messages, `fc_…` for
function calls and so on (`item_…` for kinds without a conventional prefix); an id a client sends is ignored.

Limits (spec): at most 20 items per CreateItems (and per CreateConversation); ListItems pages hold 1 to 100 items,
20 by default; the gateway reads at most the latest 128 items of a conversation as history.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from server.errors import InvalidArgument
from server.input_bounds import value_depth

__all__ = [
    "DEFAULT_LIST_LIMIT",
    "HISTORY_LIMIT",
    "ITEM_TYPES",
    "MAX_ITEMS_PER_CALL",
    "MAX_LIST_LIMIT",
    "PART_TYPES",
    "TEXT_PART_TYPES",
    "NewItem",
    "image_url",
    "new_item_id",
    "normalize_items",
    "required_fields",
]

MAX_ITEMS_PER_CALL = 20
DEFAULT_LIST_LIMIT = 20
MAX_LIST_LIMIT = 100
# The gateway keeps (reads back as model context) at most this many of a conversation's latest items.
HISTORY_LIMIT = 128

_STRING, _LIST, _BOOL, _STRING_OR_LIST, _OBJECT = (
    "a string",
    "an array",
    "a boolean",
    "a string or an array",
    "an object",
)
# Each storable item type and the fields it requires (with their JSON kind).
_REQUIRED: dict[str, dict[str, str]] = {
    "message": {"role": _STRING, "content": _STRING_OR_LIST},
    "function_call": {"call_id": _STRING, "name": _STRING, "arguments": _STRING},
    "function_call_output": {"call_id": _STRING, "output": _STRING_OR_LIST},
    "reasoning": {"summary": _LIST},
    "mcp_list_tools": {"server_label": _STRING, "tools": _LIST},
    "mcp_call": {"server_label": _STRING, "name": _STRING, "arguments": _STRING},
    "mcp_approval_request": {"server_label": _STRING, "name": _STRING, "arguments": _STRING},
    "mcp_approval_response": {"approval_request_id": _STRING, "approve": _BOOL},
    "custom_tool_call": {"call_id": _STRING, "name": _STRING, "input": _STRING},
    "custom_tool_call_output": {"call_id": _STRING, "output": _STRING_OR_LIST},
    "computer_call_output": {"call_id": _STRING, "output": _OBJECT},
    **{
        kind: {}
        for kind in (
            "file_search_call",
            "web_search_call",
            "image_generation_call",
            "computer_call",
            "code_interpreter_call",
            "local_shell_call",
            "local_shell_call_output",
            "shell_call",
            "shell_call_output",
            "apply_patch_call",
            "apply_patch_call_output",
            "tool_search_call",
            "tool_search_output",
            "additional_tools",
            "compaction",
            "program",
            "program_output",
        )
    },
}
ITEM_TYPES = frozenset(_REQUIRED)
_PREFIXES = {
    "message": "msg",
    "function_call": "fc",
    "function_call_output": "fco",
    "reasoning": "rs",
    "mcp_list_tools": "mcpl",
    "mcp_call": "mcp",
    "mcp_approval_request": "mcpr",
    "mcp_approval_response": "mcpa",
    "custom_tool_call": "ctc",
    "custom_tool_call_output": "ctco",
}
_MESSAGE_ROLES = ("user", "assistant", "system", "developer")
_ROLES = frozenset({*_MESSAGE_ROLES, "unknown", "critic", "discriminator", "tool"})
_MESSAGE_STATUSES = ("in_progress", "completed", "incomplete")
_DEFAULT_COMPLETED = frozenset({"message", "function_call", "function_call_output", "mcp_call", "custom_tool_call"})
TEXT_PART_TYPES = frozenset({"input_text", "output_text", "text", "summary_text", "reasoning_text"})
# Every content part an item may hold (see the module docstring); gateway.responses.translate sends them by this same
# table, so what is stored can always be sent.
PART_TYPES = TEXT_PART_TYPES | {"input_image", "refusal"}
_STATUS = re.compile(r"[a-z_]{1,32}")
# Identifiers may not be empty (an empty arguments or output string is a legitimate value).
_NONEMPTY = frozenset({"call_id", "name", "server_label", "approval_request_id"})


@dataclass(frozen=True)
class NewItem:
    """A validated item ready to store: `data` holds every field but id, type, role and status.

    `id` is None for items from clients (the store assigns one); server code that already showed an item to a
    client under an id of its own making (a Responses turn's output) passes that id.
    """

    type: str
    role: str
    status: str
    data: dict[str, Any]
    id: str | None = None


# Items read back over the management API carry their extra fields in a google.protobuf.Struct, where each JSON
# level costs two message levels and the runtime stops at 100: a deeper item would be stored but never readable.
MAX_ITEM_DEPTH = 32


def required_fields(item_type: str) -> frozenset[str]:
    return frozenset(_REQUIRED.get(item_type, {}))


def new_item_id(item_type: str) -> str:
    """An OpenAI-looking id: a kind prefix and 48 hex digits."""
    return f"{_PREFIXES.get(item_type, 'item')}_{secrets.token_hex(24)}"


def _is_kind(value: Any, kind: str) -> bool:
    if kind == _STRING:
        return isinstance(value, str)
    if kind == _LIST:
        return isinstance(value, list)
    if kind == _BOOL:
        return isinstance(value, bool)
    if kind == _STRING_OR_LIST:
        return isinstance(value, str | list)
    return isinstance(value, Mapping)


def image_url(part: Mapping[str, Any], where: str) -> str:
    """An input_image part's URL (http(s) or data:): images are taken by URL only, as there are no uploaded files a
    `file_id` could name."""
    url = part.get("image_url")
    if not isinstance(url, str) or not url:
        raise InvalidArgument(
            f"{where}.image_url is required: images are sent by URL (file_id is not supported)",
            field=f"{where}.image_url",
        )
    return url


def _part(part: Any, where: str, role: str | None = None) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        raise InvalidArgument(f"{where} must be an object", field=where)
    kind = part.get("type")
    if not isinstance(kind, str) or kind not in PART_TYPES:
        known = ", ".join(sorted(PART_TYPES))
        raise InvalidArgument(f"{where}.type must be one of: {known}", field=f"{where}.type")
    if kind in TEXT_PART_TYPES and not isinstance(part.get("text"), str):
        raise InvalidArgument(f"{where}.text must be a string", field=f"{where}.text")
    if kind == "input_image":
        image_url(part, where)
    if kind == "refusal":
        if role != "assistant":  # a chat model takes a refusal only as its own earlier answer
            raise InvalidArgument(f"{where}.type refusal is allowed in assistant messages only", field=f"{where}.type")
        if not isinstance(part.get("refusal"), str):
            raise InvalidArgument(f"{where}.refusal must be a string", field=f"{where}.refusal")
    out = dict(part)
    if kind == "output_text":
        out.setdefault("annotations", [])
    return out


def _message(item: dict[str, Any], where: str) -> None:
    role = item["role"]
    if role not in _MESSAGE_ROLES:
        raise InvalidArgument(f"{where}.role must be one of: {', '.join(_MESSAGE_ROLES)}", field=f"{where}.role")
    status = item.get("status")
    if status is not None and status not in _MESSAGE_STATUSES:
        allowed = ", ".join(_MESSAGE_STATUSES)
        raise InvalidArgument(f"{where}.status must be one of: {allowed}", field=f"{where}.status")
    content = item["content"]
    if isinstance(content, str):  # the easy form: one text part of the kind the role implies
        content = [{"type": "output_text" if role == "assistant" else "input_text", "text": content}]
    if not content:  # a chat model refuses a message of no parts, so every later turn of its conversation would fail
        raise InvalidArgument(f"{where}.content must hold at least one content part", field=f"{where}.content")
    item["content"] = [_part(part, f"{where}.content[{j}]", role) for j, part in enumerate(content)]


def _item_type(raw: Mapping[str, Any], where: str) -> str:
    kind = raw.get("type")
    if kind is None and "role" in raw:  # EasyInputMessage: type may be omitted
        return "message"
    if kind == "item_reference":
        raise InvalidArgument(
            f"{where}.type item_reference cannot be stored in a conversation; send the item itself",
            field=f"{where}.type",
        )
    if not isinstance(kind, str) or kind not in ITEM_TYPES:
        raise InvalidArgument(f"{where}.type {kind!r} is not a conversation item type", field=f"{where}.type")
    return kind


def _normalize(raw: Any, where: str) -> NewItem:
    if not isinstance(raw, Mapping):
        raise InvalidArgument(f"{where} must be an object", field=where)
    if value_depth(dict(raw)) > MAX_ITEM_DEPTH:
        raise InvalidArgument(f"{where} nests deeper than {MAX_ITEM_DEPTH} levels", field=where)
    kind = _item_type(raw, where)
    item = {k: v for k, v in raw.items() if k not in ("id", "type")}
    for name, expected in _REQUIRED[kind].items():
        value = item.get(name)
        if name not in item or not _is_kind(value, expected) or (name in _NONEMPTY and not value):
            raise InvalidArgument(f"{where}.{name} is required and must be {expected}", field=f"{where}.{name}")
    if kind == "message":
        _message(item, where)
    elif isinstance(item.get("output"), list):  # a tool's output as content parts, checked as a message's are
        item["output"] = [_part(part, f"{where}.output[{j}]") for j, part in enumerate(item["output"])]
    role = item.pop("role", "") or ""
    if role and (not isinstance(role, str) or role not in _ROLES):
        raise InvalidArgument(f"{where}.role {role!r} is not a role", field=f"{where}.role")
    status = item.pop("status", None) or ("completed" if kind in _DEFAULT_COMPLETED else "")
    if not isinstance(status, str) or (status and not _STATUS.fullmatch(status)):
        raise InvalidArgument(f"{where}.status must be a status such as 'completed'", field=f"{where}.status")
    return NewItem(type=kind, role=role, status=status, data=item)


def normalize_items(
    items: Sequence[Any], *, field: str = "items", allow_empty: bool = False, capped: bool = True
) -> list[NewItem]:
    """Validate and normalise items (up to `MAX_ITEMS_PER_CALL` unless not `capped`: a Responses turn's input and
    output are bounded by the request's size); the first problem is reported by field, indexed from the first."""
    if capped and len(items) > MAX_ITEMS_PER_CALL:
        raise InvalidArgument(
            f"{field} may hold at most {MAX_ITEMS_PER_CALL} items per call, got {len(items)}", field=field
        )
    if not items and not allow_empty:
        raise InvalidArgument(f"{field} must hold at least one item", field=field)
    return [_normalize(raw, f"{field}[{i}]") for i, raw in enumerate(items)]
