"""Find a string holding NUL anywhere in a decoded request.

PostgreSQL's text cannot hold NUL, and its driver refuses such a value before the statement is sent: a NUL in any
id, name or search of a management request reached the database as an internal error on PostgreSQL (and SQLite
compared the string as if it ended there). No field of the contract has a use for it, so every request is checked
once, right after decoding (server.codecs), and refused naming the field. The check walks only what was set, and
only when the request's bytes could hold a NUL at all (`could_hold_nul`).

The gateway's JSON bodies are checked the same way (`find_nul_in_json`), except for the text a model reads or writes,
which the gateway names (gateway.middleware). What the platform must keep rather than refuse (an audit event naming
a refused request's path, a usage row naming an MCP server's tool) is stored `without_nul`.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.descriptor import FieldDescriptor

__all__ = ["could_hold_nul", "find_nul", "find_nul_in_json", "without_nul"]

_STRING = FieldDescriptor.TYPE_STRING
_MESSAGE = FieldDescriptor.TYPE_MESSAGE


def without_nul(text: str) -> str:
    """`text` with each NUL as U+FFFD (the replacement character): visibly not what was sent, and storable."""
    return text.replace("\x00", "\ufffd")


def could_hold_nul(data: bytes | bytearray, *, json: bool) -> bool:
    """False when no string of the request can hold NUL: JSON writes it `\\u0000` (a raw NUL is not JSON), binary
    protobuf as a zero byte (which other fields also hold, so a zero byte only means "look")."""
    return (b"\\u0000" in data) if json else (b"\x00" in data)


def find_nul(message: Any, prefix: str = "") -> str | None:
    """The JSON path of the first string holding NUL in `message` (at any depth, map keys included), or None."""
    for field, value in message.ListFields():
        path = prefix + field.json_name
        if field.type == _STRING:
            found = _in_strings(value if field.is_repeated else [value], path, field.is_repeated)
        elif field.type != _MESSAGE:
            continue
        elif field.message_type.GetOptions().map_entry:
            found = _in_map(value, path, field.message_type.fields_by_name["value"])
        elif field.is_repeated:
            found = next((f for i, m in enumerate(value) if (f := find_nul(m, f"{path}[{i}]."))), None)
        else:
            found = find_nul(value, f"{path}.")
        if found is not None:
            return found
    return None


def _in_strings(values: Any, path: str, indexed: bool) -> str | None:
    for index, text in enumerate(values):
        if "\x00" in text:
            return f"{path}[{index}]" if indexed else path
    return None


def _in_map(entries: Any, path: str, value_field: FieldDescriptor) -> str | None:
    for key, value in entries.items():
        if isinstance(key, str) and "\x00" in key:
            return path
        if value_field.type == _STRING and "\x00" in value:
            return f"{path}.{key}"
        if value_field.type == _MESSAGE and (found := find_nul(value, f"{path}.{key}.")) is not None:
            return found
    return None


def find_nul_in_json(value: Any, free_text: frozenset[str], path: str = "", key: str = "") -> str | None:
    """The path (`tools[0].vector_store_ids[1]`) of the first string holding NUL in a decoded JSON value, an object
    key included, or None. A string whose nearest key (through arrays) is in `free_text` is not looked at. Recursive:
    `value`'s depth is bounded first (server.input_bounds)."""
    if isinstance(value, str):
        return path if "\x00" in value and key not in free_text else None
    if isinstance(value, dict):
        for name, item in value.items():
            here = f"{path}.{name}" if path else name
            if "\x00" in name:
                return here
            if (found := find_nul_in_json(item, free_text, here, name)) is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if (found := find_nul_in_json(item, free_text, f"{path}[{index}]", key)) is not None:
                return found
    return None
