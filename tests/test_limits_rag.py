"""A RAG's model calls count under the rate limits and budgets of the key that caused them, in a real gateway process:
uploads (inline and in the background) and searches are requests of the RAG's embedding model that reserve their
input and settle to the usage the model reported. A refused upload answers the limit's 429 and keeps nothing; a
background ingest waits out a per-minute limit and fails its file only when waiting cannot help."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from server.metering import CallKind
from server.store.db import Database as Db
from server.store.models import UsageEventRow
from tests.conftest import ONE_BACKEND, Database, Server
from tests.gateway_world import GatewayWorld
from tests.limits_world import LimitsGateway, Tenant, early_in_a_minute, limits_gateway, new_tenant
from tests.rag_helpers import new_rag
from tests.rag_http import Answer, call

pytestmark = ONE_BACKEND  # the limits' counts are the gateway's

KEY = "API_KEY"
INLINE_BYTES = 2000  # a larger upload's text is embedded in the background
EMBEDDING_TOKENS = 8  # what the limits upstream reports for every embedding call
# 40 paragraphs of 48 tokens, a chunk each: two embedding calls (batches of 32), in the background.
LARGE = "\n\n".join(f"Paragraph {i}: " + " ".join(f"tide{j}" for j in range(15)) for i in range(40))


@pytest.fixture(scope="module")
async def gw(database: Database, server: Server) -> AsyncIterator[LimitsGateway]:
    async with limits_gateway(database, server, rag_inline_bytes=str(INLINE_BYTES)) as gateway:
        yield gateway


@pytest.fixture
async def tenant(server: Server, limits_models: GatewayWorld) -> Tenant:
    return await new_tenant(server, limits_models)


async def rag_of(tenant: Tenant) -> str:
    """A RAG of the tenant on the limits' embedding model, created by its admin (whose keys the tests use)."""
    body = {"chunking": {"chunkSizeTokens": 64, "chunkOverlapTokens": 0}}
    rag = await new_rag(tenant.connect, tenant.world.tokens["admin"], tenant.id, tenant.world.model("lembed"), **body)
    return str(rag["id"])


def rag_url(gw: LimitsGateway, rag_id: str, path: str) -> str:
    return f"{gw.base_url.removesuffix('/v1')}/rag/{rag_id}{path}"


async def upload(gw: LimitsGateway, secret: str, rag_id: str, text: str, name: str = "a.md") -> Answer:
    files = {"files": [{"filename": name, "content": text}]}
    return await call("POST", rag_url(gw, rag_id, "/files/content"), secret, json=files)


