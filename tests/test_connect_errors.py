"""The management API's refusals before any handler runs carry a Connect error body (issue 22, item 13): an
unsupported content type (415), a GET on a method with side effects (405), an unknown method or service (404). The
status and the Allow / Accept-Post headers stay as the Connect spec has them; gRPC clients get the status in a
trailers-only answer."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import grpc
import pytest

from tests.conftest import Server

TENANTS = "platform.tenants.v1.TenantService"


async def _send(server: Server, verb: str, path: str, headers: dict[str, str], body: bytes = b"") -> Any:
    async with (
        aiohttp.ClientSession(skip_auto_headers=("Content-Type",)) as http,
        http.request(verb, f"{server.base_url}{path}", data=body, headers=headers) as resp,
    ):
        return resp.status, resp.headers, await resp.read()


@pytest.mark.parametrize(
    "case",
    [
        ("POST", f"/{TENANTS}/CreateTenant", {"Content-Type": "text/plain"}, 415, "'text/plain'"),
        ("POST", f"/{TENANTS}/CreateTenant", {}, 415, "'none'"),
        ("GET", f"/{TENANTS}/ListTenants?encoding=xml&message=%7B%7D", {}, 415, "encoding=json"),
        ("GET", f"/{TENANTS}/CreateTenant?encoding=json&message=%7B%7D", {}, 405, "use POST"),
        ("PUT", f"/{TENANTS}/CreateTenant", {"Content-Type": "application/json"}, 405, "HTTP PUT"),
        ("POST", f"/{TENANTS}/NoSuchMethod", {"Content-Type": "application/json"}, 404, "NoSuchMethod"),
        ("POST", "/platform.nothing.v1.Nope/Call", {"Content-Type": "application/json"}, 404, "no service"),
    ],
)
async def test_refusals_carry_a_connect_error(server: Server, case: tuple[str, str, dict[str, str], int, str]) -> None:
    verb, path, headers, status, says = case
    got, answer_headers, body = await _send(server, verb, path, headers, b"{}" if verb != "GET" else b"")
    assert got == status, body
    assert answer_headers["Content-Type"] == "application/json"
    error = json.loads(body)
    assert error["code"] == "unimplemented", error
    assert says in error["message"], error
    if status == 415 and verb == "POST":
        assert "application/json" in answer_headers["Accept-Post"]
    if status == 405:
        assert "POST" in answer_headers["Allow"]


async def test_an_unknown_grpc_method_is_unimplemented_with_a_message(server: Server) -> None:
    def call() -> tuple[grpc.StatusCode, str]:
        with grpc.insecure_channel(server.base_url.removeprefix("http://")) as channel:
            method = channel.unary_unary(
                f"/{TENANTS}/NoSuchMethod", request_serializer=None, response_deserializer=None
            )
            try:
                method(b"", timeout=10)
            except grpc.RpcError as exc:
                return exc.code(), exc.details()  # type: ignore[attr-defined]
        return grpc.StatusCode.OK, ""

    code, details = await asyncio.to_thread(call)
    assert code == grpc.StatusCode.UNIMPLEMENTED
    assert "NoSuchMethod" in details
