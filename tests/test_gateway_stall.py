"""An upstream that stops sending mid-stream is cut off after SWITCHBOARD_GATEWAY_UPSTREAM_STALL_SECONDS (within 1.25x
of it): the client gets what came before and then an error event, and the response ends (no hanging stream)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import aiohttp
import orjson
import pytest
import pytest_asyncio
from aiohttp import web
from sqlalchemy import select

from server.store.db import Database as Db
from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Database, Server
from tests.gateway_fixtures import Fakes, Gateway, GatewayProcess, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld, ModelSpec, create_models

pytestmark = ONE_BACKEND  # stream deadlines and a client's leaving are the gateway's, whatever the database

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


@dataclass
class _Streaming:
    gateway: GatewayProcess
    model: str
    headers: dict[str, str]
    body: dict[str, Any]


StreamingGateway = Callable[..., contextlib.AbstractAsyncContextManager[_Streaming]]


@pytest.fixture
def streaming_gateway(
    database: Database, server: Server, gateway: Gateway, fakes: Fakes, gw_world: GatewayWorld
) -> StreamingGateway:
    """`streaming_gateway(upstream, name, env=..., stderr=...)`: a model `name` at `upstream`, a gateway process of
    its own (with `env` added), and a streamed chat request for the model; the process is stopped on the way out."""

    @contextlib.asynccontextmanager
    async def start(
        upstream: str, name: str, *, env: dict[str, str] | None = None, stderr: IO[bytes] | None = None
    ) -> AsyncIterator[_Streaming]:
        connect = ConnectJsonCaller(server.base_url)
        await create_models(connect, server.admin_token, gw_world, [ModelSpec(name, upstream=upstream)])
        settings = {**gateway_env(database, gateway.settings.var_dir, fakes), **(env or {})}
        gw = await start_gateway_process(settings, workers=1, stderr=stderr)
        model = gw_world.model(name)
        try:
            yield _Streaming(
                gw,
                model,
                {"Authorization": f"Bearer {gw_world.keys['all']}"},
                {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True},
            )
        finally:
            gw.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(gw.proc.wait(), 60)

    return start


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
    streaming_gateway: StreamingGateway, stalling_upstream: str
) -> None:
    stall = {"SWITCHBOARD_GATEWAY_UPSTREAM_STALL_SECONDS": "1"}
    async with streaming_gateway(stalling_upstream, "stall", env=stall) as streaming, aiohttp.ClientSession() as http:
        start = time.monotonic()
        url = f"{streaming.gateway.base_url}/chat/completions"
        async with http.post(url, json=streaming.body, headers=streaming.headers) as resp:
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
    streaming_gateway: StreamingGateway, trickling_upstream: str, database: Database, tmp_path: Path
) -> None:
    log_path = tmp_path / "gateway.log"
    with log_path.open("wb") as log:
        async with streaming_gateway(trickling_upstream, "trickle", stderr=log) as streaming:
            async with aiohttp.ClientSession() as http:
                url = f"{streaming.gateway.base_url}/chat/completions"
                resp = await http.post(url, json=streaming.body, headers=streaming.headers)
                assert resp.status == 200
                assert b"before the stall" in await resp.content.readany()
                resp.close()  # the client goes away while the upstream is still streaming
            db = Db(database.url)
            try:
                statuses: list[int] = []
                for _ in range(200):  # bounded wait for the metering flush, not a timing assertion
                    async with db.read() as session:
                        found = select(UsageEventRow.status).where(UsageEventRow.model_id == streaming.model)
                        statuses = list(await session.scalars(found))
                    if statuses:
                        break
                    await asyncio.sleep(0.05)
            finally:
                await db.close()
            assert statuses == [499]
    assert "broke" not in log_path.read_text(errors="replace")
