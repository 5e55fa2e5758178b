"""Graceful shutdown of `switchboard serve` (docs/lifecycle.md): on SIGTERM both servers report not ready while still
serving for SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS, then stop accepting, a stream in flight finishes, its usage is
written exactly once, and serve exits 0 within SWITCHBOARD_SHUTDOWN_GRACE_SECONDS; idle, it simply exits. Waits are
bounded by the configured grace, never by tighter timings."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from pathlib import Path

import aiohttp
import orjson
import pytest
from sqlalchemy import select

from gateway.app import make_app
from gateway.context import READINESS
from server.settings import load_settings
from server.store.db import Database as Db
from server.store.models import UsageEventRow
from tests.conftest import ONE_BACKEND, Database, Server
from tests.fakes.serve import serve_in_thread
from tests.fakes.upstream import SLOW_STREAM_PIECES
from tests.gateway_fixtures import Fakes, gateway_env, own_var_dir
from tests.gateway_world import one_model_and_key
from tests.serving import children, running_process, serve, until

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")

GRACE = 30  # seconds; the slow stream takes about 6
# Beyond the grace, serve may spend this long on the last usage batch: the test's outer bound, not a timing claim.
FLUSH = 15


async def _refused(port: int) -> bool:
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
    except ConnectionRefusedError:
        return True
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return False


def _text(body: bytes) -> str:
    pieces = []
    for line in body.splitlines():
        if line.startswith(b"data: {"):
            for choice in orjson.loads(line[6:]).get("choices", []):
                pieces.append(choice.get("delta", {}).get("content") or "")
    return "".join(pieces)


@ONE_BACKEND  # a lifecycle's drain; metering's writes are tested on both databases elsewhere
async def test_sigterm_lets_a_stream_finish_refuses_new_connections_and_meters_it_once(
    database: Database, server: Server, fakes: Fakes, tmp_path: Path
) -> None:
    model, secret, key_id = await one_model_and_key(server, fakes.openai_url, "slow-stream")
    var_dir = own_var_dir(server, tmp_path / "var")
    extra = {"SWITCHBOARD_GATEWAY_WORKERS": "2", "SWITCHBOARD_SHUTDOWN_GRACE_SECONDS": str(GRACE)}
    async with serve(database, var_dir, **extra) as running:
        url = f"http://127.0.0.1:{running.gateway_port}/v1/chat/completions"
        body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
        async with (
            aiohttp.ClientSession() as http,
            http.post(url, json=body, headers={"Authorization": f"Bearer {secret}"}) as resp,
        ):
            assert resp.status == 200
            received = await resp.content.readline()  # the stream has begun
            running.proc.send_signal(signal.SIGTERM)
            await until(lambda: _refused(running.gateway_port))
            await until(lambda: _refused(running.port))
            assert running.proc.returncode is None  # still draining while refusing
            received += await resp.read()
        assert _text(received) == "".join(SLOW_STREAM_PIECES)
        assert b"data: [DONE]" in received
        assert await asyncio.wait_for(running.proc.wait(), GRACE + FLUSH) == 0

    db = Db(database.url)
    try:
        async with db.read() as session:
            rows = list(await session.scalars(select(UsageEventRow).where(UsageEventRow.api_key_id == key_id)))
    finally:
        await db.close()
    assert [(row.model_id, row.status) for row in rows] == [(model, 200)]


def _marked(var_dir: Path) -> bool:
    return (var_dir / "management.draining").exists()


async def _answer(http: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, str]]:
    async with http.get(url) as resp:
        return resp.status, await resp.json()


@ONE_BACKEND
async def test_sigterm_first_reports_not_ready_while_still_serving_then_stops_accepting(database: Database) -> None:
    """The deregistration delay: /readyz 503 draining on both ports while other requests are still answered (a load
    balancer takes the replica out of rotation meanwhile), then both ports refuse connections, and serve exits 0.
    The delay is long enough that the probes below see the first phase on a busy machine."""
    deregister = 8
    async with serve(database, SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS=str(deregister)) as running:
        ports = (running.port, running.gateway_port)
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as http:
            for port in ports:
                assert (await _answer(http, f"http://127.0.0.1:{port}/readyz"))[0] == 200
            running.proc.send_signal(signal.SIGTERM)
            for port in ports:

                async def draining(port: int = port) -> bool:
                    status, body = await _answer(http, f"http://127.0.0.1:{port}/readyz")
                    return (status, body.get("reason")) == (503, "draining")

                await until(draining)
            for port in ports:  # unready, yet still serving
                assert await _answer(http, f"http://127.0.0.1:{port}/livez") == (200, {"status": "ok"})
            assert running.proc.returncode is None
        for port in ports:
            await until(lambda port=port: _refused(port))
        assert await asyncio.wait_for(running.proc.wait(), deregister + GRACE + FLUSH) == 0
    assert not _marked(running.log_path.parent)  # the management drain marker is gone with the server


@ONE_BACKEND
async def test_an_idle_serve_exits_on_sigterm(database: Database) -> None:
    async with serve(database, SWITCHBOARD_SHUTDOWN_GRACE_SECONDS=str(GRACE)) as running:
        started = set(children(running.proc.pid))
        assert started  # the management server and the gateway
        running.proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(running.proc.wait(), GRACE + FLUSH) == 0
        assert not any(running_process(pid) for pid in started)


async def test_a_draining_gateway_reports_not_ready(database: Database, server: Server, fakes: Fakes) -> None:
    """Once a worker has begun its shutdown, a readiness probe on a connection still open is told 503 draining."""
    app = make_app(load_settings(gateway_env(database, server.settings.var_dir, fakes)))
    with serve_in_thread(lambda: app) as port:
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                assert resp.status == 200
            app[READINESS].drain()
            async with http.get(f"http://127.0.0.1:{port}/readyz") as resp:
                assert (resp.status, await resp.json()) == (503, {"status": "unavailable", "reason": "draining"})
