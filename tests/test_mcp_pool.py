"""The per-process MCP session pool against a real MCP server (the mcp SDK on uvicorn, loopback): one session serves
many calls and caches the listing, credentials never share a session, failures evict, idle sessions close, the
pool is bounded and closes cleanly. What the server receives is recorded per HTTP request (method header, token)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from ipaddress import ip_address
from typing import Annotated, Any

import pytest
from mcp.server import MCPServer
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Elicit, Resolve
from pydantic import BaseModel

from server.egress import EgressGuard
from server.mcp.pool import SessionPool
from server.mcp.tool_client import ToolFailure, ToolSource, tls_context
from server.store.db import Database
from tests.fakes.mcp_servers import loop_tools_server, serve_asgi
from tests.test_egress import POLICIES, _local_private_address
from tests.test_egress import Names as _Names
from tests.world import must

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
    # A deadline under the slow tool's 3 s, and as far from it as it can be: it bounds opening a session too, which
    # a loaded machine has taken over a second to do.
    pool = _pool(timeout=2.0)
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
    finally:
        await pool.close()
    pool = _pool()  # a failure, not a timeout: the default deadline
    try:
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


def _pre_2026(make: Callable[[int], Any], posts: list[tuple[str, str, int]]) -> Callable[[int], Any]:
    """The SDK server as a server of the 2025 versions sees it: no `server/discover` (404, so the client falls back
    to the initialize handshake), so its sessions are stateful, named by an Mcp-Session-Id it keeps in memory.
    Each POST is recorded as (JSON-RPC method, Mcp-Session-Id, HTTP status)."""

    def wrapped(port: int) -> Any:
        app = make(port)

        async def asgi(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] != "http" or scope["method"] != "POST":
                return await app(scope, receive, send)
            body = b""
            while True:  # the whole body, then handed on as one message
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            method = str(json.loads(body).get("method", ""))
            session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode()
            if method == "server/discover":
                posts.append((method, session, 404))
                await send({"type": "http.response.start", "status": 404, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return None
            sent = False

            async def replay() -> Any:
                nonlocal sent
                if sent:
                    return await receive()
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}

            async def recorded(message: Any) -> None:
                if message["type"] == "http.response.start":
                    posts.append((method, session, message["status"]))
                await send(message)

            return await app(scope, replay, recorded)

        return asgi

    return wrapped


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_a_restarted_server_is_reconnected_to_without_an_error(era: str) -> None:
    """The server restarts within the idle window: the pooled session it knew is gone (a 2025 server answers 404
    to its Mcp-Session-Id). The call is sent again once, on a fresh session, and the model sees no error."""
    seen: Seen = []
    posts: list[tuple[str, str, int]] = []
    make = _recording(loop_tools_server({}), seen)
    if era != "2026-07-28":
        make = _pre_2026(make, posts)
    pool = _pool()
    try:
        with serve_asgi(make, graceful_seconds=0.5) as port:
            source = ToolSource("t", f"http://127.0.0.1:{port}/mcp", {"Authorization": "Bearer restart"})
            assert (await pool.call_tool(source, "add", {"a": 1, "b": 1})).text == "2"
        before, opened = len(seen), len(posts)
        with serve_asgi(make, port=port, graceful_seconds=0.5):  # a new server process on the same port
            assert (await pool.call_tool(source, "add", {"a": 2, "b": 2})).text == "4"
            assert (await pool.call_tool(source, "add", {"a": 3, "b": 3})).text == "6"
            assert len(pool) == 1
    finally:
        await pool.close()
    if era == "2026-07-28":  # no session to lose: the pooled client goes on
        assert [method for method, _token in seen[before:]] == ["tools/call", "tools/call"]
        return
    old = posts[opened - 1][1]
    new = next(session for method, session, _status in posts[opened:] if session and session != old)
    # (the SDK's own tools/list after a first call, for the output schemas, and the initialized notice left out)
    assert [p for p in posts[opened:] if p[0] not in ("notifications/initialized", "tools/list")] == [
        ("tools/call", old, 404),  # refused before any tool ran: retried
        ("server/discover", "", 404),
        ("initialize", "", 200),
        ("tools/call", new, 200),
        ("tools/call", new, 200),  # the fresh session serves on
    ]


def _named(make: Callable[[int], Any]) -> Callable[[int], Any]:
    """The SDK server, which accepts only its own address as the Host (DNS rebinding protection), served as
    `mcp.test` (what a reverse proxy in front of it would do)."""

    def wrapped(port: int) -> Any:
        app = make(port)

        async def asgi(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                headers = [(k, v) for k, v in scope["headers"] if k != b"host"]
                scope = {**scope, "headers": [*headers, (b"host", f"127.0.0.1:{port}".encode())]}
            await app(scope, receive, send)

        return asgi

    return wrapped


class _Moving:
    """A DNS stand-in for `mcp.test`: 127.0.0.1 (where the server listens), except that the next `stale` lookups
    answer 127.0.0.3, where nothing listens (connections there are refused)."""

    def __init__(self) -> None:
        self.stale = 0
        self.answers: list[str] = []

    async def __call__(self, host: str, port: int, family: int) -> list[str]:
        answer = "127.0.0.3" if self.stale else "127.0.0.1"
        self.stale = max(self.stale - 1, 0)
        self.answers.append(answer)
        return [answer]


@pytest.mark.parametrize("era", ["2026-07-28", "2025-11-25"])
async def test_a_refused_connection_is_sent_again_once_on_a_fresh_session(era: str) -> None:
    """The server restarted and the pooled session's next connection is refused (the name still answered an address
    it no longer listens on): the request never left, so it is sent once more on a fresh session. Refused twice,
    the call fails: one retry only."""
    names = _Moving()
    make = _named(loop_tools_server({}))
    if era != "2026-07-28":
        make = _pre_2026(make, [])
    pool = SessionPool(
        EgressGuard(None, allow_loopback=True, lookup=names), tls=tls_context(), timeout=5.0, max_result_bytes=1 << 16
    )
    try:
        with serve_asgi(make, graceful_seconds=0.5) as port:
            source = ToolSource("t", f"http://mcp.test:{port}/mcp")
            assert (await pool.call_tool(source, "add", {"a": 1, "b": 1})).text == "2"
        with serve_asgi(make, port=port, graceful_seconds=0.5):
            names.stale, seen = 1, len(names.answers)
            assert (await pool.call_tool(source, "add", {"a": 2, "b": 2})).text == "4"
            assert names.answers[seen:][:2] == ["127.0.0.3", "127.0.0.1"]  # refused, then the fresh session
        with serve_asgi(make, port=port, graceful_seconds=0.5):
            names.stale = 2  # the retry is refused too
            with pytest.raises(ToolFailure) as refused:
                await pool.call_tool(source, "add", {"a": 3, "b": 3})
            assert "could not be reached" in refused.value.message
            assert (await pool.call_tool(source, "add", {"a": 4, "b": 4})).text == "8"
    finally:
        await pool.close()


async def test_a_removed_network_policy_reaches_open_sessions(server: Any, connect: Any) -> None:
    """A session opened to a private address while a policy allowed it: once the policy is deleted, the next call
    is refused by the egress guard (the open session, whose connection was checked against the old policy, is not
    used again), and it goes through again once a policy allows the address."""
    address = _local_private_address()
    if address is None:
        pytest.skip("this machine has no private non-loopback address")
    db = Database(server.settings.database_url)
    guard = EgressGuard(db, policy_cache_seconds=0, lookup=_Names({"private.corp.test": [[address]]}))
    if any(ip_address(address) in network for network in await guard.allowed_networks()):
        await db.close()
        pytest.skip(f"another test's policy already approves {address}")
    seen: Seen = []
    pool = SessionPool(guard, tls=tls_context(), timeout=5.0, max_result_bytes=1 << 16)

    async def allow() -> dict[str, Any]:
        spec = {"spec": {"allowedNetworks": [address]}}
        policy: dict[str, Any] = must(await connect.call(f"{POLICIES}/CreateMcpNetworkPolicy", spec, token=token))
        return policy["policy"]

    async def forbid(policy: dict[str, Any]) -> None:
        delete = {key: policy[key] for key in ("name", "uid", "resourceVersion")}
        must(await connect.call(f"{POLICIES}/DeleteMcpNetworkPolicy", delete, token=token))

    token = server.admin_token
    try:
        with serve_asgi(_named(_recording(loop_tools_server({}), seen)), host=address) as port:
            source = ToolSource("t", f"http://private.corp.test:{port}/mcp", {"Authorization": "Bearer private"})
            with pytest.raises(ToolFailure):
                await pool.call_tool(source, "add", {"a": 1, "b": 1})
            assert seen == []  # refused before connecting
            policy = await allow()
            assert (await pool.call_tool(source, "add", {"a": 1, "b": 1})).text == "2"
            calls = len(seen)
            await forbid(policy)
            with pytest.raises(ToolFailure) as refused:
                await pool.call_tool(source, "add", {"a": 2, "b": 2})
            assert "could not be reached" in refused.value.message
            assert len(seen) == calls  # nothing more reached the server
            policy = await allow()
            assert (await pool.call_tool(source, "add", {"a": 3, "b": 3})).text == "6"
            await forbid(policy)
    finally:
        await pool.close()
        await db.close()
