"""A deadline on receiving request headers, on both ports (issue 22, item 6): a client trickling a request line and
headers (slowloris), or connecting and sending nothing, is disconnected soon after
SWITCHBOARD_REQUEST_HEADER_TIMEOUT_SECONDS, while a keep-alive client idle between requests for longer than that
keeps its connection; a request that takes longer than the deadline to handle, a request queued behind it
(pipelined) and a body sent slowly are unaffected (the gateway's listener in-process, with a slow app).

A management server and a one-worker gateway of this module's own run with a 1 s deadline. The bounds checked are
loose (disconnected within 8 s, while the trickle would go on for 15 s): they tell "bounded" from "held open",
not how fast.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from aiohttp import web

from gateway.parse_errors import listen
from server.launch import with_request_deadlines
from server.settings import load_settings
from tests.both_ports import both_ports, exchange

DEADLINE = "1"
CLOSED_WITHIN = 8.0
TRICKLE_FOR = 15.0


@pytest_asyncio.fixture(scope="module")
async def ports() -> AsyncIterator[dict[str, int]]:
    """{"management": port, "gateway": port}, both with a 1 s header deadline."""
    async with both_ports(SWITCHBOARD_REQUEST_HEADER_TIMEOUT_SECONDS=DEADLINE) as found:
        yield found


async def _seconds_until_closed(port: int, first: bytes, trickle: bytes) -> float:
    """Send `first`, then one byte of `trickle` (repeated) every 0.25 s; the seconds until the server closes the
    connection (it may answer first, e.g. Envoy's 408). Fails if it is still open after TRICKLE_FOR seconds."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        writer.write(first)
        await writer.drain()
        index = 0
        while loop.time() - started < TRICKLE_FOR:
            try:
                data = await asyncio.wait_for(reader.read(65536), 0.25)
            except TimeoutError:
                data = None
            except ConnectionError:
                return loop.time() - started
            if data == b"":
                return loop.time() - started
            if data is None and trickle:
                try:
                    writer.write(trickle[index % len(trickle) : index % len(trickle) + 1])
                    await writer.drain()
                except ConnectionError:
                    return loop.time() - started
                index += 1
        raise AssertionError(f"the connection was still open after {TRICKLE_FOR} s")
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


SLOW_HEADERS = (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"X-Slow: " + b"a" * 200)
SLOW_REQUEST_LINE = (b"GE", b"T /healthz HTTP/1.1")


@pytest.mark.parametrize("port_name", ["management", "gateway"])
@pytest.mark.parametrize("what", ["slow headers", "slow request line"])
async def test_a_slow_sender_is_disconnected(ports: dict[str, int], port_name: str, what: str) -> None:
    first, trickle = SLOW_HEADERS if what == "slow headers" else SLOW_REQUEST_LINE
    assert await _seconds_until_closed(ports[port_name], first, trickle) < CLOSED_WITHIN


@pytest.mark.parametrize("port_name", ["management", "gateway"])
async def test_a_connection_that_sends_nothing_is_closed(ports: dict[str, int], port_name: str) -> None:
    assert await _seconds_until_closed(ports[port_name], b"", b"") < CLOSED_WITHIN


@pytest.mark.parametrize("port_name", ["management", "gateway"])
async def test_an_idle_keep_alive_connection_is_kept(ports: dict[str, int], port_name: str) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", ports[port_name])
    try:
        assert await exchange(reader, writer, "/healthz") == b"HTTP/1.1 200 OK"
        await asyncio.sleep(3 * float(DEADLINE))  # idle between requests: the keep-alive timeout's business
        assert await exchange(reader, writer, "/healthz") == b"HTTP/1.1 200 OK"
        await asyncio.sleep(0.5)  # and the deadline armed by the second request's first byte was disarmed
        assert await exchange(reader, writer, "/readyz") == b"HTTP/1.1 200 OK"
    finally:
        writer.close()


def test_every_listener_and_connection_manager_gets_the_deadline() -> None:
    manager = "envoy.filters.network.http_connection_manager"
    config = {
        "static_resources": {
            "listeners": [
                {"filter_chains": [{"filters": [{"name": manager, "typed_config": {}}]}]},
                {"filter_chains": [{"filters": [{"name": "pyvoy-ws", "typed_config": {}}]}]},
                {"udp_listener_config": {}, "filter_chains": [{"filters": [{"name": manager, "typed_config": {}}]}]},
            ]
        }
    }
    tcp, other, quic = with_request_deadlines(config, 12.5)["static_resources"]["listeners"]
    assert tcp["filter_chains"][0]["filters"][0]["typed_config"] == {"request_headers_timeout": "12.500s"}
    assert tcp["listener_filters_timeout"] == "12.500s"
    assert [f["name"] for f in tcp["listener_filters"]] == ["envoy.filters.listener.http_inspector"]
    assert other["filter_chains"][0]["filters"][0]["typed_config"] == {}
    assert "listener_filters" not in quic
    assert quic["filter_chains"][0]["filters"][0]["typed_config"] == {"request_headers_timeout": "12.500s"}


def test_the_deadline_setting_is_validated() -> None:
    assert load_settings({}).request_header_timeout_seconds == 15.0
    assert load_settings({"SWITCHBOARD_REQUEST_HEADER_TIMEOUT_SECONDS": "2.5"}).request_header_timeout_seconds == 2.5
    for bad in ("0", "-1", "inf", "nan"):
        with pytest.raises(ValueError, match="REQUEST_HEADER_TIMEOUT_SECONDS"):
            load_settings({"SWITCHBOARD_REQUEST_HEADER_TIMEOUT_SECONDS": bad})


@pytest_asyncio.fixture
async def slow_app() -> AsyncIterator[int]:
    """The gateway's listener (gateway.parse_errors.listen, 1 s header deadline) over an app whose /slow takes
    2.5 s and whose /echo reads the whole body; yields its port."""

    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(2.5)
        return web.Response(text="slow")

    async def echo(request: web.Request) -> web.Response:
        return web.Response(body=await request.read())

    async def fast(request: web.Request) -> web.Response:
        return web.Response(text="fast")

    app = web.Application()
    app.router.add_get("/slow", slow)
    app.router.add_get("/fast", fast)
    app.router.add_post("/echo", echo)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    listener = await listen(runner, "127.0.0.1", 0, backlog=16, header_timeout=float(DEADLINE), max_connections=64)
    assert isinstance(listener, asyncio.Server)
    try:
        yield listener.sockets[0].getsockname()[1]
    finally:
        listener.close()
        await runner.cleanup()


async def _responses(reader: asyncio.StreamReader, count: int) -> list[bytes]:
    """The bodies of `count` responses with Content-Length, in order."""
    bodies = []
    for _ in range(count):
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        bodies.append(await asyncio.wait_for(reader.readexactly(length), 10))
    return bodies


async def test_long_and_pipelined_requests_and_slow_bodies_are_not_cut(slow_app: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", slow_app)
    try:
        # Two requests in one write: the second waits 2.5 s behind the first, its headers long parsed.
        writer.write(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        assert await _responses(reader, 2) == [b"slow", b"fast"]
        # A body trickled over 3 s: the deadline is on headers only.
        writer.write(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\n")
        for byte in b"hello, world":
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.25)
        assert await _responses(reader, 1) == [b"hello, world"]
    finally:
        writer.close()


async def test_a_slow_head_behind_a_long_request_is_still_cut(slow_app: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", slow_app)
    try:
        writer.write(b"GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(0.5)  # /slow is being handled
        writer.write(b"GET /fast HTTP/1.1\r\n")  # a second request whose headers never end
        await writer.drain()
        assert await _responses(reader, 1) == [b"slow"]
        assert await asyncio.wait_for(reader.read(), CLOSED_WITHIN) == b""
    finally:
        writer.close()
