"""server.answers: a response handed out again is built, encoded and compressed once; anything else, every time.

And through the server: a kept group list reaches every client (Connect JSON with and without gzip, binary, gRPC)
as the same answer.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import aiohttp
import grpc

from gen.platform.tenants.v1.group_service_pb2 import ListGroupsRequest, ListGroupsResponse
from gen.platform.tenants.v1.group_service_pb2_grpc import GroupServiceStub
from server.answers import Answers
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.world import GROUPS, make_world, must


class _Counted:
    def __init__(self, fn: Any) -> None:
        self.fn, self.calls = fn, 0

    def __call__(self, value: Any) -> Any:
        self.calls += 1
        return self.fn(value)


def test_the_same_source_gets_the_same_message_encoding_and_compression() -> None:
    answers = Answers(budget=4)
    build = _Counted(lambda source: {"built from": source})
    encode, compress = _Counted(lambda m: json.dumps(m).encode()), _Counted(gzip.compress)
    source = ("a", "b")
    first = answers.message(source, build)
    assert answers.message(source, build) is first and build.calls == 1
    data = answers.encoded(first, "json", encode)
    assert answers.encoded(first, "json", encode) is data and encode.calls == 1
    assert answers.encoded(first, "proto", encode) == data and encode.calls == 2  # each codec once
    packed = answers.compressed(data, "gzip", compress)
    assert answers.compressed(data, "gzip", compress) is packed and compress.calls == 1
    assert json.loads(gzip.decompress(packed)) == {"built from": ["a", "b"]}


def test_equal_but_other_objects_and_unknown_messages_are_built_and_encoded_anew() -> None:
    answers = Answers(budget=4)
    build, encode, compress = _Counted(list), _Counted(repr), _Counted(bytes)
    answers.message(("x", 1), build)
    answers.message(tuple(["x", 1]), build)  # equal, another object: its own (the source may have changed since)
    assert build.calls == 2
    stranger = ["not built here"]
    answers.encoded(stranger, "json", encode)
    answers.encoded(stranger, "json", encode)
    assert encode.calls == 2
    answers.compressed(b"not encoded here", "gzip", compress)
    answers.compressed(b"not encoded here", "gzip", compress)
    assert compress.calls == 2


def test_the_oldest_answer_is_dropped_with_its_encodings() -> None:
    answers = Answers(budget=2)
    build, encode = _Counted(lambda s: [s]), _Counted(lambda m: repr(m).encode())
    sources = [(n,) for n in range(3)]
    messages = [answers.message(s, build) for s in sources]
    assert build.calls == 3
    answers.message(sources[0], build)  # dropped when the third came
    assert build.calls == 4
    answers.encoded(messages[0], "json", encode)
    answers.encoded(messages[0], "json", encode)  # no longer kept: encoded each time
    assert encode.calls == 2
    answers.encoded(messages[2], "json", encode)
    answers.encoded(messages[2], "json", encode)
    assert encode.calls == 3


def test_answers_are_kept_within_their_weight() -> None:
    answers = Answers(budget=10)
    build, encode = _Counted(list), _Counted(repr)
    heavy = tuple(range(11))
    message = answers.message(heavy, build, weight=11)  # heavier than the budget: built, never kept
    answers.message(heavy, build, weight=11)
    assert build.calls == 2
    answers.encoded(message, "json", encode)
    answers.encoded(message, "json", encode)
    assert encode.calls == 2
    light = [(n,) for n in range(3)]
    for source in light:
        answers.message(source, build, weight=4)  # the third pushes the first out (4 + 4 + 4 > 10)
    assert build.calls == 5
    answers.message(light[2], build, weight=4)
    answers.message(light[1], build, weight=4)
    assert build.calls == 5
    answers.message(light[0], build, weight=4)
    assert build.calls == 6


async def test_a_kept_list_reaches_every_client_as_the_same_answer(server: Server, connect: ConnectJsonCaller) -> None:
    world = await make_world(server, connect)
    admin = world.tokens["admin"]
    for n in range(12):
        must(
            await connect.call(
                f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": f"kept-{n:02d}"}, token=admin
            )
        )
    url = f"{server.base_url}/{GROUPS}/ListGroups"
    headers = {"Authorization": f"Bearer {admin}"}
    body = json.dumps({"tenantId": world.tenant_id})
    binary = ListGroupsRequest(tenant_id=world.tenant_id).SerializeToString()
    answers: list[list[str]] = []
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        for _ in range(2):  # the second round is answered from what the first kept
            for accept in ("gzip", "identity"):
                json_headers = {**headers, "Content-Type": "application/json", "Accept-Encoding": accept}
                async with http.post(url, data=body, headers=json_headers) as resp:
                    raw = await resp.read()
                    text = gzip.decompress(raw) if resp.headers.get("Content-Encoding") == "gzip" else raw
                    answers.append([g["name"] for g in json.loads(text)["groups"]])
                proto_headers = {**headers, "Content-Type": "application/proto", "Accept-Encoding": accept}
                async with http.post(url, data=binary, headers=proto_headers) as resp:
                    raw = await resp.read()
                    data = gzip.decompress(raw) if resp.headers.get("Content-Encoding") == "gzip" else raw
                    answers.append([g.name for g in ListGroupsResponse.FromString(data).groups])
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                found = await GroupServiceStub(channel).ListGroups(
                    ListGroupsRequest(tenant_id=world.tenant_id), metadata=[("authorization", f"Bearer {admin}")]
                )
                answers.append([g.name for g in found.groups])
    assert answers == [[f"kept-{n:02d}" for n in range(12)]] * len(answers)
