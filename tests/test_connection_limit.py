"""A bound on the client connections each server process holds open (SWITCHBOARD_MAX_CONNECTIONS): past it a new
connection is closed unanswered, while those already open keep being served, and one closing makes room again. The
management server's comes from Envoy's overload manager (its admin API exempt, so a drain still works), the gateway
worker's from its listener (gateway.connections). A management server and a one-worker gateway of this module's own
run with a bound of 3."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator

import aiohttp
import pytest
import pytest_asyncio

from server.settings import default_max_connections, load_settings
from tests.both_ports import both_ports, exchange

LIMIT = 3


@pytest_asyncio.fixture(scope="module")
async def ports() -> AsyncIterator[dict[str, int]]:
    async with both_ports(SWITCHBOARD_MAX_CONNECTIONS=str(LIMIT)) as found:
        yield found


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


async def _status(connection: Connection) -> bytes:
    """The status line of a GET /healthz on `connection`, or b"" where the server closed it unanswered."""
    try:
        return await exchange(*connection, "/healthz")
    except (asyncio.IncompleteReadError, ConnectionError):
        return b""


async def _open(port: int) -> Connection:
    return await asyncio.open_connection("127.0.0.1", port)


async def _close(connection: Connection) -> None:
    connection[1].close()
    with contextlib.suppress(ConnectionError):
        await connection[1].wait_closed()


async def _served(port: int) -> Connection:
    """A new connection the server answered. A connection just closed (a scrape's, or one of the test's) holds its
    room until the server has seen the close, so one refused meanwhile is retried for a while."""
    for _ in range(50):
        connection = await _open(port)
        if await _status(connection) == b"HTTP/1.1 200 OK":
            return connection
        await _close(connection)
        await asyncio.sleep(0.1)
    raise AssertionError("no room was ever given to a new connection")


@contextlib.asynccontextmanager
async def _holding_all(port: int) -> AsyncIterator[list[Connection]]:
    """LIMIT open connections, each answered once, closed on leaving."""
    held: list[Connection] = []
    try:
        for _ in range(LIMIT):
            held.append(await _served(port))
        yield held
    finally:
        for connection in held:
            await _close(connection)


@pytest.mark.parametrize("port_name", ["management", "gateway"])
async def test_connections_past_the_limit_are_closed_and_those_open_still_served(
    ports: dict[str, int], port_name: str
) -> None:
    port = ports[port_name]
    async with _holding_all(port) as held:
        extra = await _open(port)
        assert await _status(extra) == b""  # closed unanswered
        await _close(extra)
        assert await _status(held[1]) == b"HTTP/1.1 200 OK"  # the open ones are unaffected
        await _close(held.pop(0))
        held.append(await _served(port))  # its room is given to a new one


@pytest.mark.parametrize("port_name", ["management", "gateway"])
async def test_each_server_counts_the_connections_it_refused_in_its_metrics(
    ports: dict[str, int], port_name: str
) -> None:
    # The management server's are counted by Envoy, before the app sees them: its /metrics reads them there.
    port = ports[port_name]
    counted = re.compile(
        rf'^switchboard_{port_name}_connections_refused_total\{{reason="max_connections"\}} (\S+)$', re.M
    )
    before = await _refused(port, counted)
    async with _holding_all(port):
        for _ in range(2):
            extra = await _open(port)
            assert await _status(extra) == b""
            await _close(extra)
    for _ in range(50):  # a gateway worker folds its counts into /metrics once a second
        if await _refused(port, counted) >= before + 2:
            return
        await asyncio.sleep(0.2)
    raise AssertionError("the refused connections were never counted")


async def _refused(port: int, counted: re.Pattern[str]) -> float:
    """The refused-connection count a scrape reports (0 before any)."""
    for _ in range(50):  # until a connection of its own gets in
        with contextlib.suppress(aiohttp.ClientError):
            async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as resp:
                assert resp.status == 200
                found = counted.search(await resp.text())
                return float(found.group(1)) if found else 0.0
        await asyncio.sleep(0.1)
    raise AssertionError("/metrics never answered")


def test_the_default_leaves_part_of_the_open_file_limit_to_the_process() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert 16 <= default_max_connections() < soft
    assert load_settings({}).max_connections == default_max_connections()


def test_a_limit_below_one_is_refused_naming_the_variable() -> None:
    with pytest.raises(ValueError, match="SWITCHBOARD_MAX_CONNECTIONS"):
        load_settings({"SWITCHBOARD_MAX_CONNECTIONS": "0"})
