"""The per-process MCP session pool against a real MCP server (the mcp SDK on uvicorn, loopback): one session serves
many calls and caches the listing, credentials never share a session, failures evict, idle sessions close, the
pool is bounded and closes cleanly. What the server receives is recorded per HTTP request (method header, token)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest
from mcp.server import MCPServer
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Elicit, Resolve
from pydantic import BaseModel

from server.egress import EgressGuard
from server.mcp.pool import SessionPool
from server.mcp.tool_client import ToolFailure, ToolSource, tls_context
from tests.fakes.mcp_servers import loop_tools_server, serve_asgi

Seen = list[tuple[str, str]]  # (mcp-method header, authorization header) of each POST
BREAK = "Bearer break-next"  # the next tools/call with this token gets an HTTP 500 (a server failing mid-session)


def _recording(make: Callable[[int], Any], seen: Seen) -> Callable[[int], Any]:
    def wrapped(port: int) -> Any:
        app = make(port)

        async def asgi(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["method"] == "POST":
                headers = dict(scope["headers"])
                method = headers.get(b"mcp-method", b"").decode()
                token = headers.get(b"authorization", b"").decode()
                seen.append((method, token))
                if token == BREAK and method == "tools/call" and (method, token) not in seen[:-1]:
                    await send({"type": "http.response.start", "status": 500, "headers": []})
                    await send({"type": "http.response.body", "body": b""})
                    return
            await app(scope, receive, send)

        return asgi

    return wrapped


@pytest.fixture(scope="module")
def recorded() -> Iterator[tuple[str, Seen]]:
    seen: Seen = []
    with serve_asgi(_recording(loop_tools_server({}), seen)) as port:
        yield f"http://127.0.0.1:{port}/mcp", seen


def _pool(**options: Any) -> SessionPool:
    settings: dict[str, Any] = {"timeout": 5.0, "max_result_bytes": 1 << 16, **options}
    return SessionPool(EgressGuard(None, allow_loopback=True), tls=tls_context(), **settings)


def _methods(seen: Seen, token: str) -> list[str]:
    return [method for method, sent in seen if sent == f"Bearer {token}"]


async def test_one_session_serves_many_calls_and_keeps_the_listing(recorded: tuple[str, Seen]) -> None:
    url, seen = recorded
    pool = _pool()
    source = ToolSource("t", url, {"Authorization": "Bearer one"})
    try:
        for _ in range(2):
            assert "add" in [t.name for t in await pool.list_tools(source)]
        answers = await asyncio.gather(*(pool.call_tool(source, "add", {"a": i, "b": 1}) for i in range(3)))
        assert sorted(a.text for a in answers) == ["1", "2", "3"]  # concurrent calls on one session
        assert len(pool) == 1
    finally:
        await pool.close()
    assert _methods(seen, "one") == ["server/discover", "tools/list", "tools/call", "tools/call", "tools/call"]


async def test_credentials_never_share_a_session(recorded: tuple[str, Seen]) -> None:
    url, seen = recorded
    pool = _pool()
    alice, bob = (ToolSource("t", url, {"Authorization": f"Bearer {who}"}) for who in ("alice", "bob"))
    try:
        for source in (alice, bob, alice, bob):
            assert (await pool.call_tool(source, "add", {"a": 1, "b": 1})).text == "2"
        assert len(pool) == 2
    finally:
        await pool.close()
    for who in ("alice", "bob"):  # each token opened its own session once and was used for its own calls only
        methods = _methods(seen, who)
        assert methods.count("server/discover") == 1 and methods.count("tools/call") == 2, methods


async def test_failures_evict_the_session_a_caller_leaving_does_not(recorded: tuple[str, Seen]) -> None:
    url, seen = recorded
    pool = _pool(timeout=1.0)
    slow = ToolSource("t", url, {"Authorization": "Bearer slowpoke"})
    broken = ToolSource("t", url, {"Authorization": BREAK})
    try:
        assert (await pool.call_tool(slow, "add", {"a": 1, "b": 1})).text == "2"
        left = asyncio.create_task(pool.call_tool(slow, "slow", {"seconds": 3}))
        await asyncio.sleep(0.3)
        left.cancel()  # the client hung up mid-call
        with pytest.raises(asyncio.CancelledError):
            await left
        assert (await pool.call_tool(slow, "add", {"a": 2, "b": 2})).text == "4"  # the same session serves on
        assert _methods(seen, "slowpoke").count("server/discover") == 1

        with pytest.raises(ToolFailure) as late:
            await pool.call_tool(slow, "slow", {"seconds": 3})
        assert late.value.timed_out and "did not answer in time" in late.value.message
        assert (await pool.call_tool(slow, "add", {"a": 3, "b": 3})).text == "6"  # on a new session
        assert _methods(seen, "slowpoke").count("server/discover") == 2

        with pytest.raises(ToolFailure) as failed:
            await pool.call_tool(broken, "add", {"a": 1, "b": 1})
        assert not failed.value.timed_out and "could not be reached or failed" in failed.value.message
        assert (await pool.call_tool(broken, "add", {"a": 3, "b": 3})).text == "6"
    finally:
        await pool.close()
    assert _methods(seen, "break-next").count("server/discover") == 2
    down = _pool()
    try:
        with pytest.raises(ToolFailure) as refused:
            await down.list_tools(ToolSource("down", "http://127.0.0.1:9/mcp"))
        assert "could not be reached" in refused.value.message and len(down) == 0
    finally:
        await down.close()


async def test_idle_sessions_close_the_pool_is_bounded_and_closes(recorded: tuple[str, Seen]) -> None:
    url, _seen = recorded
    pool = _pool(idle_seconds=0.3, max_sessions=2)
    sources = [ToolSource("t", url, {"Authorization": f"Bearer idle{i}"}) for i in range(3)]
    try:
        for source in sources:
            await pool.call_tool(source, "add", {"a": 1, "b": 1})
            assert len(pool) <= 2  # the least recently used idle session made room
        await asyncio.sleep(1.0)
        assert len(pool) == 0  # idle ones closed by their owners
        await pool.call_tool(sources[0], "add", {"a": 1, "b": 1})
        assert len(pool) == 1
    finally:
        await pool.close()
    assert len(pool) == 0
    with pytest.raises(RuntimeError):
        await pool.call_tool(sources[0], "add", {"a": 1, "b": 1})


class Confirm(BaseModel):
    confirmed: bool


def _ask() -> Elicit[Confirm]:
    return Elicit("Really delete everything?", Confirm)


def _asking_server(port: int) -> Any:
    """A tool that asks the user for confirmation mid-call (an `input_required` result on 2026-07-28, an
    elicitation request on older versions) and answers with what it was told."""
    mcp = MCPServer("asking", version="1.0.0")

    @mcp.tool()
    async def delete_everything(answer: Annotated[ElicitationResult[Confirm], Resolve(_ask)]) -> str:
        """Asks before it acts."""
        return f"told: {answer.action}"

    return mcp.streamable_http_app(host="127.0.0.1")


async def test_a_server_asking_for_user_input_mid_call_is_declined() -> None:
    """Nobody can answer inside the tool loop: the call goes on with a decline instead of failing."""
    with serve_asgi(_asking_server) as port:
        pool = _pool()
        try:
            source = ToolSource("asking", f"http://127.0.0.1:{port}/mcp")
            answer = await pool.call_tool(source, "delete_everything", {})
        finally:
            await pool.close()
    assert answer.text == "told: decline" and not answer.is_error
