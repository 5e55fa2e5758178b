"""Answers of MCP servers are bounded before they are read whole (server.egress, server.mcp.tool_client): a tools/call
answer that inflates far past the result limit, an uncompressed one as large, and an oversized tools/list page are
refused as they arrive, through the gateway's Responses tool loop, and so is a listing whose pages each fit but
together do not; a server that compresses a normal answer although
asked not to is still understood."""

from __future__ import annotations

import gzip
import io
import os
import re
import zlib
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import mcp_types as types
import openai
import orjson
import pytest
from mcp.server.lowlevel import Server as LowLevelServer

from tests.conftest import ONE_BACKEND, Server
from tests.fakes.mcp_servers import serve_asgi
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway, shared_mcp_server
from tests.gateway_world import GatewayWorld

pytestmark = ONE_BACKEND

MCP = "platform.agents.v1.ExternalMcpServerService"
MIB = 1024 * 1024
BOMB_BYTES = 256 * MIB  # what the gzip answer inflates to (the test gateway accepts results up to 64 KiB)
PLAIN_BYTES = 32 * MIB  # an uncompressed answer past the tools/call bound (1 MiB here)
LISTED_BYTES = 5 * MIB  # a tools/list page past its bound (4 MiB)
# What one refused answer may add to a worker's peak memory: a worker's first tool call costs up to ~19 MiB of its
# own (seen: 1 to 19 MiB for the 32 MiB answer, by which worker took it); reading either answer whole costs more than
# 32 MiB (the gzip one 1.3 GiB).
GROWTH_MIB = 28
FITTING_TEXT = "fits " * 6000  # 30 KB of result: within the 64 KiB limit
ENCODINGS: list[str] = []  # the Accept-Encoding of every tools/call the compressing server answered

# One answer: its headers and its body, in parts (a large one is streamed, never built whole).
Answer = tuple[list[tuple[bytes, bytes]], Iterator[bytes]]


def _framed(request_id: Any, result: bytes) -> tuple[bytes, bytes]:
    """The JSON-RPC framing around a result written in between."""
    return b'{"jsonrpc":"2.0","id":' + orjson.dumps(request_id) + b',"result":' + result, b"}"


