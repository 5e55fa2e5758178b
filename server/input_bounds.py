"""Bounds on untrusted JSON, checked on the raw bytes before any decoder sees them.

One deeply nested request (a ~7 KB `[[[[…]]]]`) overflowed the C stack of the protobuf runtime's JSON decoder and
killed the management process; the gateway's orjson refuses to re-encode past 255 levels. So every JSON body, on
both the management API (through `server.codecs`) and the gateway (`gateway.middleware.read_json`), goes through
`check_json_bounds` first: it refuses nesting deeper than `MAX_JSON_DEPTH` as invalid_argument / 400.

The scan is cheap for ordinary bodies: counting opening brackets is enough when there are few of them; otherwise
escape sequences are cut out, every byte but brackets and quotes is deleted, strings (now only their quotes and
brackets) are cut out, and the running depth is summed in C (`itertools.accumulate` over signed bytes). For valid
JSON the result is exact; malformed JSON may be over-counted, which only refuses what the decoder would refuse anyway.
"""

from __future__ import annotations

import re
from array import array
from itertools import accumulate

from server.errors import InvalidArgument

__all__ = [
    "MANAGEMENT_JSON_VALUES",
    "MANAGEMENT_MESSAGE_LIMIT",
    "MAX_JSON_DEPTH",
    "check_json_bounds",
    "json_depth",
    "json_values",
    "value_depth",
]

# Deeper than any real request (protobuf itself stops at 100 nested messages; OpenAI structured outputs allow 10
# levels of schema), far below what any decoder in the stack can survive.
MAX_JSON_DEPTH = 64
# The largest management request message, after decompression (connectrpc's read_max_bytes).
MANAGEMENT_MESSAGE_LIMIT = 4 * 1024 * 1024
# The most values a management request's JSON may hold: 400,000 empty objects in 1.2 MB (3 KB gzipped) held the
# server's event loop for 5 s in the protobuf runtime's JSON decoder. Ten times the largest list any method takes
# (10,000 ids or tenants).
MANAGEMENT_JSON_VALUES = 100_000

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_BRACKETS = b"[]{}"
_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}",')
# '[' and '{' become 1, ']' and '}' become 255, which is -1 as a signed byte.
_STEPS = bytes.maketrans(_BRACKETS, bytes([1, 255, 1, 255]))


def _skeleton(data: bytes | bytearray | memoryview) -> bytes:
    """`data`'s brackets and commas outside strings (an unterminated string may leave a quote behind)."""
    raw = bytes(data)
    if b"\\" in raw:
        raw = _ESCAPE.sub(b"", raw)  # escapes first, so an escaped quote never ends a string
    raw = raw.translate(None, _STRUCTURE)  # only brackets, commas and quotes remain
    if b'"' in raw:
        raw = _STRING.sub(b"", raw)  # brackets and commas inside strings are text
    return raw


def json_depth(data: bytes | bytearray | memoryview) -> int:
    """The deepest nesting of arrays and objects in `data` (exact for valid JSON)."""
    steps = _skeleton(data).translate(_STEPS, b'",')
    return max(accumulate(array("b", steps)), default=0)


def _values(raw: bytes) -> int:
    """At least the number of arrays, objects and elements (separated by commas) in `raw`."""
    return raw.count(b",") + raw.count(b"[") + raw.count(b"{")


def json_values(data: bytes | bytearray | memoryview) -> int:
    """How many arrays, objects and array elements or members beyond the first of each `data` holds (exact for
    valid JSON): what a decoder's work grows with, however small each one is."""
    return _values(_skeleton(data))


def check_json_bounds(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = MAX_JSON_DEPTH,
    field: str | None = None,
    max_values: int | None = None,
) -> None:
    """Refuse JSON nested deeper than `max_depth`, or of more than `max_values` values (`json_values`), before
    anything parses it (the body's, or the JSON `field` of a request, which the refusal then names)."""
    raw = bytes(data)
    what = field or "the JSON body"
    if max_values is not None and _values(raw) > max_values and json_values(raw) > max_values:
        raise InvalidArgument(f"{what} holds more than {max_values} values", field=field)
    if raw.count(b"[") + raw.count(b"{") <= max_depth:
        return  # cannot be deeper than the number of brackets it opens
    if json_depth(raw) > max_depth:
        raise InvalidArgument(f"{what} nests deeper than {max_depth} levels", field=field)


def value_depth(value: object) -> int:
    """The nesting of dicts and lists in an already-parsed value (iterative: no recursion to overflow)."""
    deepest = 0
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if isinstance(current, dict):
            children: list[object] = list(current.values())
        elif isinstance(current, list):
            children = current
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest
