"""What the gateway's header deadline (gateway/header_deadline.py) costs per request: the same tiny aiohttp app served
by aiohttp's own RequestHandler and by the gateway's listener (gateway.parse_errors.listen: one timer armed and
cancelled per request, a wrapped request handler), in the same process and run.

Cases: sequential keep-alive requests over one connection (the per-request path), and 32 requests pipelined in one
write at a time (many heads per read). Each figure is the best of several interleaved rounds, as the machine may
be shared; the ratio (deadline / plain, requests per second) is what to compare.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from gateway.parse_errors import listen

ROUNDS = 6
SEQUENTIAL = 2000
PIPELINED_BATCHES = 100
BATCH = 32
_REQUEST = b"GET /x HTTP/1.1\r\nHost: bench\r\n\r\n"
_ANSWER_END = b"ok"


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _read_answers(reader: asyncio.StreamReader, count: int) -> None:
    for _ in range(count):
        await reader.readuntil(b"\r\n\r\n")
        await reader.readexactly(len(_ANSWER_END))


async def _sequential(port: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.perf_counter()
    for _ in range(SEQUENTIAL):
        writer.write(_REQUEST)
        await _read_answers(reader, 1)
    elapsed = time.perf_counter() - start
    writer.close()
    return SEQUENTIAL / elapsed


async def _pipelined(port: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.perf_counter()
    for _ in range(PIPELINED_BATCHES):
        writer.write(_REQUEST * BATCH)
        await _read_answers(reader, BATCH)
    elapsed = time.perf_counter() - start
    writer.close()
    return PIPELINED_BATCHES * BATCH / elapsed


async def _serve(with_deadline: bool) -> tuple[web.AppRunner, asyncio.AbstractServer, int]:
    app = web.Application()
    app.router.add_get("/x", _ok)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    if with_deadline:
        server = await listen(
            runner, "127.0.0.1", 0, backlog=128, header_timeout=15.0, max_connections=4096, access_log=None
        )
    else:
        assert runner.server is not None
        server = await asyncio.get_running_loop().create_server(runner.server, "127.0.0.1", 0)
    assert isinstance(server, asyncio.Server)
    return runner, server, server.sockets[0].getsockname()[1]


async def main() -> None:
    plain = await _serve(with_deadline=False)
    timed = await _serve(with_deadline=True)
    cases: list[tuple[str, Callable[[int], Awaitable[float]]]] = [
        ("keep-alive, sequential", _sequential),
        (f"pipelined, {BATCH} per write", _pipelined),
    ]
    print(f"{'case':<28} {'plain rps':>10} {'deadline rps':>13} {'ratio':>7}")
    for label, run in cases:
        best = {"plain": 0.0, "deadline": 0.0}
        for round_ in range(ROUNDS):  # interleaved, each first in turn, so a noisy neighbour hits both alike
            order = [("plain", plain[2]), ("deadline", timed[2])]
            for name, port in order if round_ % 2 == 0 else reversed(order):
                best[name] = max(best[name], await run(port))
        ratio = best["deadline"] / best["plain"]
        print(f"{label:<28} {best['plain']:>10.0f} {best['deadline']:>13.0f} {ratio:>6.2f}x")
    for runner, server, _ in (plain, timed):
        server.close()
        await runner.cleanup()
