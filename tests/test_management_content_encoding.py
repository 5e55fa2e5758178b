"""A gzip bomb sent to the management server under every spelling of its Content-Encoding (connectrpc decompresses
request messages itself, bounded by read_max_bytes): lower-case gzip inflates up to the message limit and is
refused there; any other spelling is refused as a compression the server does not know, before any inflating.
Neither is ever decompressed without bound, and the server lives."""

from __future__ import annotations

import zlib

import aiohttp
import orjson
import pytest

from server.input_bounds import MANAGEMENT_MESSAGE_LIMIT
from server.tokens import PLATFORM_ROLES
from tests.conftest import ONE_BACKEND, Server

pytestmark = ONE_BACKEND

METHOD = "/platform.tenants.v1.TenantService/CreateTenant"


def _bomb(mib: int) -> bytes:
    """A JSON string of `mib` MiB of spaces, gzip-compressed (to about a thousandth)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    spaces = b" " * (1 << 20)
    return packer.compress(b'{"name": "') + b"".join(packer.compress(spaces) for _ in range(mib)) + packer.flush()


async def _post(server: Server, coding: str, body: bytes) -> tuple[int, dict[str, str]]:
    headers = {
        "Content-Type": "application/json",
        "Content-Encoding": coding,
        "Authorization": f"Bearer {server.token('bomber', roles=PLATFORM_ROLES)}",
    }
    async with aiohttp.ClientSession() as http, http.post(server.base_url + METHOD, data=body, headers=headers) as r:
        return r.status, orjson.loads(await r.read())


async def test_a_lower_case_gzip_bomb_is_refused_at_the_message_limit(server: Server) -> None:
    status, error = await _post(server, "gzip", _bomb(50))
    assert status == 429 and error["code"] == "resource_exhausted", error
    assert f"larger than configured max {MANAGEMENT_MESSAGE_LIMIT}" in error["message"], error


@pytest.mark.parametrize("coding", ["GZIP", "Gzip", "gzip, identity", "identity, gzip", "x-gzip", "compress"])
async def test_a_gzip_bomb_otherwise_spelled_is_refused_before_inflating(server: Server, coding: str) -> None:
    status, error = await _post(server, coding, _bomb(50))
    assert error["code"] == "unimplemented" and "unknown compression" in error["message"], (status, error)
    async with aiohttp.ClientSession() as http, http.get(server.base_url + "/healthz") as alive:
        assert alive.status == 200
