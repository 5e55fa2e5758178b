"""The codecs every management service decodes requests with: protobuf binary, and JSON bounded before decoding.

connectrpc hands each codec the message bytes after decompression, for every protocol (Connect POST and GET
`message=`, gRPC and gRPC-Web, unary and streaming), so the bound here covers every way a JSON message arrives.
Binary protobuf needs no extra bound: the runtime stops at 100 nested messages (and nested unknown groups) with
an error rather than a crash.
"""

from __future__ import annotations

from typing import Any

from connectrpc.code import Code
from connectrpc.codec import Codec, proto_binary_codec, proto_json_codec
from connectrpc.errors import ConnectError

from server.errors import InvalidArgument
from server.input_bounds import check_json_bounds

__all__ = ["BoundedJsonCodec", "management_codecs"]

_MAX_DETAIL = 200


class BoundedJsonCodec:
    """The protobuf JSON codec, refusing over-deep JSON as invalid_argument before the runtime parses it."""

    def __init__(self, inner: Codec | None = None) -> None:
        self._inner = inner or proto_json_codec()

    def name(self) -> str:
        return self._inner.name()

    def encode(self, message: Any) -> bytes:
        return self._inner.encode(message)

    def decode(self, data: bytes | bytearray, message_class: type[Any]) -> Any:
        try:
            check_json_bounds(data)
        except InvalidArgument as exc:
            raise ConnectError(Code.INVALID_ARGUMENT, exc.message) from None
        try:
            return self._inner.decode(data, message_class)
        except ConnectError:
            raise
        except Exception as exc:
            # The runtime's message names the field but may quote the offending value in full: keep it short.
            detail = str(exc)
            if len(detail) > _MAX_DETAIL:
                detail = detail[:_MAX_DETAIL] + "…"
            raise ConnectError(Code.INVALID_ARGUMENT, f"invalid JSON request: {detail}") from None


def management_codecs() -> list[Codec]:
    return [proto_binary_codec(), BoundedJsonCodec()]
