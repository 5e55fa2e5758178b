"""Request bodies their Content-Encoding does not decode, gzip streams cut short, and gzip bombs, on every gateway
route that reads a body (JSON, multipart and the RAG's MCP endpoint): each is a 400 or a 413 with an OpenAI error
body, and the gateway logs nothing at ERROR. aiohttp logged "Unhandled exception (RequestPayloadError)" at ERROR for
every such request, authenticated or not and whatever it was answered, as it read and dropped the rest of the body
after the answer; the MCP endpoint answered 500 with a traceback, and read up to aiohttp's own bound (129 MiB) of a
bomb into memory. aiohttp also took a gzip stream cut short for the whole body (the handler acted on its beginning),
and inflated a bomb up to the route's limit (128 MiB for a transcription) before refusing it: the gateway inflates
bodies itself now (gateway.content_coding).
"""

from __future__ import annotations

import asyncio
import gzip
import random
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
from tests.rawhttp import RawResponse, raw_exchange, raw_request
from tests.world import make_world

pytestmark = ONE_BACKEND  # HTTP semantics: a body is refused as it is read, before the request queries anything

JSON = b"application/json"
FORM = b"multipart/form-data; boundary=zz"
_PLAIN = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
ENCODINGS = ["gzip", "deflate"]


def _compressed(encoding: str, data: bytes) -> bytes:
    return gzip.compress(data) if encoding == "gzip" else zlib.compress(data)


def _without_trailer(encoding: str, data: bytes) -> bytes:
    """`data` compressed, all of its deflate data there, but cut before the trailer (gzip: CRC and length, zlib:
    Adler-32): it inflates to the whole of `data`."""
    return _compressed(encoding, data)[: -8 if encoding == "gzip" else -4]


BODIES = {
    "not compressed": lambda encoding: b"this body is not compressed at all " * 8,
    "bad checksum": lambda encoding: _compressed(encoding, _PLAIN)[:-4] + b"\x00" * 4,
    "truncated": lambda encoding: _compressed(encoding, _PLAIN)[:-12],
    "no trailer": lambda encoding: _without_trailer(encoding, _PLAIN),
}


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
    """A key, the ids the routes' paths need (a RAG the key may use, any file and conversation ids: the body is
    read before they are looked up), and models the key may call."""
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    rag = await new_rag(connect, people.tokens["editor"], people.tenant_id, gw_world.model("embed"))
    key = await personal_all_key(connect, people.tokens["editor"], people.tenant_id)
    models = {"chat": gw_world.model("chat"), "whisper": gw_world.model("whisper")}
    return {"key": key, "rag_id": rag["id"], "file_id": "file_none", "id": "conv_none", **models}


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
    mib: int  # of zeros
    refusal: str  # what the refusal's message says (a regular expression)


