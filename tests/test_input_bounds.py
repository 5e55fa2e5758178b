"""Input bounds before decoding (issue 9, finding 1): a deeply nested body is refused on every surface of a real
management server process, which stays alive; ordinary bodies are unaffected.

The crashing payloads go to a server subprocess of this module's own, so a regression kills that process (and
fails these tests) rather than the session's shared server.
"""

from __future__ import annotations

import asyncio
import gzip
import struct
import tempfile
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import grpc
import pytest
import pytest_asyncio

from server.errors import InvalidArgument
from server.input_bounds import (
    MANAGEMENT_JSON_VALUES,
    MAX_JSON_DEPTH,
    check_json_bounds,
    json_depth,
    json_values,
    value_depth,
)
from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.conftest import Database, server_env, start_server

DEEP = 3500  # the depth that segfaulted protobuf-py's from_json inside the server
HEALTH = "/grpc.health.v1.Health/Check"


def deep_array(depth: int = DEEP) -> bytes:
    return b"[" * depth + b"]" * depth


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def deep_struct_items(depth: int) -> bytes:
    """CreateItemsRequest{items: [ConversationItem{extra: Struct{"a": Value{list_value: [[[…]]]}}}]} in binary."""
    value = b""
    for _ in range(depth):
        value = _field(6, _field(1, value))  # Value.list_value = ListValue{values: [value]}
    struct_msg = _field(1, _field(1, b"a") + _field(2, value))  # Struct.fields entry
    return _field(3, _field(10, struct_msg))


def deep_groups(depth: int = 100_000) -> bytes:
    """An unknown field 2 as `depth` nested groups (start group tag 0x13, end group 0x14)."""
    return b"\x13" * depth + b"\x14" * depth


