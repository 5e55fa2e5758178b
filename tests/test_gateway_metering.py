"""Metering: one usage event per call (tokens by kind, status, target, bytes) and one traffic row per HTTP request,
written in batches off the hot path and flushed on graceful shutdown."""

from __future__ import annotations

import asyncio
import io
import os
import signal
from datetime import UTC, datetime, timedelta
from pathlib import Path

import aiohttp
import openai
from sqlalchemy import func, select

from server.metering import CallKind
from server.store.db import Database as Db
from server.store.models import ApiTrafficRow, UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.fakes.upstream import COMPLETION_TOKENS, PROMPT_TOKENS
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, own_var_dir, start_gateway_process
from tests.gateway_world import GatewayWorld, all_resources_key, one_model_and_key
from tests.world import must

MESSAGES = [{"role": "user", "content": "hi"}]


async def _usage_rows(gateway: Gateway, key_id: str, count: int) -> list[UsageEventRow]:
    """Wait for the background flushers to write `count` rows of this key (bounded; not a timing assertion)."""
    rows: list[UsageEventRow] = []
    for _ in range(200):
        async with gateway.db.read() as s:
            rows = list(await s.scalars(select(UsageEventRow).where(UsageEventRow.api_key_id == key_id)))
        if len(rows) >= count:
            break
        await asyncio.sleep(0.05)
    return rows


async def test_every_call_kind_is_metered_with_its_tokens(
    server: Server, gateway: Gateway, gw_world: GatewayWorld
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    secret = await all_resources_key(connect, gw_world, gw_world.tokens["editor"], "metering")
    key_id = gw_world.key_ids["metering"]
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=secret, max_retries=0)
    tag = gw_world.tag
    # A stream whose client did not ask for usage is metered all the same (through an alias, here).
    async for _ in await sdk.chat.completions.create(model=f"hidden-{tag}", messages=MESSAGES, stream=True):  # type: ignore[arg-type]
        pass
    await sdk.embeddings.create(model=f"embed-noprefix-{tag}", input="abcd")
    await sdk.audio.transcriptions.create(model=f"whisper-{tag}", file=("a.wav", io.BytesIO(b"RIFF"), "audio/wav"))
    headers = {"Authorization": f"Bearer {secret}"}
    async with aiohttp.ClientSession() as http:
        body = {"model": f"rerank-{tag}", "query": "a", "documents": ["a", "b"]}
        async with http.post(f"{gateway.base_url}/rerank", json=body, headers=headers) as resp:
            assert resp.status == 200
        body = {"model": f"f500-{tag}", "messages": MESSAGES}
        async with http.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers) as resp:
            assert resp.status == 502
    found = await _usage_rows(gateway, key_id, 5)
    assert len(found) == 5
    rows = {r.model_id.removesuffix(f"-{tag}"): r for r in found}
    chat = rows["hidden"]
    assert (chat.call_kind, chat.prompt_tokens, chat.completion_tokens, chat.status) == (
        CallKind.CHAT_COMPLETION,
        PROMPT_TOKENS,
        COMPLETION_TOKENS,
        200,
    )
    assert chat.total_tokens == PROMPT_TOKENS + COMPLETION_TOKENS
    assert (chat.tenant_id, chat.user_id) == (gw_world.tenant_id, gw_world.user_ids["editor"])
    assert chat.target_kind == 1 and chat.target_name == gw_world.names[f"chat-{tag}"][1]  # the alias's target
    assert chat.response_bytes > 0 and chat.request_bytes > 0 and chat.latency_ms > 0
    assert (rows["embed-noprefix"].call_kind, rows["embed-noprefix"].embedding_tokens) == (CallKind.EMBEDDING, 4)
    assert (rows["rerank"].call_kind, rows["rerank"].rerank_tokens) == (CallKind.RERANK, 11)
    assert (rows["whisper"].call_kind, rows["whisper"].prompt_tokens) == (CallKind.TRANSCRIPTION, 20)
    assert rows["f500"].status == 502 and rows["f500"].total_tokens == 0

    # The platform operator's reads see what the gateway metered.
    now = datetime.now(UTC)
    start, end = now - timedelta(hours=1), now + timedelta(minutes=5)
    window = {"startTime": f"{start:%Y-%m-%dT%H:%M:%SZ}", "endTime": f"{end:%Y-%m-%dT%H:%M:%SZ}"}
    usage = "platform.metering.v1.PlatformUsageService"
    body = {"window": window, "groupBy": "TOKEN_USAGE_GROUP_BY_MODEL", "tenantIds": [gw_world.tenant_id]}
    body["modelIds"] = [f"whisper-{tag}"]
    groups = must(await connect.call(f"{usage}/ListPlatformTokenUsage", body, token=server.admin_token))["groups"]
    assert [g["modelId"] for g in groups] == [f"whisper-{tag}"]
    assert int(groups[0]["promptTokens"]) >= 20
    body = {"window": window, "step": "3600s", "service": "gateway"}
    traffic = must(await connect.call(f"{usage}/GetPlatformApiTrafficSeries", body, token=server.admin_token))
    assert "gateway" in traffic["services"]
    assert sum(int(p.get("requestCount", 0)) for p in traffic["series"][0]["points"]) >= 5