BOMBS = [
    Bomb("/v1/chat/completions", JSON, b'{"model": "m", "messages": "', 64, "200-fold"),
    # The MCP endpoint reads at most 1 MiB: refused at that limit or for its expansion, whichever is met first.
    Bomb("/rag/{rag_id}/mcp", JSON, b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": "', 8, "1 MiB|200-fold"),
    Bomb(
        "/v1/audio/transcriptions",
        FORM,
        b'--zz\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n',
        160,
        "200-fold",
    ),
]


def _key(world: dict[str, str]) -> tuple[bytes, bytes]:
    return (b"Authorization", f"Bearer {world['key']}".encode())


@pytest.mark.parametrize("sent", [Sent(m, r, e, b) for m, r in _routes() for e in ENCODINGS for b in BODIES], ids=str)
async def test_a_body_its_encoding_does_not_decode_is_400_and_logs_no_error(
    sent: Sent, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    """ "no trailer" inflates to the whole body: aiohttp took a gzip stream without its CRC and length for whole."""
    headers = [(b"Content-Type", _content_type(sent.route)), (b"Content-Encoding", sent.encoding.encode())]
    path = _path(sent.route, encoding_world)
    body = BODIES[sent.body](sent.encoding)
    with gateway.logs_no_error():
        answer = await _send(gateway, sent.method, path, [_key(encoding_world), *headers], body)
        assert "Content-Encoding" in _openai_error(answer, 400)["message"]
        # Refused before the body is read (no key): aiohttp reads and drops it after the answer.
        refused = await _send(gateway, sent.method, path, headers, body)
        assert refused.status == 401, refused


def _form(fields: dict[str, str], filename: str, data: bytes) -> bytes:
    parts = [
        b'--zz\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % (k.encode(), v.encode())
        for k, v in fields.items()
    ]
    parts.append(b'--zz\r\nContent-Disposition: form-data; name="file"; filename="%s"\r\n' % filename.encode())
    parts.append(b"Content-Type: application/octet-stream\r\n\r\n" + data + b"\r\n--zz--\r\n")
    return b"".join(parts)


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("route", ["/v1/conversations", "/v1/audio/transcriptions", "/rag/{rag_id}/files"])
async def test_a_compressed_body_cut_short_is_400_where_whole_it_succeeds(
    route: str, encoding: str, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    """Its deflate data whole, only its trailer missing: the handler took it for the whole body and acted on it."""
    if route == "/v1/conversations":
        body = orjson.dumps({"metadata": {"k": "v"}})
    elif route == "/v1/audio/transcriptions":
        body = _form({"model": encoding_world["whisper"]}, "a.wav", b"RIFF" + b"\x00" * 4000)
    else:
        body = _form({}, "a.txt", b"the lighthouse keeper")
    headers = [_key(encoding_world), (b"Content-Type", _content_type(route)), (b"Content-Encoding", encoding.encode())]
    path = _path(route, encoding_world)
    with gateway.logs_no_error():
        whole = await _send(gateway, "POST", path, headers, _compressed(encoding, body))
        assert whole.status in (200, 201), whole
        cut = await _send(gateway, "POST", path, headers, _without_trailer(encoding, body))
    error = _openai_error(cut, 400)
    assert "ends before" in error["message"] and "Content-Encoding" in error["message"], error


@pytest.mark.parametrize("bomb", BOMBS, ids=["json", "mcp", "multipart"])
async def test_a_gzip_bomb_is_413_as_soon_as_it_inflates_too_far(
    bomb: Bomb, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    """Refused past the first MiB once it has inflated more than 200-fold, long before the route's limit (32 or
    128 MiB, which aiohttp inflated it to first); the MCP endpoint read up to aiohttp's 129 MiB bound."""
    headers = [_key(encoding_world), (b"Content-Type", bomb.content_type), (b"Content-Encoding", b"gzip")]
    body = _gzipped(bomb.head, bomb.mib)
    assert len(body) < 256 * 1024
    with gateway.logs_no_error():
        answer = await _send(gateway, "POST", _path(bomb.route, encoding_world), headers, body)
    error = _openai_error(answer, 413)
    assert error["code"] == "request_too_large" and re.search(bomb.refusal, error["message"]), error


async def test_a_gzip_bomb_is_refused_before_it_has_all_been_sent(
    gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    """A transcription's bomb of 160 MiB sent in part: its first 64 KiB inflate to about 64 MiB, under the route's
    128 MiB. aiohttp inflated them and the gateway waited for the rest; now it answers at once."""
    bomb = BOMBS[2]
    body = _gzipped(bomb.head, bomb.mib)
    url = gateway.base_url.removesuffix("/v1")
    head = (
        b"POST /v1/audio/transcriptions HTTP/1.1\r\nHost: gateway\r\nAuthorization: Bearer %s\r\n"
        b"Content-Type: %s\r\nContent-Encoding: gzip\r\nContent-Length: %d\r\n\r\n"
    ) % (encoding_world["key"].encode(), FORM, len(body))
    with gateway.logs_no_error():
        async with asyncio.timeout(10):
            answer = await raw_exchange(url, head + body[: 64 * 1024])
    error = _openai_error(answer, 413)
    assert "200-fold" in error["message"], error


def _chat(model: str, paragraphs: int, turns: int) -> bytes:
    """A chat body of `turns` messages, each one of `paragraphs` paragraphs of 60 words (more repeats compress more)."""
    rng = random.Random(paragraphs)
    words = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "wizards", "judge", "boxing")
    texts = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(paragraphs)]
    messages = [{"role": "user", "content": rng.choice(texts)} for _ in range(turns)]
    return orjson.dumps({"model": model, "messages": messages})


def _members(data: bytes) -> bytes:
    """`data` as two gzip members, one after the other (as `cat a.gz b.gz` makes)."""
    return gzip.compress(data[: len(data) // 2]) + gzip.compress(data[len(data) // 2 :])


def _raw_deflate(data: bytes) -> bytes:
    """Deflate data without zlib's header and trailer, as some clients send `Content-Encoding: deflate`."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


LEGITIMATE = {  # (encoding, body of a chat model's id, its expansion: at least, at most)
    "4 MiB compressing 11-fold": ("gzip", lambda m: gzip.compress(_chat(m, 200, 12000)), (5, 20)),
    "4 MiB compressing 36-fold": ("gzip", lambda m: gzip.compress(_chat(m, 40, 12000)), (20, 50)),
    "4 MiB compressing 71-fold": ("gzip", lambda m: gzip.compress(_chat(m, 20, 12000)), (50, 100)),
    "under 1 MiB compressing 200-fold": ("gzip", lambda m: gzip.compress(_chat(m, 1, 2000)), (100, 1000)),
    "two gzip members": ("gzip", lambda m: _members(_chat(m, 40, 12000)), (20, 50)),
    "zlib deflate": ("deflate", lambda m: zlib.compress(_chat(m, 40, 12000)), (15, 50)),
    "raw deflate": ("deflate", lambda m: _raw_deflate(_chat(m, 40, 12000)), (15, 50)),
}


def _inflated(encoding: str, body: bytes) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(body)  # every member
    return zlib.decompress(body, wbits=zlib.MAX_WBITS if body[0] & 0x0F == 8 else -zlib.MAX_WBITS)


@pytest.mark.parametrize("case", LEGITIMATE)
async def test_legitimate_compressed_bodies_are_served(
    case: str, gateway: Gateway, gw_world: GatewayWorld, encoding_world: dict[str, str]
) -> None:
    encoding, make, (least, most) = LEGITIMATE[case]
    body = make(encoding_world["chat"])
    assert least <= len(_inflated(encoding, body)) / len(body) <= most
    headers = [_key(encoding_world), (b"Content-Type", JSON), (b"Content-Encoding", encoding.encode())]
    with gateway.logs_no_error():
        answer = await _send(gateway, "POST", "/v1/chat/completions", headers, body)
    assert answer.status == 200, answer
    assert orjson.loads(answer.body)["object"] == "chat.completion"


# Content-Encoding as clients may spell gzip: coding names are case-insensitive, a list may name identity too (RFC
# 9110 8.4), x-gzip is gzip (8.4.1.3), and a header may come on two lines. aiohttp decoded only a lone, exact name
# (after lower-casing): the rest went to the handler as if uncompressed.
GZIP_SPELLINGS = {
    "GZIP": [b"GZIP"],
    "Gzip": [b"Gzip"],
    "space before": [b" gzip"],
    "space after": [b"gzip \t"],
    "gzip, identity": [b"gzip, identity"],
    "identity,GZIP": [b"identity,GZIP"],
    "x-gzip": [b"x-gzip"],
    "two lines, gzip last": [b"identity", b"gzip"],
    "two lines, gzip first": [b"gzip", b"identity"],
}
# Codings the gateway cannot decode: refused as br and zstd are, never taken for an uncompressed body.
UNDECODABLE = {
    "compress": [b"compress"],
    "unknown": [b"x-unknown"],
    "gzip twice": [b"gzip, gzip"],
    "deflate then gzip": [b"deflate, gzip"],
    "two lines of gzip": [b"gzip", b"gzip"],
    "not ascii": ["gz\u0131p".encode()],  # a dotless i, which str.upper makes ASCII
}


def _encoded(codings: list[bytes]) -> list[tuple[bytes, bytes]]:
    return [(b"Content-Encoding", coding) for coding in codings]


@pytest.mark.parametrize("spelling", GZIP_SPELLINGS)
async def test_gzip_however_spelled_is_inflated_and_bounded_as_gzip(
    spelling: str, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    headers = [_key(encoding_world), (b"Content-Type", JSON), *_encoded(GZIP_SPELLINGS[spelling])]
    with gateway.logs_no_error():
        served = await _send(gateway, "POST", "/v1/chat/completions", headers, gzip.compress(_chat("m", 1, 4)))
        bomb = BOMBS[0]
        refused = await _send(gateway, "POST", "/v1/chat/completions", headers, _gzipped(bomb.head, bomb.mib))
    assert served.status == 404 and b"model" in served.body, served  # decoded: the handler read its model
    error = _openai_error(refused, 413)
    assert error["code"] == "request_too_large" and re.search(bomb.refusal, error["message"]), error


@pytest.mark.parametrize("coding", UNDECODABLE)
async def test_a_coding_the_gateway_cannot_decode_is_400_not_taken_as_uncompressed(
    coding: str, gateway: Gateway, encoding_world: dict[str, str]
) -> None:
    headers = [_key(encoding_world), (b"Content-Type", JSON), *_encoded(UNDECODABLE[coding])]
    plain = orjson.dumps({"model": encoding_world["chat"], "messages": [{"role": "user", "content": "hi"}]})
    with gateway.logs_no_error():
        answer = await _send(gateway, "POST", "/v1/chat/completions", headers, plain)
    error = _openai_error(answer, 400)
    assert "We cannot decode a request body whose Content-Encoding is" in error["message"], error


async def test_identity_alone_is_an_uncompressed_body(gateway: Gateway, encoding_world: dict[str, str]) -> None:
    plain = orjson.dumps({"model": encoding_world["chat"], "messages": [{"role": "user", "content": "hi"}]})
    for codings in ([b"identity"], [b"Identity, identity"], [b""]):
        headers = [_key(encoding_world), (b"Content-Type", JSON), *_encoded(codings)]
        answer = await _send(gateway, "POST", "/v1/chat/completions", headers, plain)
        assert answer.status == 200, (codings, answer)