@pytest_asyncio.fixture(scope="module")
async def victim(database: Database) -> AsyncIterator[tuple[str, str]]:
    """A management server of this module's own, and a platform admin's token for it."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-bounds-"))
    env = server_env(database, var_dir)
    proc = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    token = mint_token(settings, user_id="bounds-admin", roles=PLATFORM_ROLES)
    try:
        yield f"http://127.0.0.1:{proc.listener_port}", token
    finally:
        await proc.stop()


async def _alive(base_url: str) -> None:
    async with aiohttp.ClientSession() as http, http.get(f"{base_url}/healthz") as resp:
        assert resp.status == 200


async def _post(base_url: str, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession() as http, http.post(f"{base_url}{path}", data=body, headers=headers) as resp:
        return resp.status, dict(resp.headers), await resp.read()


def test_depth_scan_respects_strings_and_escapes() -> None:
    assert json_depth(b'{"a": "[[[[\\"[[{{", "b": [[1], {"c": "\\\\"}]}') == 3
    assert json_depth(b"[]") == 1
    assert json_depth(b'"no structure"') == 0
    assert json_depth(deep_array(MAX_JSON_DEPTH)) == MAX_JSON_DEPTH
    check_json_bounds(deep_array(MAX_JSON_DEPTH))
    check_json_bounds(b'{"text": "' + b"[" * 10_000 + b'"}')  # brackets inside a string do not nest
    with pytest.raises(Exception, match="deeper than"):
        check_json_bounds(deep_array(MAX_JSON_DEPTH + 1))
    with pytest.raises(InvalidArgument, match=r"^filters nests deeper than") as err:  # a JSON query parameter
        check_json_bounds(deep_array(MAX_JSON_DEPTH + 1), field="filters")
    assert err.value.field == "filters"


def test_value_count_respects_strings() -> None:
    assert json_values(b'{"a": [1, 2, {"b": "x,y[{"}], "c": "\\",,"}') == 6
    assert json_values(b"[" + b",".join([b"{}"] * 1000) + b"]") == 1 + 1000 + 999
    check_json_bounds(b'{"text": "' + b"," * 10_000 + b'"}', max_values=10)  # commas inside a string are text


async def test_a_body_of_many_small_values_is_refused_before_decoding(victim: tuple[str, str]) -> None:
    """400,000 empty grants (1.2 MB, 3 KB gzipped) held the event loop for 5 s in the JSON decoder; the count of
    values is bounded on the raw bytes, as nesting is."""
    base_url, token = victim
    body = b'{"tenantId": "t", "type": "API_KEY_TYPE_PERSONAL", "name": "k", "grants": ['
    body += b",".join([b"{}"] * (MANAGEMENT_JSON_VALUES + 1)) + b"]}"
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip", "Authorization": f"Bearer {token}"}
    status, _, answer = await _post(
        base_url, "/platform.tenants.v1.ApiKeyService/CreateApiKey", gzip.compress(body), headers
    )
    assert status == 400 and b"holds more than" in answer, answer[:300]
    await _alive(base_url)


@pytest.mark.parametrize(
    ("surface", "path", "body", "headers"),
    [
        ("connect json, no auth", HEALTH, deep_array(), {"Content-Type": "application/json"}),
        ("connect json in a field", HEALTH, b'{"service":' + deep_array() + b"}", {"Content-Type": "application/json"}),
        (
            "connect json, gzip",
            HEALTH,
            gzip.compress(deep_array()),
            {"Content-Type": "application/json", "Content-Encoding": "gzip"},
        ),
        (
            "connect json, authenticated",
            "/platform.tenants.v1.TenantService/CreateTenant",
            b'{"name": "x", "displayName": ' + deep_array() + b"}",
            {"Content-Type": "application/json", "Authorization": "Bearer {token}"},
        ),
        (
            "grpc-web json",
            HEALTH,
            b"\x00" + struct.pack(">I", 2 * DEEP) + deep_array(),
            {"Content-Type": "application/grpc-web+json"},
        ),
        ("connect proto, nested groups", HEALTH, deep_groups(), {"Content-Type": "application/proto"}),
        (
            "connect proto, nested Struct",
            "/platform.conversations.v1.ConversationItemService/CreateItems",
            deep_struct_items(5000),
            {"Content-Type": "application/proto", "Authorization": "Bearer {token}"},
        ),
    ],
    ids=lambda v: v.replace(" ", "-").replace(",", "") if isinstance(v, str) and " " in v else "",
)
async def test_deep_bodies_are_refused_and_the_server_lives(
    victim: tuple[str, str], surface: str, path: str, body: bytes, headers: dict[str, str]
) -> None:
    base_url, token = victim
    headers = {k: v.format(token=token) for k, v in headers.items()}
    status, _, answer = await _post(base_url, path, body, headers)
    if "grpc-web" in surface:
        assert status == 200
        assert b"grpc-status: 3\r\n" in answer, answer[-200:]  # invalid_argument, in the trailer frame
    else:
        assert status == 400, answer[:300]
        assert b'"invalid_argument"' in answer
    await _alive(base_url)


async def test_deep_json_in_a_get_message_is_refused(victim: tuple[str, str]) -> None:
    base_url, token = victim
    query = urllib.parse.urlencode({"encoding": "json", "message": '{"tenantId": ' + deep_array(800).decode() + "}"})
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            f"{base_url}/platform.tenants.v1.GroupService/ListGroups?{query}",
            headers={"Authorization": f"Bearer {token}"},
        ) as resp,
    ):
        assert resp.status == 400
        assert "deeper than" in (await resp.json())["message"]
    await _alive(base_url)


async def test_deep_binary_over_grpc_is_refused(victim: tuple[str, str]) -> None:
    base_url, _ = victim
    target = base_url.removeprefix("http://")

    def call() -> grpc.StatusCode:
        with grpc.insecure_channel(target) as channel:
            check = channel.unary_unary(HEALTH, request_serializer=None, response_deserializer=None)
            try:
                check(deep_groups(), timeout=10)
            except grpc.RpcError as exc:
                return exc.code()  # type: ignore[no-any-return, attr-defined]
            return grpc.StatusCode.OK

    assert await asyncio.to_thread(call) == grpc.StatusCode.INVALID_ARGUMENT
    await _alive(base_url)


async def test_ordinary_json_still_works(victim: tuple[str, str]) -> None:
    base_url, _ = victim
    body = b'{"service": ""}'
    status, _, answer = await _post(base_url, HEALTH, body, {"Content-Type": "application/json"})
    assert status == 200 and b"SERVING" in answer


def test_value_depth_counts_parsed_values_without_recursion() -> None:
    deep: object = 1
    for _ in range(100_000):  # far beyond the interpreter's recursion limit
        deep = [deep]
    assert value_depth(deep) == 100_000
    assert value_depth({"a": [1, {"b": []}], "c": 2}) == 4
    assert value_depth("text") == 0


async def test_decode_errors_do_not_echo_the_whole_body(victim: tuple[str, str]) -> None:
    base_url, _ = victim
    body = b'["' + b"x" * 100_000 + b'"]'  # not an object: the runtime's error quotes the value
    status, _, answer = await _post(base_url, HEALTH, body, {"Content-Type": "application/json"})
    assert status == 400 and b"invalid_argument" in answer
    assert len(answer) < 1000


async def test_a_refusal_quoting_a_long_id_reaches_a_grpc_client_with_its_code(victim: tuple[str, str]) -> None:
    """A refusal quoting a 20,000-character id travelled whole in the grpc-message header, past a default grpcio
    client's limit (16 KiB): it saw RESOURCE_EXHAUSTED instead of NOT_FOUND. Messages are clipped."""
    from gen.platform.tenants.v1 import tenant_service_pb2, tenant_service_pb2_grpc

    base_url, token = victim
    request = tenant_service_pb2.GetTenantRequest(tenant_id="t" * 20_000)
    async with grpc.aio.insecure_channel(base_url.removeprefix("http://")) as channel:
        stub = tenant_service_pb2_grpc.TenantServiceStub(channel)
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await stub.GetTenant(request, metadata=[("authorization", f"Bearer {token}")], timeout=10)
    assert refused.value.code() == grpc.StatusCode.NOT_FOUND, refused.value.code()
    assert len(refused.value.details() or "") <= 1000
