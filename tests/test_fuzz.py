"""Fuzz every management method and every gateway route with malformed input (issue 9): malformed JSON, wrong
types, unknown enums, huge and deep values, invalid UTF-8 in headers and bodies, wrong content types and garbage
binary. No answer may be a 5xx, and both real processes (the session's fixtures) must be alive afterwards.

The cases are generated from the contract (every unary method of every generated service, each request's fields
by type) and from the gateway's route table, with a fixed seed, so every run sends the same bounded set.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from gateway.app import make_app
from server.app import generated_services
from server.settings import load_settings
from tests.conftest import Server
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld
from tests.rawhttp import raw_request
from tests.schema import service_desc

SEED = 20261123
CONCURRENCY = 6
NOT_UTF8 = b"\xff\xfe\xc3\x28"
_STRING, _BYTES, _BOOL = 9, 12, 8  # FieldDescriptorProto.Type numbers


@dataclass(frozen=True)
class Case:
    method: str
    path: str
    headers: dict[str, Any]
    body: bytes
    what: str


def _wrong(value: Any) -> Any:
    """A JSON value of the wrong type for a field described by `value` (a protobuf-py DescFieldValue*)."""
    kind = type(value).__name__
    if kind == "DescFieldValueScalar":
        return {_STRING: 12345, _BYTES: 12, _BOOL: "maybe"}.get(value.scalar, "not-a-number")
    return {
        "DescFieldValueEnum": "NO_SUCH_ENUM_VALUE",
        "DescFieldValueMessage": "not-an-object",
        "DescFieldValueList": {"not": "a list"},
        "DescFieldValueMap": [1, 2, 3],
    }.get(kind)


def _huge(value: Any, rng: random.Random) -> Any:
    kind = type(value).__name__
    if kind == "DescFieldValueScalar" and value.scalar == _STRING:
        return "".join(rng.choice('ab\u00e9\u4e2d"\\') for _ in range(64)) * 3000
    if kind == "DescFieldValueScalar" and value.scalar != _BOOL:
        return "9" * 400
    if kind == "DescFieldValueList":
        return ["x" * 100] * 5000
    if kind == "DescFieldValueMap":
        return {f"k{i}": "v" for i in range(5000)}
    return None


def _deep(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


def _json_bodies(fields: list[Any], rng: random.Random) -> Iterator[tuple[str, bytes]]:
    yield "malformed", b'{"' + bytes(rng.randrange(32, 127) for _ in range(20))
    yield "wrong types", orjson.dumps({f.json_name: _wrong(f.value) for f in fields})
    enums = {f.json_name: "NO_SUCH_ENUM_VALUE" for f in fields if type(f.value).__name__ == "DescFieldValueEnum"}
    if enums:
        yield "unknown enums", orjson.dumps(enums)
        yield "unknown enum numbers", orjson.dumps(dict.fromkeys(enums, 2**31 - 1))
    huge = {f.json_name: v for f in fields if (v := _huge(f.value, rng)) is not None}
    yield "huge values", orjson.dumps(huge)
    yield "deep values", orjson.dumps({f.json_name: _deep(40) for f in fields[:3]}) if fields else b"{}"
    yield "too deep", b'{"x":' + b"[" * 5000 + b"]" * 5000 + b"}"
    yield "invalid utf-8", b'{"' + (fields[0].json_name.encode() if fields else b"x") + b'": "' + NOT_UTF8 + b'"}'
    # PostgreSQL's text cannot hold NUL: the driver refuses such a value before it reaches the server.
    strings = [
        f.json_name for f in fields if type(f.value).__name__ == "DescFieldValueScalar" and f.value.scalar == _STRING
    ]
    if strings:
        yield "NUL in strings", orjson.dumps(dict.fromkeys(strings, "a\x00b"))
    yield "not an object", b"[1, 2, 3]"


def management_cases(token: str) -> list[Case]:
    rng = random.Random(SEED)
    auth = {"Authorization": f"Bearer {token}"}
    cases = []
    for service in generated_services():
        desc = service_desc(service)
        for method in desc.methods:
            if str(method.method_kind) != "unary":
                continue
            path = f"/{desc.type_name}/{method.name}"
            fields = list(method.input.fields)
            json_headers = {**auth, "Content-Type": "application/json"}
            for what, body in _json_bodies(fields, rng):
                cases.append(Case("POST", path, json_headers, body, what))
            garbage = rng.randbytes(rng.randrange(1, 300))
            cases.append(Case("POST", path, {**auth, "Content-Type": "application/proto"}, garbage, "garbage binary"))
            cases.append(Case("POST", path, {**auth, "Content-Type": "text/plain"}, b"{}", "wrong content type"))
            cases.append(Case("POST", path, {**json_headers, "X-Platform-Tenant-Id": NOT_UTF8}, b"{}", "bad header"))
            cases.append(Case("POST", path, {"Content-Type": "application/json"}, b"{}", "no credentials"))
            if str(method.idempotency) != "0":
                query = "encoding=json&message=%7B%22x%22%3A%5B%5B%5B%5B%5D%5D%5D%5D%7D%ff"
                cases.append(Case("GET", f"{path}?{query}", auth, b"", "bad GET message"))
    return cases


def gateway_cases(key: str) -> list[Case]:
    rng = random.Random(SEED + 1)
    app = make_app(load_settings({}))
    auth = {"Authorization": f"Bearer {key}"}
    routes = sorted(
        {
            (route.method, re.sub(r"\{[^}]*\}", "fuzz-id", route.resource.canonical))
            for route in app.router.routes()
            if route.resource is not None and route.method in ("GET", "POST", "DELETE")
        }
    )
    wrong = {"model": 1, "messages": "x", "input": {"a": 1}, "items": 5, "metadata": [1], "temperature": "hot"}
    bodies = [
        ("malformed", b'{"model": "no-such-model", "messages": [', "application/json"),
        ("wrong types", orjson.dumps(wrong), "application/json"),
        ("huge", orjson.dumps({"model": "no-such-model", "input": "x" * 2_000_000}), "application/json"),
        ("too deep", b'{"model": "no-such-model", "input": ' + b"[" * 3000 + b"]" * 3000 + b"}", "application/json"),
        ("invalid utf-8", b'{"model": "no-such-model", "input": "' + NOT_UTF8 + b'"}', "application/json"),
        ("NUL in strings", orjson.dumps({"model": "a\x00b", "input": "a\x00b", "query": "a\x00b"}), "application/json"),
        ("wrong content type", b"model=x", "application/x-www-form-urlencoded"),
        ("garbage binary", rng.randbytes(512), "application/octet-stream"),
        ("garbage multipart", rng.randbytes(256), "multipart/form-data; boundary=zz"),
    ]
    cases = []
    for method, path in routes:
        if "fuzz-id" in path:
            cases.append(Case(method, path.replace("fuzz-id", "a%00b"), auth, b"{}", "NUL in the path"))
        cases.append(Case(method, path, {}, b"", "no credentials"))
        cases.append(Case(method, path, {**auth, "OpenAI-Organization": NOT_UTF8}, b"", "bad header"))
        cases.append(Case(method, path, {"Authorization": b"Bearer " + NOT_UTF8}, b"", "bad key"))
        if method == "POST":
            for what, body, content_type in bodies:
                cases.append(Case(method, path, {**auth, "Content-Type": content_type}, body, what))
    return cases


async def _run(base_url: str, cases: list[Case]) -> list[str]:
    """Send every case; return a description of each 5xx answer."""
    failures: list[str] = []
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(http: aiohttp.ClientSession, case: Case) -> None:
        async with gate:
            if any(isinstance(v, bytes) for v in case.headers.values()):  # aiohttp would re-encode them as UTF-8
                headers = [(k.encode(), v if isinstance(v, bytes) else v.encode()) for k, v in case.headers.items()]
                status = (await raw_request(base_url, case.method, case.path, headers, case.body)).status
            else:
                async with http.request(case.method, base_url + case.path, data=case.body, headers=case.headers) as r:
                    await r.read()
                    status = r.status
        # 501 is the contract's own answer for a method without a handler yet (e.g. RagQuotaService), not a failure.
        if status >= 500 and status != 501:
            failures.append(f"{case.method} {case.path} [{case.what}] -> {status}")

    async with aiohttp.ClientSession(skip_auto_headers=("Content-Type",)) as http:
        await asyncio.gather(*(one(http, case) for case in cases))
    return failures


async def _alive(url: str) -> None:
    async with aiohttp.ClientSession() as http, http.get(url) as resp:
        assert resp.status == 200


async def test_fuzz_every_management_method(server: Server) -> None:
    cases = management_cases(server.admin_token)
    assert len(cases) > 500  # every unary method of the contract, a dozen cases each
    failures = await _run(server.base_url, cases)
    assert not failures, "\n".join(failures[:40])
    await _alive(f"{server.base_url}/healthz")


async def test_fuzz_every_gateway_route(gateway: Gateway, gw_world: GatewayWorld) -> None:
    cases = gateway_cases(gw_world.keys["all"])
    assert len(cases) > 100
    base = gateway.base_url.removesuffix("/v1")
    failures = await _run(base, cases)
    assert not failures, "\n".join(failures[:40])
    await _alive(f"{base}/readyz")