async def test_sigterm_flushes_every_event(
    database: Database, gateway: Gateway, fakes: Fakes, gw_world: GatewayWorld
) -> None:
    """Start the gateway process (2 workers), send N requests, SIGTERM it: N usage rows and N traffic rows."""
    env = gateway_env(database, gateway.settings.var_dir, fakes)
    model = gw_world.model("sigterm")
    traffic_before = await _traffic(database.url)
    gw = await start_gateway_process(env, workers=2)
    n = 40
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    body = {"model": model, "messages": MESSAGES}
    async with aiohttp.ClientSession() as http:

        async def one() -> None:
            async with http.post(f"{gw.base_url}/chat/completions", json=body, headers=headers) as resp:
                assert resp.status == 200

        await asyncio.gather(*(one() for _ in range(n)))
    gw.proc.send_signal(signal.SIGTERM)  # at once: the events are still queued in the workers
    assert await asyncio.wait_for(gw.proc.wait(), 60) == 0
    db = Db(database.url)
    try:
        async with db.read() as s:
            usage = await s.scalar(select(func.count()).where(UsageEventRow.model_id == model))
    finally:
        await db.close()
    assert usage == n
    # Every request is counted as traffic too (plus the readiness probes of start_gateway_process).
    assert await _traffic(database.url) - traffic_before >= n


async def _traffic(url: str) -> int:
    db = Db(url)
    try:
        async with db.read() as s:
            count = await s.scalar(select(func.sum(ApiTrafficRow.requests)).where(ApiTrafficRow.service == "gateway"))
            return int(count or 0)
    finally:
        await db.close()


async def test_a_stream_whose_end_its_client_saw_is_metered_though_the_gateway_dies_at_once(
    database: Database, server: Server, fakes: Fakes, tmp_path: Path
) -> None:
    """A stream's end leaves only once its usage is in the meter's journal (gateway.event_stream). The client reads a
    stream to its end, the gateway is killed at once (SIGKILL, its every process), and the gateway started again on
    the same var dir writes the usage from the journal. The stand-in holds its own stream open after [DONE]
    (`linger-stream`): a gateway that ended the client's stream first would then still be reading the upstream's
    end, its usage not yet metered, when killed."""
    model, secret, key_id = await one_model_and_key(server, fakes.openai_url, "linger-stream")
    var_dir = own_var_dir(server, tmp_path / "var")
    env = gateway_env(database, var_dir, fakes)
    gw = await start_gateway_process(env, workers=1, own_group=True)
    body = {"model": model, "stream": True, "messages": MESSAGES}
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{gw.base_url}/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}) as r,
        ):
            assert r.status == 200
            received = await r.read()
        assert received.endswith(b"data: [DONE]\n\n")
        assert fakes.openai.lingering.is_set()  # the upstream's own stream has not ended
    finally:
        os.killpg(gw.proc.pid, signal.SIGKILL)
        await gw.proc.wait()
        fakes.openai.lingering.clear()
    again = await start_gateway_process(env, workers=1)
    db = Db(database.url)
    try:
        rows: list[UsageEventRow] = []
        for _ in range(200):  # the journal is replayed as the meter starts; bounded, not a timing assertion
            async with db.read() as s:
                rows = list(await s.scalars(select(UsageEventRow).where(UsageEventRow.api_key_id == key_id)))
            if rows:
                break
            await asyncio.sleep(0.05)
    finally:
        again.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(again.proc.wait(), 60)
        await db.close()
    assert [(row.model_id, row.status, row.response_bytes) for row in rows] == [(model, 200, len(received))]