def _text_result(request_id: Any, size: int) -> Iterator[bytes]:
    """A tools/call answer whose text is `size` bytes of `x`, in 1 MiB parts."""
    head, tail = _framed(request_id, b'{"content":[{"type":"text","text":"')
    yield head
    chunk = b"x" * MIB
    for _ in range(size // MIB):
        yield chunk
    yield b'"}],"isError":false,"resultType":"complete"}' + tail


def _gzipped(parts: Iterator[bytes]) -> bytes:
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as packed:
        for part in parts:
            packed.write(part)
    return out.getvalue()


class _Bomb:
    """About 0.25 MB of gzip on the wire that inflates to BOMB_BYTES of result text. Compressing it takes a second of
    CPU, more on a loaded machine: done once, before any request (within one it outlasted the test gateway's 3 s
    tool-call timeout, and the test saw a 504 instead of the refusal). Each answer adds only its end, with its id."""

    def __init__(self) -> None:
        self._packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip stream
        parts = [self._packer.compress(b'{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"')]
        chunk = b"x" * MIB
        parts += [self._packer.compress(chunk) for _ in range(BOMB_BYTES // MIB)]
        self._start = b"".join(parts)

    def answer(self, request_id: Any, headers: dict[bytes, bytes]) -> Answer:
        packer = self._packer.copy()
        end = b'"}],"isError":false,"resultType":"complete"},"id":' + orjson.dumps(request_id) + b"}"
        body = self._start + packer.compress(end) + packer.flush()
        return [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")], iter([body])


def _plain(request_id: Any, headers: dict[bytes, bytes]) -> Answer:
    return [(b"content-type", b"application/json")], _text_result(request_id, PLAIN_BYTES)


def _huge_listing(request_id: Any, headers: dict[bytes, bytes]) -> Answer:
    tool = types.Tool(name="count", description="d" * LISTED_BYTES, input_schema={"type": "object"})
    listed = types.ListToolsResult(tools=[tool]).model_dump(by_alias=True, mode="json", exclude_none=True)
    head, tail = _framed(request_id, orjson.dumps(listed))
    return [(b"content-type", b"application/json")], iter([head + tail])


def _paged_server() -> Any:
    """A server whose tools/list pages each fit their bound (1 MiB of tools a page) and never end: the gateway reads
    up to 100 pages, 100 MiB of tools for one turn to hold, store and send the model."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        schema = {"type": "object"}
        tools = [types.Tool(name=f"t{page}_{i}", description="d" * (MIB // 4), input_schema=schema) for i in range(4)]
        return types.ListToolsResult(tools=tools, next_cursor=str(page + 1))

    server: LowLevelServer[Any] = LowLevelServer("paged", version="1.0.0", on_list_tools=list_tools)
    return server.streamable_http_app(host="127.0.0.1")


def _compressed_anyway(request_id: Any, headers: dict[bytes, bytes]) -> Answer:
    """A normal answer, gzip-compressed whatever the client asked for."""
    ENCODINGS.append(headers.get(b"accept-encoding", b"").decode())
    result = {"content": [{"type": "text", "text": FITTING_TEXT}], "isError": False, "resultType": "complete"}
    head, tail = _framed(request_id, orjson.dumps(result))
    body = _gzipped(iter([head + tail]))
    return [(b"content-type", b"application/json"), (b"content-encoding", b"gzip")], iter([body])


def _tools_server() -> Any:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"note": {"type": "string"}}}
        return types.ListToolsResult(tools=[types.Tool(name="count", description="Counts.", input_schema=schema)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="counted")])

    server: LowLevelServer[Any] = LowLevelServer(
        "bounds", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server.streamable_http_app(host="127.0.0.1")


def _hostile(method: str, answer: Callable[[Any, dict[bytes, bytes]], Answer]) -> Callable[[int], Any]:
    """An MCP server that answers `method` with `answer` and everything else as a real server does."""

    def make(port: int) -> Any:
        inner = _tools_server()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["method"] != "POST":
                await inner(scope, receive, send)
                return
            body, more = b"", True
            while more:
                message = await receive()
                body += message.get("body", b"")
                more = message.get("more_body", False)
            rpc = orjson.loads(body)
            if isinstance(rpc, dict) and rpc.get("method") == method:
                headers, parts = answer(rpc.get("id"), dict(scope["headers"]))
                await send({"type": "http.response.start", "status": 200, "headers": headers})
                for part in parts:
                    await send({"type": "http.response.body", "body": part, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
                return
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            await inner(scope, replay, send)

        return app

    return make


def _url(port: int) -> str:
    return f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
async def bomb(server: Server, gw_world: GatewayWorld) -> AsyncIterator[str]:
    with serve_asgi(_hostile("tools/call", _Bomb().answer)) as port:
        yield await shared_mcp_server(server, _url(port), "b")


@pytest.fixture(scope="module")
async def plain(server: Server, gw_world: GatewayWorld) -> AsyncIterator[str]:
    with serve_asgi(_hostile("tools/call", _plain)) as port:
        yield await shared_mcp_server(server, _url(port), "b")


@pytest.fixture(scope="module")
async def listing(server: Server, gw_world: GatewayWorld) -> AsyncIterator[str]:
    with serve_asgi(_hostile("tools/list", _huge_listing)) as port:
        yield await shared_mcp_server(server, _url(port), "b")


@pytest.fixture(scope="module")
async def paged(server: Server, gw_world: GatewayWorld) -> AsyncIterator[str]:
    with serve_asgi(lambda port: _paged_server()) as port:
        yield await shared_mcp_server(server, _url(port), "b")


@pytest.fixture(scope="module")
async def compressing(server: Server, gw_world: GatewayWorld) -> AsyncIterator[str]:
    with serve_asgi(_hostile("tools/call", _compressed_anyway)) as port:
        yield await shared_mcp_server(server, _url(port), "b")


def _mcp(label: str) -> Any:
    return {"type": "mcp", "server_label": label, "require_approval": "never"}


def _gateway_pids(gateway: Gateway) -> list[int]:
    """The processes holding the gateway's listening socket (its workers)."""
    port = int(re.search(r":(\d+)/v1$", gateway.base_url).group(1))  # type: ignore[union-attr]
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if int(cols[1].rsplit(":", 1)[1], 16) == port and cols[3] == "0A":  # LISTEN
                    inodes.add(cols[9])
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:
            continue
        if any(f"socket:[{i}]" in links for i in inodes):
            pids.append(int(pid))
    return pids


def _peak_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _call(sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, gateway: Gateway, label: str) -> tuple[Any, int]:
    """One turn calling `label`'s tool: its mcp_call item, and how far a gateway worker's peak memory grew (MiB)."""
    pids = _gateway_pids(gateway)
    assert pids
    before = {pid: _peak_kib(pid) for pid in pids}
    fakes.openai.script.append(tool_calls((f"{label}count", "{}")))
    start = len(gateway.log())
    result = sdk.responses.create(model=gw_world.model("chat"), input="call", tools=[_mcp(label)])
    written = gateway.log()[start:]
    assert "Traceback" not in written and " ERROR " not in written, written[-3000:]
    grown_mib = max(_peak_kib(pid) - before[pid] for pid in pids) // 1024
    return next(i for i in result.output if i.type == "mcp_call"), grown_mib


def test_a_compressed_huge_tool_answer_is_refused_before_it_inflates(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, bomb: str, gateway: Gateway
) -> None:
    """0.25 MB of gzip inflating to 256 MiB grew a worker's peak memory by ~1.3 GiB: the SDK read the whole answer
    (httpx inflating it) before the result's size was looked at."""
    call, grown_mib = _call(sdk, gw_world, fakes, gateway, bomb)
    assert grown_mib < GROWTH_MIB, f"a gateway worker's peak memory grew by {grown_mib} MiB for one refused answer"
    assert call.status == "failed", call
    assert "answered tools/call with more than" in str(call.error), call.error


def test_an_uncompressed_huge_tool_answer_is_refused_as_it_arrives(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, plain: str, gateway: Gateway
) -> None:
    call, grown_mib = _call(sdk, gw_world, fakes, gateway, plain)
    assert grown_mib < GROWTH_MIB, f"a gateway worker's peak memory grew by {grown_mib} MiB for one refused answer"
    assert call.status == "failed", call
    # Refused at its bound, not read whole and then refused for its result's size.
    assert "answered tools/call with more than" in str(call.error), call.error


def test_an_oversized_tools_list_is_refused_with_a_clear_error(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, listing: str, gateway: Gateway
) -> None:
    """tools/list answers had no bound at all (the SDK caps an event of a stream, not a JSON body)."""
    with gateway.logs_no_error():
        result = sdk.responses.create(model=gw_world.model("chat"), input="list", tools=[_mcp(listing)])
    listed: Any = next(i for i in result.output if i.type == "mcp_list_tools")
    assert listed.error == (
        f"The MCP server {listing!r} answered tools/list with more than {4 * MIB} bytes, more than the platform "
        "accepts."
    )
    assert listed.tools == []


def test_a_listing_whose_pages_fit_but_together_do_not_is_refused(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, paged: str, gateway: Gateway
) -> None:
    with gateway.logs_no_error():
        result = sdk.responses.create(model=gw_world.model("chat"), input="list", tools=[_mcp(paged)])
    listed: Any = next(i for i in result.output if i.type == "mcp_list_tools")
    assert listed.error == (
        f"The MCP server {paged!r} listed more than {4 * MIB} bytes of tools, more than the platform accepts."
    )
    assert listed.tools == []


def test_a_normal_answer_compressed_although_not_asked_for_still_arrives(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, compressing: str, gateway: Gateway
) -> None:
    """The client asks for uncompressed answers (inflating is a cost a server should not choose for us); a server
    that compresses anyway is decoded as the answer is read, under the same bound."""
    before = len(ENCODINGS)
    call, _ = _call(sdk, gw_world, fakes, gateway, compressing)
    assert call.status == "completed", call
    assert call.output == FITTING_TEXT
    assert ENCODINGS[before:] == ["identity"]
