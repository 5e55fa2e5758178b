"""Request bodies their Content-Encoding does not decode, and gzip bombs, on every gateway route that reads a body
(JSON, multipart and the RAG's MCP endpoint): each is a 400 or a 413 with an OpenAI error body, and the gateway logs
nothing at ERROR. aiohttp logged "Unhandled exception (RequestPayloadError)" at ERROR for every such request,
authenticated or not and whatever it was answered, as it read and dropped the rest of the body after the answer; the
MCP endpoint answered 500 with a traceback, and read up to aiohttp's own bound (129 MiB) of a bomb into memory.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
import pytest_asyncio

from gateway.app import make_app
from server.settings import load_settings
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld
from tests.rag_helpers import new_rag
from tests.rag_http import personal_all_key
from tests.rawhttp import RawResponse, raw_request
from tests.world import make_world

pytestmark = ONE_BACKEND  # HTTP semantics: a body is refused as it is read, before the request queries anything

JSON = b"application/json"
FORM = b"multipart/form-data; boundary=zz"
_PLAIN = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
BODIES = {
    "not compressed": b"this body is not compressed at all " * 8,
    "bad checksum": gzip.compress(_PLAIN)[:-8] + b"\x00" * 8,
    # aiohttp refuses a deflate stream cut short, but takes a gzip one's beginning as the whole body.
    "truncated": gzip.compress(_PLAIN)[:-12],
}
ENCODINGS = ["gzip", "deflate"]


def _routes() -> list[tuple[str, str]]:
    """Every route that takes a body, as the gateway serves it."""
    app = make_app(load_settings({}))
    return sorted(
        {
            (route.method if route.method != "*" else "POST", route.resource.canonical)
            for route in app.router.routes()
            if route.resource is not None and route.method in ("POST", "PATCH", "*")
        }
    )


def _content_type(path: str) -> bytes:
    return FORM if path in ("/v1/audio/transcriptions", "/rag/{rag_id}/files") else JSON


def _gzipped(head: bytes, mib: int) -> bytes:
    """`head` then `mib` MiB of zeros, gzip-compressed (to about a thousandth)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\x00" * (1 << 20)
    return packer.compress(head) + b"".join(packer.compress(zeros) for _ in range(mib)) + packer.flush()


@pytest_asyncio.fixture(scope="session")
async def encoding_world(server: Server, gateway: Gateway, gw_world: GatewayWorld) -> dict[str, str]:
    """A key, and the ids the routes' paths need (a RAG the key may use, any file and conversation ids: the body is
    read before they are looked up)."""
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    rag = await new_rag(connect, people.tokens["editor"], people.tenant_id, gw_world.model("embed"))
    key = await personal_all_key(connect, people.tokens["editor"], people.tenant_id)
    return {"key": key, "rag_id": rag["id"], "file_id": "file_none", "id": "conv_none"}


def _path(route: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], route)


async def _send(
    gateway: Gateway, method: str, path: str, headers: list[tuple[bytes, bytes]], body: bytes
) -> RawResponse:
    return await raw_request(gateway.base_url.removesuffix("/v1"), method, path, headers, body)


def _openai_error(answer: RawResponse, status: int) -> dict[str, Any]:
    assert answer.status == status, answer
    error: dict[str, Any] = orjson.loads(answer.body)["error"]
    assert error["type"] == "invalid_request_error" and error["message"], error
    return error


@dataclass(frozen=True)
class Sent:
    method: str
    route: str
    encoding: str
    body: str  # a key of BODIES

    def __str__(self) -> str:
        return f"{self.method} {self.route} {self.encoding} {self.body}"


@dataclass(frozen=True)
class Bomb:
    route: str
    content_type: bytes
    head: bytes  # what precedes the zeros
    mib: int  # of zeros, past the route's limit
    limit: str  # as the refusal says it


@pytest.mark.parametrize("sent", [Sent(m, r, e, b) for m, r in _routes() for e in ENCODINGS for b in BODIES], ids=str)
async def test_a_body_its_encoding_does_not_decode_is_400_and_logs_no_error(
    sent: Sent, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    headers = [(b"Content-Type", _content_type(sent.route)), (b"Content-Encoding", sent.encoding.encode())]
    key = (b"Authorization", f"Bearer {encoding_world['key']}".encode())
    path = _path(sent.route, encoding_world)
    with gateway.logs_no_error():
        answer = await _send(gateway, sent.method, path, [key, *headers], BODIES[sent.body])
        if (sent.body, sent.encoding) == ("truncated", "gzip"):  # judged as the body it decodes to
            assert 400 <= answer.status < 500, answer
        else:
            assert "Content-Encoding" in _openai_error(answer, 400)["message"]
        # Refused before the body is read (no key): aiohttp reads and drops it after the answer.
        refused = await _send(gateway, sent.method, path, headers, BODIES[sent.body])
        assert refused.status == 401, refused


@pytest.mark.parametrize(
    "bomb",
    [
        Bomb("/v1/chat/completions", JSON, b'{"model": "m", "messages": "', 64, "32 MiB"),
        Bomb("/rag/{rag_id}/mcp", JSON, b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "', 8, "1 MiB"),
        Bomb(
            "/v1/audio/transcriptions",
            FORM,
            b'--zz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n',
            160,
            "128 MiB",
        ),
    ],
    ids=["json", "mcp", "multipart"],
)
async def test_a_gzip_bomb_is_413_at_the_route_s_limit(
    bomb: Bomb, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    """Read (inflated) no further than the route's limit: the MCP endpoint read up to aiohttp's 129 MiB bound."""
    headers = [
        (b"Authorization", f"Bearer {encoding_world['key']}".encode()),
        (b"Content-Type", bomb.content_type),
        (b"Content-Encoding", b"gzip"),
    ]
    body = _gzipped(bomb.head, bomb.mib)
    assert len(body) < 256 * 1024
    with gateway.logs_no_error():
        answer = await _send(gateway, "POST", _path(bomb.route, encoding_world), headers, body)
    error = _openai_error(answer, 413)
    assert error["code"] == "request_too_large" and bomb.limit in error["message"], error
