"""An upstream that stops sending mid-stream is cut off after SWITCHBOARD_GATEWAY_UPSTREAM_STALL_SECONDS (within 1.25x
of it): the client gets what came before and then an error event, and the response ends (no hanging stream)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import aiohttp
import orjson
import pytest_asyncio
from aiohttp import web
from sqlalchemy import select

from server.store.db import Database as Db
from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld, ModelSpec, create_models

STALL_SECONDS = 1.0
_CHUNK = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"stall","choices":[{"index":0,'
_CHUNK += b'"delta":{"content":"before the stall"},"finish_reason":null}]}\n\n'


@contextlib.asynccontextmanager
async def _upstream(chat: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> AsyncIterator[str]:
    """A real upstream on loopback answering chat completions with `chat`; yields its /v1 base URL."""
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app, shutdown_timeout=0)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/v1"
    finally:
        await runner.cleanup()


@pytest_asyncio.fixture
async def stalling_upstream() -> AsyncIterator[str]:
    """A real upstream on loopback that streams one chunk, then sends nothing more (connection left open)."""
    release = asyncio.Event()

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_CHUNK)
        await release.wait()
        return resp

    async with _upstream(chat) as url:
        try:
            yield url
        finally:
            release.set()  # before the runner's cleanup, which waits for the handler


async def test_a_stalled_upstream_stream_ends_with_an_error_within_the_bound(
    *,
    database: Database,
    server: Server,
    gateway: Gateway,
    fakes: Fakes,
    gw_world: GatewayWorld,
    stalling_upstream: str,
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    await create_models(connect, server.admin_token, gw_world, [ModelSpec("stall", upstream=stalling_upstream)])
    env = {**gateway_env(database, gateway.settings.var_dir, fakes), "SWITCHBOARD_GATEWAY_UPSTREAM_STALL_SECONDS": "1"}
    gw = await start_gateway_process(env, workers=1)
    try:
        headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
        body = {"model": gw_world.model("stall"), "messages": [{"role": "user", "content": "hi"}], "stream": True}
        async with aiohttp.ClientSession() as http:
            start = time.monotonic()
            async with http.post(f"{gw.base_url}/chat/completions", json=body, headers=headers) as resp:
                assert resp.status == 200
                text = (await asyncio.wait_for(resp.read(), 30)).decode()
            elapsed = time.monotonic() - start
        events = [e.removeprefix("data: ") for e in text.split("\n\n") if e]
        assert len(events) == 2, text
        assert orjson.loads(events[0])["choices"][0]["delta"]["content"] == "before the stall"
        error = orjson.loads(events[1])["error"]
        assert "model backend stopped responding" in error["message"]
        # cut off at the bound, not at some other limit (the default is ten minutes); generous for a loaded machine
        assert STALL_SECONDS <= elapsed < STALL_SECONDS + 5, elapsed
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gw.proc.wait(), 60)


@pytest_asyncio.fixture
async def trickling_upstream() -> AsyncIterator[str]:
    """A real upstream on loopback that streams a chunk every 50 ms for a few seconds, then usage and [DONE]."""

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for _ in range(60):
            await resp.write(_CHUNK)
            await asyncio.sleep(0.05)
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async with _upstream(chat) as url:
        yield url


async def test_a_client_leaving_mid_stream_is_metered_499_and_not_logged_as_an_upstream_failure(
    *,
    database: Database,
    server: Server,
    gateway: Gateway,
    fakes: Fakes,
    gw_world: GatewayWorld,
    trickling_upstream: str,
    tmp_path: Path,
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    await create_models(connect, server.admin_token, gw_world, [ModelSpec("trickle", upstream=trickling_upstream)])
    log_path = tmp_path / "gateway.log"
    with log_path.open("wb") as log:
        gw = await start_gateway_process(gateway_env(database, gateway.settings.var_dir, fakes), workers=1, stderr=log)
    try:
        headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
        model = gw_world.model("trickle")
        body = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True}
        async with aiohttp.ClientSession() as http:
            resp = await http.post(f"{gw.base_url}/chat/completions", json=body, headers=headers)
            assert resp.status == 200
            assert b"before the stall" in await resp.content.readany()
            resp.close()  # the client goes away while the upstream is still streaming
        db = Db(database.url)
        try:
            statuses: list[int] = []
            for _ in range(200):  # bounded wait for the metering flush, not a timing assertion
                async with db.read() as session:
                    statuses = list(
                        await session.scalars(select(UsageEventRow.status).where(UsageEventRow.model_id == model))
                    )
                if statuses:
                    break
                await asyncio.sleep(0.05)
        finally:
            await db.close()
        assert statuses == [499]
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gw.proc.wait(), 60)
    assert "broke" not in log_path.read_text(errors="replace")
