"""POST /v1/embeddings: float or base64 (the SDK asks for base64 by default), with the model's query prefix.

A query prefix is an instruction for embedding search queries, not documents: embedding a document with it would
put documents and queries in different places of the vector space. So it is prepended only when the client says the
inputs are queries, with `input_type` "query" (or Cohere's "search_query"); "document", "passage" and
"search_document", or no `input_type`, leave inputs as they are. `input_type` is consumed here, never forwarded
(hosted providers reject unknown fields). Token-array inputs are never prefixed. When the client asked for base64
and the upstream answered with float lists, the gateway encodes them (little-endian float32, what the SDK decodes).
"""

from __future__ import annotations

import base64
import math
import sys
from array import array
from typing import Any

import orjson
from aiohttp import web

from gateway.calls import metered
from gateway.catalog import TaskType
from gateway.middleware import read_json, require_model
from gateway.providers import Surface, invalid_answer
from gateway.surfaces._upstream import as_requested, listed, post_json, read_upstream_json, require_task
from server.domain.json_values import is_integer
from server.errors import InvalidArgument
from server.metering import CallKind

__all__ = ["MAX_INPUTS", "embeddings", "with_prefix"]


def with_prefix(value: Any, prefix: str | None) -> Any:
    if not prefix:
        return value
    if isinstance(value, str):
        return prefix + value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [prefix + v for v in value]
    return value  # token ids: nothing to prefix


_QUERY_TYPES = frozenset({"query", "search_query"})
_DOCUMENT_TYPES = frozenset({"document", "passage", "search_document"})


def _is_query(payload: dict[str, Any]) -> bool:
    """Pop `input_type`; True when the inputs are search queries."""
    input_type = payload.pop("input_type", None)
    if input_type is None:
        return False
    if isinstance(input_type, str) and input_type in _QUERY_TYPES | _DOCUMENT_TYPES:
        return input_type in _QUERY_TYPES
    raise InvalidArgument("'input_type' must be 'query' or 'document'.", field="input_type")


# OpenAI's bound on an array of inputs, and on a flat token array too (its schema gives every array form of `input`
# maxItems 2048; a longer input goes as one token array in a list, [[int]], whose inner arrays it leaves unbounded).
# Without one, a single request of thousands of texts held a small self-hosted embedder (one CPU thread) for
# minutes, and every RAG search behind it timed out meanwhile.
MAX_INPUTS = 2048
_INPUT_SHAPES = "a non-empty string, or a non-empty array of strings, of token ids or of token-id arrays"


def _validate(payload: dict[str, Any]) -> str:
    _validate_input(payload.get("input"))
    encoding = payload.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise InvalidArgument("'encoding_format' must be 'float' or 'base64'.", field="encoding_format")
    dimensions = payload.get("dimensions")
    if dimensions is not None and not (is_integer(dimensions) and dimensions > 0):
        raise InvalidArgument("'dimensions' must be a positive integer.", field="dimensions")
    return str(encoding)


def _validate_input(value: Any) -> None:
    """OpenAI's `input`: str | [str] | [int] | [[int]], never empty, every array of at most MAX_INPUTS items (its
    schema bounds a token array so too). Anything else was forwarded, and the upstream's refusal was a 502 blaming the
    backend for the client's mistake."""
    if isinstance(value, str):
        if not value:
            raise InvalidArgument("'input' may not be an empty string.", field="input")
        return
    if not isinstance(value, list) or not value:
        raise InvalidArgument(f"'input' must be {_INPUT_SHAPES}.", field="input")
    if len(value) > MAX_INPUTS:
        raise InvalidArgument(f"'input' may hold at most {MAX_INPUTS} items, got {len(value)}.", field="input")
    first = value[0]
    if isinstance(first, str):
        valid = all(isinstance(v, str) and v for v in value)
    elif isinstance(first, list):
        valid = all(isinstance(v, list) and v and _token_ids(v) for v in value)
    else:
        valid = _token_ids(value)
    if not valid:
        raise InvalidArgument(f"'input' must be {_INPUT_SHAPES}; empty strings are refused too.", field="input")


def _token_ids(values: list[Any]) -> bool:
    return all(is_integer(v) and v >= 0 for v in values)


def _to_base64(vector: list[Any]) -> str:
    try:
        packed = array("f", vector)
    except (TypeError, OverflowError):  # a non-number, or an integer past a double's range
        raise invalid_answer() from None
    if math.inf in packed or -math.inf in packed:  # past float32's range (JSON has no infinity): not a vector
        raise invalid_answer()
    if sys.byteorder != "little":
        packed.byteswap()
    return base64.b64encode(packed.tobytes()).decode()


def _encode_base64(data: list[dict[str, Any]]) -> bool:
    """Encode the answer's float lists as the base64 the client asked for, in place; True when there were any. A
    vector holding a non-number is an answer we cannot read (it was a 500)."""
    encoded = False
    for item in data:
        if isinstance(item.get("embedding"), list):
            item["embedding"] = _to_base64(item["embedding"])
            encoded = True
    return encoded


async def embeddings(request: web.Request) -> web.StreamResponse:
    async with metered(request, CallKind.EMBEDDING) as call:
        payload = await read_json(request)
        model = require_model(payload)
        encoding = _validate(payload)
        is_query = _is_query(payload)
        route = await call.resolve(model)
        require_task(route, TaskType.EMBEDDING)
        if is_query:
            payload["input"] = with_prefix(payload["input"], route.query_prefix)
        resp = await post_json(request, route, Surface.EMBEDDINGS, payload)
        raw, parsed = await read_upstream_json(resp, call, Surface.EMBEDDINGS)
        data = listed(parsed, "data")
        if encoding == "base64" and _encode_base64(data):
            raw = orjson.dumps(parsed)
        call.count(parsed.get("usage"))  # once the answer is one the client gets
        raw = as_requested(raw, parsed, model)
        call.response_bytes = len(raw)
        return web.Response(body=raw, content_type="application/json")