async def remaining_tokens(gw: LimitsGateway, secret: str, tenant: Tenant) -> int:
    """The key's remaining tokens per minute, read off a chat call's headers, plus what that call reserved."""
    body = {"model": tenant.world.model("lchat"), "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}
    answer = await call("POST", f"{gw.base_url}/chat/completions", secret, json=body)
    assert answer.status == 200, answer
    reserved = -(-len(json.dumps(body)) // 4) + 1  # its body as aiohttp writes it, and its max_tokens
    return int(answer.headers["x-ratelimit-remaining-tokens"]) + reserved


async def metered(database: Database, key_id: str, at_least: int) -> list[tuple[int, int]]:
    """(status, embedding tokens) of the key's metered embedding calls in the order they ended, once there are
    `at_least` (they are metered off the request path)."""
    db = Db(database.url)
    query = (
        select(UsageEventRow.status, UsageEventRow.embedding_tokens)
        .where(UsageEventRow.api_key_id == key_id, UsageEventRow.call_kind == int(CallKind.EMBEDDING))
        .order_by(UsageEventRow.id)
    )
    try:
        for _attempt in range(200):
            async with db.read() as session:
                rows = [(status, tokens) for status, tokens in (await session.execute(query)).all()]
            if len(rows) >= at_least:
                break
            await asyncio.sleep(0.05)
        return rows
    finally:
        await db.close()


async def file_when_done(gw: LimitsGateway, secret: str, rag_id: str, file_id: str, within: float) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        answer = await call("GET", rag_url(gw, rag_id, f"/files/{file_id}"), secret)
        assert answer.status == 200, answer
        if answer.body["status"] != "processing" or time.monotonic() > deadline:
            return dict(answer.body)
        await asyncio.sleep(0.2)


async def test_uploads_and_searches_spend_the_uploading_keys_tokens(gw: LimitsGateway, tenant: Tenant) -> None:
    key_id, secret = await tenant.key("rag-tokens", person="admin")
    await tenant.limit((KEY, key_id), tokensPerMinute="100k")
    await early_in_a_minute(15)
    rag_id = await rag_of(tenant)
    assert (await upload(gw, secret, rag_id, "A short note about tides.")).status == 201
    found = await call("POST", rag_url(gw, rag_id, "/context"), secret, json={"query": "tides"})
    assert found.status == 200, found
    # One embedding call for the upload's chunk and one for the query, settled to the 8 tokens each reported.
    assert await remaining_tokens(gw, secret, tenant) == 100_000 - 2 * EMBEDDING_TOKENS


async def test_a_refused_upload_answers_the_limits_429_and_keeps_nothing(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    key_id, secret = await tenant.key("rag-requests", person="admin")
    await tenant.limit((KEY, key_id), requestsPerMinute="1")
    await early_in_a_minute(15)
    rag_id = await rag_of(tenant)
    assert (await upload(gw, secret, rag_id, "The first note.", "first.md")).status == 201
    refused = await upload(gw, secret, rag_id, "The second note.", "second.md")
    assert refused.status == 429, refused
    assert refused.body["error"]["code"] == "rate_limit_exceeded"
    assert "requests per minute of the API key" in refused.body["error"]["message"]
    assert refused.headers["x-should-retry"] == "true" and int(refused.headers["Retry-After"]) <= 60
    listed = await call("GET", rag_url(gw, rag_id, "/files"), secret)
    assert [f["filename"] for f in listed.body["data"]] == ["first.md"]
    searched = await call("POST", rag_url(gw, rag_id, "/context"), secret, json={"query": "note"})
    assert searched.status == 429, searched
    # Both refused model calls are metered as such, beside the one that ran.
    assert sorted(await metered(database, key_id, 3)) == [(200, 8), (429, 0), (429, 0)]


async def test_a_background_ingest_waits_out_a_per_minute_limit(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    """Its upload has answered already: a refused batch waits for the next window instead of failing the file."""
    key_id, secret = await tenant.key("rag-patient", person="admin")
    await tenant.limit((KEY, key_id), requestsPerMinute="1")
    rag_id = await rag_of(tenant)
    minute = int(time.time() // 60)
    accepted = await upload(gw, secret, rag_id, LARGE)
    assert accepted.status == 201 and accepted.body["data"][0]["status"] == "processing"
    done = await file_when_done(gw, secret, rag_id, accepted.body["data"][0]["id"], within=90)
    assert done["status"] == "ready" and done["chunk_count"] == 40, done
    assert int(time.time() // 60) > minute  # the second batch ran in a later window
    statuses = [status for status, _ in await metered(database, key_id, 3)]
    assert statuses.count(200) == 2 and set(statuses) <= {200, 429}


async def test_a_background_ingest_a_budget_refuses_fails_its_file_with_the_limits_message(
    gw: LimitsGateway, tenant: Tenant
) -> None:
    key_id, secret = await tenant.key("rag-budget", person="admin")
    await tenant.limit((KEY, key_id), tokenBudget="100", budgetPeriod="BUDGET_PERIOD_DAY")
    rag_id = await rag_of(tenant)
    accepted = await upload(gw, secret, rag_id, LARGE)
    assert accepted.status == 201
    done = await file_when_done(gw, secret, rag_id, accepted.body["data"][0]["id"], within=30)
    assert done["status"] == "failed" and "token budget of the API key" in done["failure_reason"], done
