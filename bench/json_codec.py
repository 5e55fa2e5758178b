"""Encoding a response to Connect JSON: json_format's MessageToDict (what the codec used) against the codec's compiled
plans (server/protojson.py), on the same messages in the same run, both followed by orjson.dumps.

Cases: ListGroups with 50 groups (the management API's hot read), and a page of 50 conversation items, which adds
timestamps, uint64, repeated messages and Struct. Each figure is the best of several rounds, as the machine may be
shared; the ratio is what to compare.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson
from google.protobuf import json_format
from google.protobuf.message import Message

from gen.platform.conversations.v1.conversation_item_service_pb2 import ListItemsResponse
from gen.platform.tenants.v1.group_service_pb2 import ListGroupsResponse
from server.codecs import JsonCodec

ROUNDS = 7
TARGET_SECONDS = 0.05


def list_groups() -> ListGroupsResponse:
    response = ListGroupsResponse()
    for i in range(50):
        response.groups.add(
            id=f"0b1c6f9e-59f1-4c55-9d0e-{i:012d}", tenant_id="tenant-bench", name=f"group-{i:02d}", member_count=i
        )
    return response


def list_items() -> ListItemsResponse:
    response = ListItemsResponse(first_id="item-00", last_id="item-49", has_more=True)
    for i in range(50):
        item = response.items.add(id=f"item-{i:02d}", type="message", role="user", status="completed", sequence=i)
        item.content.add(type="input_text", text=f"question number {i} — with ünïcode")
        item.extra.update({"server_label": "docs", "summary": [{"type": "summary_text", "text": "short"}]})
        item.create_time.FromNanoseconds(1_763_950_000_123_456_000 + i * 1_000_000_007)
    return response


def per_call_us(call: Callable[[], object]) -> float:
    """Best-of-ROUNDS microseconds per call, each round long enough to time reliably."""
    start = time.perf_counter()
    call()
    once = max(time.perf_counter() - start, 1e-7)
    number = max(1, int(TARGET_SECONDS / once))
    best = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(number):
            call()
        best = min(best, (time.perf_counter() - start) / number)
    return best * 1e6


def compare(label: str, message: Message) -> None:
    codec = JsonCodec()
    expected = orjson.dumps(json_format.MessageToDict(message))
    # The figures mean nothing unless both sides produce the same bytes.
    assert codec.encode(message) == expected, label
    baseline = per_call_us(lambda: orjson.dumps(json_format.MessageToDict(message)))
    fast = per_call_us(lambda: codec.encode(message))
    decode = per_call_us(lambda: codec.decode(expected, type(message)))
    print(f"{label:<28} {len(expected):>7} {baseline:>14.1f} {fast:>11.1f} {baseline / fast:>7.1f}x {decode:>15.1f}")


async def main() -> None:
    print(f"best of {ROUNDS} rounds; µs per message; ratio = json_format / compiled plan (same run)")
    print(f"{'case':<28} {'bytes':>7} {'json_format µs':>14} {'compiled µs':>11} {'ratio':>8} {'decode (jf) µs':>15}")
    compare("ListGroups x50", list_groups())
    compare("ListItems x50 (Struct, ts)", list_items())
