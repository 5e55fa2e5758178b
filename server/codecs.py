"""The codecs every management service decodes requests with: protobuf binary, and JSON bounded before decoding.

connectrpc hands each codec the message bytes after decompression, for every protocol (Connect POST and GET
`message=`, gRPC and gRPC-Web, unary and streaming), so the rules here cover every way a request arrives:
- JSON is bounded in depth before the runtime parses it. Binary protobuf needs no extra bound: the runtime stops
  at 100 nested messages (and nested unknown groups) with an error rather than a crash.
- JSON follows the protobuf JSON mapping strictly: an unknown field or enum name is invalid_argument naming it.
- In either encoding, an enum number the contract does not define is invalid_argument naming the field
  (server.defined_enums), and so is a string holding NUL (server.nul_text).
"""

from __future__ import annotations

import functools
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import orjson
from connectrpc.code import Code
from connectrpc.codec import Codec, proto_binary_codec, proto_json_codec
from connectrpc.compat import google_protobuf_binary_codec
from connectrpc.compression import Compression
from connectrpc.compression.gzip import GzipCompression
from connectrpc.errors import ConnectError
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from server.answers import ANSWERS
from server.defined_enums import find_undefined_enum
from server.errors import InvalidArgument
from server.input_bounds import MANAGEMENT_JSON_VALUES, check_json_bounds
from server.nul_text import could_hold_nul, find_nul
from server.protojson import message_to_dict

__all__ = [
    "BoundedJsonCodec",
    "CheckedRequestCodec",
    "JsonCodec",
    "QuickGzip",
    "ReusingCodec",
    "management_codecs",
    "management_compressions",
    "reflection_codecs",
]

_MAX_DETAIL = 300


class JsonCodec:
    """Protobuf JSON with Google's runtime, compact on the wire (connectrpc's compat codec indents its output).
    Encoding goes through compiled per-type plans that emit what json_format's MessageToDict emits, several times
    faster on list responses; decoding stays on json_format.

    Decoding refuses unknown fields and unknown enum names, as the protobuf JSON mapping does by default: ignoring
    them turned a misspelled `tenantID` into "tenant_id is required" and `"role": "ADMIN"` into the default role.
    No client of a newer contract exists to tolerate (clients are generated from the contract this server serves),
    and a silently dropped field is worse than a clear refusal."""

    def name(self) -> str:
        return "json"

    def encode(self, message: Message) -> bytes:
        return orjson.dumps(message_to_dict(message))

    def decode(self, data: bytes | bytearray, message_class: type[Message]) -> Message:
        text = bytes(data)
        # json_format iterates whatever JSON it gets: an array's strings would pass as ignored unknown field names.
        if text.lstrip(b" \t\r\n")[:1] != b"{":
            raise ValueError("a message must be a JSON object")
        message = message_class()
        value = json.loads(text.decode(), object_pairs_hook=_unique_keys)  # UTF-8 only, as json_format reads it
        _one_spelling_each(value, cast(Descriptor, message.DESCRIPTOR))
        json_format.ParseDict(value, message)
        return message


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for key, item in pairs:
        if key in value:
            raise ValueError(f"duplicate key {key!r}")
        value[key] = item
    return value


def _one_spelling_each(value: object, descriptor: Descriptor) -> None:
    """Refuse a field given under both its JSON and its proto name (`displayName` and `display_name`), as the
    protobuf JSON mapping requires: json_format took whichever came last."""
    if not isinstance(value, dict):
        return
    fields = _fields(descriptor)
    seen: dict[str, str] = {}
    for key, item in value.items():
        field = fields.get(key)
        if field is None:
            continue  # unknown: json_format refuses it by name
        if field.name in seen:
            raise ValueError(f"field {field.name!r} is given twice, as {seen[field.name]!r} and {key!r}")
        seen[field.name] = key
        if field.inner is not None:
            for each in field.held(item):
                _one_spelling_each(each, field.inner)


@dataclass(frozen=True)
class _Field:
    name: str
    inner: Descriptor | None  # the message type whose field names its JSON value holds, if any
    repeated: bool
    map: bool

    def held(self, item: object) -> Iterable[object]:
        if self.map:
            return item.values() if isinstance(item, dict) else ()
        if self.repeated:
            return item if isinstance(item, list) else ()
        return (item,)


@functools.cache
def _fields(descriptor: Descriptor) -> dict[str, _Field]:
    """A message type's fields under both their spellings."""
    fields: dict[str, _Field] = {}
    for field in descriptor.fields:
        inner, is_map = field.message_type, False
        if inner is not None and inner.GetOptions().map_entry:
            inner, is_map = inner.fields_by_name["value"].message_type, True
        if inner is not None and inner.full_name.startswith("google.protobuf."):
            inner = None  # a well-known type's JSON form is its own (a Struct's keys are data)
        plan = _Field(field.name, inner, field.is_repeated, is_map)
        fields[field.name] = fields[field.json_name] = plan
    return fields


class BoundedJsonCodec:
    """The protobuf JSON codec, refusing over-deep JSON as invalid_argument before the runtime parses it."""

    def __init__(self, inner: Codec | None = None) -> None:
        self._inner = inner or JsonCodec()

    def name(self) -> str:
        return self._inner.name()

    def encode(self, message: Any) -> bytes:
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            check_json_bounds(data, max_values=MANAGEMENT_JSON_VALUES)
        except InvalidArgument as exc:
            raise ConnectError(Code.INVALID_ARGUMENT, exc.message) from None
        try:
            return self._inner.decode(data, message_class)
        except ConnectError:
            raise
        except Exception as exc:
            # The runtime's message names the field but may quote the offending value in full: keep it short.
            detail = " ".join(str(exc).split())
            if len(detail) > _MAX_DETAIL:
                detail = detail[:_MAX_DETAIL] + "…"
            raise ConnectError(Code.INVALID_ARGUMENT, f"invalid JSON request: {detail}") from None


class CheckedRequestCodec:
    """Decodes with `inner`, then refuses a request holding an enum number the contract does not define, or a
    string holding NUL (server.nul_text)."""

    def __init__(self, inner: Codec) -> None:
        self._inner = inner
        self._json = inner.name() == "json"

    def name(self) -> str:
        return self._inner.name()

    def encode(self, message: Any) -> bytes:
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        message = self._inner.decode(data, message_class)
        undefined = find_undefined_enum(message)
        if undefined is not None:
            raise ConnectError(Code.INVALID_ARGUMENT, undefined.message())
        if could_hold_nul(data, json=self._json) and (path := find_nul(message)) is not None:
            raise ConnectError(Code.INVALID_ARGUMENT, f"{path}: text may not contain a NUL character")
        return message


class ReusingCodec:
    """Encodes a response message handed out again (server.answers) once per codec."""

    def __init__(self, inner: Codec) -> None:
        self._inner = inner
        self._name = inner.name()

    def name(self) -> str:
        return self._name

    def encode(self, message: Any) -> bytes:
        return ANSWERS.encoded(message, self._name, self._inner.encode)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        return self._inner.decode(data, message_class)


def management_codecs() -> list[Codec]:
    return [
        ReusingCodec(CheckedRequestCodec(google_protobuf_binary_codec())),
        ReusingCodec(CheckedRequestCodec(BoundedJsonCodec())),
    ]


def reflection_codecs() -> list[Codec]:
    """connectrpc-grpcreflect's messages are protobuf-py's, not Google's: its own runtime's codecs, bounded alike."""
    return [proto_binary_codec(), BoundedJsonCodec(proto_json_codec())]


class QuickGzip(GzipCompression):
    """gzip for response messages, at level 1 with a 4 KiB window and small hash tables. connectrpc's default,
    `gzip.compress` at level 6, spent ~65 us on a 6 KB ListGroups answer, most of it setting up zlib's 256 KiB of
    state; this takes ~10 us and the answer grows from 395 to 422 bytes. Any gzip reader decodes it; requests are
    still decompressed by the parent, bounded by read_max_bytes."""

    def compress(self, data: bytes | bytearray | memoryview) -> bytes:
        return ANSWERS.compressed(data, "gzip", _gzip)


def _gzip(data: bytes | bytearray | memoryview) -> bytes:
    deflater = zlib.compressobj(1, zlib.DEFLATED, _GZIP_WINDOW, _MEM_LEVEL)
    return deflater.compress(data) + deflater.flush()


_GZIP_WINDOW = 16 + 12  # 16+: a gzip header and trailer; 12: a 4 KiB window
_MEM_LEVEL = 4


def management_compressions() -> list[Compression]:
    return [QuickGzip()]
