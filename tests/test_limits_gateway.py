"""Rate limits in a real gateway process counting in process (one worker): 429s with OpenAI's body and headers,
the rate-limit headers on every answer, reservations settled to usage (streams included), budgets and their soft
threshold, concurrency caps, the tightest limit winning, every inference surface, each model call of the tool loop,
preset agents (their base model's limits, their guardrails' calls), and the openai SDK's own retry backing off and
succeeding."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import signal
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import httpx2 as httpx
import openai
import orjson
import pytest
from sqlalchemy import select

from gateway.limits.headers import NAMES, retry_headers
from server.metering import CallKind
from server.store.db import Database as Db
from server.store.models import LimitSoftCrossingRow, UsageEventRow
from tests.agent_world import AGENTS
from tests.conftest import ONE_BACKEND, Database, Server
from tests.fakes.mcp_servers import loop_tools_server, serve_asgi
from tests.gateway_fixtures import shared_mcp_server
from tests.gateway_world import GatewayWorld
from tests.limits_world import FLOOD, LIMITS, LimitsGateway, Tenant, early_in_a_minute, limits_gateway, new_tenant
from tests.world import must

pytestmark = ONE_BACKEND  # the limits' counts are the gateway's; policies are stored as on any backend

RESET = re.compile(r"^(\d+ms|\d+(\.\d+)?s)$")
KEY, MODEL, TENANT = "API_KEY", "MODEL", "TENANT"


ORIGIN = "http://127.0.0.1:47100"  # a browser page's origin the gateway allows (nothing listens there)


@pytest.fixture(scope="module")
async def gw(database: Database, server: Server) -> AsyncIterator[LimitsGateway]:
    async with limits_gateway(database, server, cors_allowed_origins=ORIGIN) as gateway:
        yield gateway


@pytest.fixture
async def tenant(server: Server, limits_models: GatewayWorld) -> Tenant:
    return await new_tenant(server, limits_models)


async def post(gw: LimitsGateway, secret: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """(status, headers, parsed body) of one raw request; the body's exact bytes decide the reservation."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{gw.base_url}{path}", data=orjson.dumps(body), headers={"Authorization": f"Bearer {secret}"}
        ) as resp,
    ):
        raw = await resp.read()
        parsed = orjson.loads(raw) if resp.content_type == "application/json" else raw
        return resp.status, {k.lower(): v for k, v in resp.headers.items()}, parsed


def chat(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}


def reserved(body: dict[str, Any], output: int = 1024) -> int:
    """What the gateway reserves for a chat body (gateway.limits.estimate): its bytes / 4, plus the larger of
    max_tokens and max_completion_tokens (`output` when it sets neither) for each of its n choices."""
    bounds = [int(body[name]) for name in ("max_tokens", "max_completion_tokens") if name in body]
    return input_tokens(body) + max(bounds, default=output) * int(body.get("n", 1))


def input_tokens(body: dict[str, Any]) -> int:
    return -(-len(orjson.dumps(body)) // 4)


async def test_requests_per_minute_refuse_with_openais_429(gw: LimitsGateway, tenant: Tenant) -> None:
    key_id, secret = await tenant.key("rpm")
    _, other = await tenant.key("unlimited")
    await tenant.limit((KEY, key_id), requestsPerMinute="3")
    await early_in_a_minute(10)
    model = tenant.world.model("lchat")
    for remaining in ("2", "1", "0"):
        status, headers, _ = await post(gw, secret, "/chat/completions", chat(model))
        assert status == 200
        assert headers["x-ratelimit-limit-requests"] == "3"
        assert headers["x-ratelimit-remaining-requests"] == remaining
        assert RESET.match(headers["x-ratelimit-reset-requests"]), headers
        assert "x-ratelimit-limit-tokens" not in headers  # no tokens-per-minute limit applies
    status, headers, body = await post(gw, secret, "/chat/completions", chat(model))
    assert status == 429
    assert body["error"]["type"] == "rate_limit_error" and body["error"]["code"] == "rate_limit_exceeded"
    assert "requests per minute of the API key" in body["error"]["message"]
    assert 1 <= int(headers["retry-after"]) <= 60 and headers["x-should-retry"] == "true"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    # Another key of the tenant is not limited, and its answers carry no rate-limit headers.
    status, headers, _ = await post(gw, other, "/chat/completions", chat(model))
    assert status == 200 and not any(h.startswith("x-ratelimit") for h in headers)
    # The SDK sees a RateLimitError carrying the same headers.
    with (
        openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0) as sdk,
        pytest.raises(openai.RateLimitError) as raised,
    ):
        sdk.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    assert raised.value.code == "rate_limit_exceeded"
    assert raised.value.response.headers["x-ratelimit-limit-requests"] == "3"


async def test_max_tokens_beyond_int64_is_refused_as_too_large_or_not_counted(
    gw: LimitsGateway, tenant: Tenant
) -> None:
    model = tenant.world.model("lchat")
    requests_id, requests_only = await tenant.key("rpm-only")
    await tenant.limit((KEY, requests_id), requestsPerMinute="100")
    tokens_id, with_tokens = await tenant.key("tpm")
    await tenant.limit((KEY, tokens_id), tokensPerMinute="100000")
    status, headers, _ = await post(gw, requests_only, "/chat/completions", chat(model, max_tokens=2**63))
    assert status == 200 and headers["x-ratelimit-limit-requests"] == "100"  # counted as one request
    status, _, body = await post(gw, with_tokens, "/chat/completions", chat(model, max_tokens=2**63))
    assert status == 429 and "Request too large" in body["error"]["message"]


async def test_tokens_reserve_and_settle_to_usage_streams_included(gw: LimitsGateway, tenant: Tenant) -> None:
    key_id, secret = await tenant.key("tpm")
    await tenant.limit((KEY, key_id), tokensPerMinute="2000")
    model = tenant.world.model("lchat")
    first = chat(model, max_tokens=50)
    status, headers, body = await post(gw, secret, "/chat/completions", first)
    assert status == 200 and body["usage"]["total_tokens"] == 60
    assert headers["x-ratelimit-limit-tokens"] == "2000"
    assert headers["x-ratelimit-remaining-tokens"] == str(2000 - reserved(first))  # reserved before the call
    streamed = chat(model, max_tokens=20, stream=True)
    status, headers, _ = await post(gw, secret, "/chat/completions", streamed)
    assert status == 200
    # The first call settled to its 60 tokens; the stream's reservation is taken now.
    assert headers["x-ratelimit-remaining-tokens"] == str(2000 - 60 - reserved(streamed))
    third = chat(model, max_tokens=10)
    status, headers, _ = await post(gw, secret, "/chat/completions", third)
    # The stream settled to the usage its last chunk reported (10 + 20), though the client did not ask for usage.
    assert headers["x-ratelimit-remaining-tokens"] == str(2000 - 60 - 30 - reserved(third))
    # A call that could never fit is refused for good: the SDK is told not to retry.
    status, headers, body = await post(gw, secret, "/chat/completions", chat(model, max_tokens=5000))
    assert status == 429 and headers["x-should-retry"] == "false"
    assert "Request too large" in body["error"]["message"]


async def test_a_request_setting_both_output_bounds_reserves_the_larger(gw: LimitsGateway, tenant: Tenant) -> None:
    """`max_tokens` and `max_completion_tokens` together: upstreams differ in which they honour (vLLM and SGLang the
    newer, servers that predate it only `max_tokens`), so the reservation takes the larger, whichever it is."""
    key_id, secret = await tenant.key("both-bounds")
    await tenant.limit((KEY, key_id), tokensPerMinute="2000")
    model = tenant.world.model("lchat")
    await early_in_a_minute(10)
    first = chat(model, max_completion_tokens=10, max_tokens=500)
    status, headers, _ = await post(gw, secret, "/chat/completions", first)
    assert status == 200 and headers["x-ratelimit-remaining-tokens"] == str(2000 - input_tokens(first) - 500)
    second = chat(model, max_tokens=10, max_completion_tokens=500)
    status, headers, _ = await post(gw, secret, "/chat/completions", second)
    # The first settled to its usage: 10 prompt tokens and the 10 completion tokens this upstream produced.
    assert status == 200 and headers["x-ratelimit-remaining-tokens"] == str(2000 - 20 - input_tokens(second) - 500)
    # The larger bound alone could use more than the minute's 2000: never admitted, whichever field carries it.
    for field, other in (("max_tokens", "max_completion_tokens"), ("max_completion_tokens", "max_tokens")):
        too_large = chat(model, **{field: 5000, other: 10})
        status, headers, body = await post(gw, secret, "/chat/completions", too_large)
        assert status == 429 and headers["x-should-retry"] == "false", field
        assert "Request too large" in body["error"]["message"]


async def test_each_of_n_choices_reserves_max_tokens(gw: LimitsGateway, tenant: Tenant) -> None:
    key_id, secret = await tenant.key("choices")
    await tenant.limit((KEY, key_id), tokensPerMinute="1000")
    model = tenant.world.model("lchat")
    several = chat(model, max_tokens=100, n=8)
    status, headers, _ = await post(gw, secret, "/chat/completions", several)
    assert status == 200
    assert headers["x-ratelimit-remaining-tokens"] == str(1000 - reserved(several))  # 8 x 100 for the output
    # Ten choices of 100 could use more than the whole minute's 1000: never admitted.
    status, headers, body = await post(gw, secret, "/chat/completions", chat(model, max_tokens=100, n=10))
    assert status == 429 and headers["x-should-retry"] == "false"
    assert "Request too large" in body["error"]["message"]


async def test_an_answer_without_usage_keeps_its_reservation(gw: LimitsGateway, tenant: Tenant) -> None:
    """An upstream that reports no usage, streamed or not: its calls cost what they reserved, not nothing."""
    key_id, secret = await tenant.key("no-usage")
    await tenant.limit((KEY, key_id), tokensPerMinute="100k")
    await early_in_a_minute(10)
    model = tenant.world.model("lnousage")
    first, streamed, last = chat(model, max_tokens=50), chat(model, max_tokens=40, stream=True), chat(model)
    assert (await post(gw, secret, "/chat/completions", first))[0] == 200
    assert (await post(gw, secret, "/chat/completions", streamed))[0] == 200
    _, headers, _ = await post(gw, secret, "/chat/completions", last)
    expected = 100_000 - reserved(first) - reserved(streamed) - reserved(last)
    assert headers["x-ratelimit-remaining-tokens"] == str(expected)


@pytest.mark.parametrize("path", ["/chat/completions", "/responses"])
async def test_a_stream_cut_off_settles_to_what_it_relayed_beyond_its_reservation(
    gw: LimitsGateway, tenant: Tenant, database: Database, path: str
) -> None:
    """A client that hangs up mid-stream leaves the call without the usage its upstream reports last. It reserved
    1024 output tokens (it set no bound), but the gateway had relayed 1500 chunks of one token each: it settles to
    its input and those (estimated as its input is, bytes / 4, at least one token a chunk), not to the smaller
    reservation."""
    key_id, secret = await tenant.key("cut-off")
    await tenant.limit((KEY, key_id), tokensPerMinute="100k")
    await early_in_a_minute(20)
    model = tenant.world.model("lflood")
    body = chat(model, stream=True) if path == "/chat/completions" else {"model": model, "input": "hi", "stream": True}
    async with aiohttp.ClientSession() as http:
        resp = await http.post(
            f"{gw.base_url}{path}", data=orjson.dumps(body), headers={"Authorization": f"Bearer {secret}"}
        )
        assert resp.status == 200
        assert resp.headers["x-ratelimit-remaining-tokens"] == str(100_000 - input_tokens(body) - 1024)
        seen = 0
        async for line in resp.content:  # every token of the flood, then the client goes away while it pauses
            seen += line.startswith(b"data: ") and b'"tok "' in line
            if seen == FLOOD:
                break
        resp.close()
    # Metered as cut off (so its reservation has settled), with the same estimate of what it used.
    [(status, prompt, completion)] = await metered(database, key_id)
    assert status == 499 and prompt == input_tokens(body) and FLOOD <= completion <= FLOOD + 2
    after = chat(tenant.world.model("lchat"), max_tokens=1)
    _, headers, _ = await post(gw, secret, "/chat/completions", after)
    settled = 100_000 - int(headers["x-ratelimit-remaining-tokens"]) - reserved(after) - input_tokens(body)
    # The flood's text (a chat stream's measured in one read of 16 and scaled by bytes to all: the last chunk, read
    # too, adds its share), not the 1024 it reserved.
    assert FLOOD <= settled <= FLOOD + 2


@pytest.mark.parametrize("path", ["/chat/completions", "/responses"])
async def test_a_stream_that_breaks_after_relaying_text_counts_that_text(
    gw: LimitsGateway, tenant: Tenant, database: Database, path: str
) -> None:
    """An upstream stream that breaks off (no [DONE]) is a failed call, which gives its reservation back, but the
    client has the text relayed before the break, and the upstream produced it: that much counts."""
    key_id, secret = await tenant.key("broken")
    await tenant.limit((KEY, key_id), tokensPerMinute="100k")
    await early_in_a_minute(20)
    model = tenant.world.model("lbroken")
    body = chat(model, stream=True) if path == "/chat/completions" else {"model": model, "input": "hi", "stream": True}
    status, _, answer = await post(gw, secret, path, body)
    assert status == 200 and answer.count(b'"tok "') == FLOOD and b"error" in answer
    [(status, prompt, completion)] = await metered(database, key_id)
    assert status == 502 and prompt == input_tokens(body) and FLOOD <= completion <= FLOOD + 2
    after = chat(tenant.world.model("lchat"), max_tokens=1)
    _, headers, _ = await post(gw, secret, "/chat/completions", after)
    settled = 100_000 - int(headers["x-ratelimit-remaining-tokens"]) - reserved(after) - input_tokens(body)
    assert FLOOD <= settled <= FLOOD + 2


async def test_a_broken_stream_without_a_limit_is_metered_for_what_it_relayed(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    """Usage is metered whether or not a limit holds the key: a stream whose upstream reported no usage before it
    broke is metered with its input and the text relayed, not as 0 tokens."""
    key_id, secret = await tenant.key("broken-unlimited")
    body = chat(tenant.world.model("lbroken"), stream=True)
    status, headers, _ = await post(gw, secret, "/chat/completions", body)
    assert status == 200 and "x-ratelimit-remaining-tokens" not in headers
    [(status, prompt, completion)] = await metered(database, key_id)
    assert status == 502 and prompt == input_tokens(body) and FLOOD <= completion <= FLOOD + 2


async def metered(database: Database, key_id: str) -> list[tuple[int, int, int]]:
    """(status, prompt tokens, completion tokens) of the key's metered calls, once there are any (they are metered
    off the request path)."""
    db = Db(database.url)
    columns = (UsageEventRow.status, UsageEventRow.prompt_tokens, UsageEventRow.completion_tokens)
    try:
        for _attempt in range(200):
            async with db.read() as session:
                rows = (await session.execute(select(*columns).where(UsageEventRow.api_key_id == key_id))).all()
            if rows:
                return [(status, prompt, completion) for status, prompt, completion in rows]
            await asyncio.sleep(0.05)
        return []
    finally:
        await db.close()


async def test_a_budget_refuses_once_spent_and_its_soft_threshold_is_recorded(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    key_id, secret = await tenant.key("budget")
    budget = {"tokenBudget": "250", "budgetPeriod": "BUDGET_PERIOD_DAY", "softBudget": "100"}
    await tenant.limit((KEY, key_id), tier="LIMIT_TIER_TENANT", **budget)
    model = tenant.world.model("lchat")
    body = chat(model, max_tokens=60)
    assert 75 <= reserved(body) <= 90
    statuses = []
    for _ in range(6):
        status, headers, answer = await post(gw, secret, "/chat/completions", body)
        statuses.append(status)
    # Each call reserves about 80 tokens and uses 70: three fit in 250 (the third settles to 210), a fourth not.
    assert statuses == [200, 200, 200, 429, 429, 429]
    assert "retry-after" in headers and "token budget of the API key" in answer["error"]["message"]
    db = Db(database.url)
    try:
        for _attempt in range(50):  # recorded off the request path
            async with db.read() as session:
                rows = (
                    await session.scalars(select(LimitSoftCrossingRow).where(LimitSoftCrossingRow.scope_id == key_id))
                ).all()
            if rows and "soft token budget crossed" in gw.log():  # logged once recorded
                break
            await asyncio.sleep(0.1)
    finally:
        await db.close()
    assert [(r.tenant_id, r.tier, r.period) for r in rows] == [(tenant.id, 2, time.strftime("%Y-%m-%d", time.gmtime()))]
    assert "soft token budget crossed" in gw.log()


async def test_the_tightest_applicable_limit_wins(gw: LimitsGateway, tenant: Tenant) -> None:
    _, secret = await tenant.key("tight")
    chat_model, other_model = tenant.world.model("lchat"), tenant.world.model("lchat2")
    await tenant.limit((TENANT, ""), requestsPerMinute="5")
    await tenant.limit((MODEL, chat_model), tier="LIMIT_TIER_TENANT", requestsPerMinute="2")
    await early_in_a_minute(10)
    results = [(await post(gw, secret, "/chat/completions", chat(chat_model)))[0] for _ in range(3)]
    assert results == [200, 200, 429]
    # The other model is limited by the tenant's 5 only, which the two admitted calls above already used from.
    _, headers, _ = await post(gw, secret, "/chat/completions", chat(other_model))
    assert headers["x-ratelimit-limit-requests"] == "5" and headers["x-ratelimit-remaining-requests"] == "2"
    results = [(await post(gw, secret, "/chat/completions", chat(other_model)))[0] for _ in range(3)]
    assert results == [200, 200, 429]


async def test_every_inference_surface_is_limited(gw: LimitsGateway, tenant: Tenant) -> None:
    _, secret = await tenant.key("surfaces")
    m = tenant.world.model
    for name in ("lchat", "lembed", "lrerank", "lwhisper"):
        await tenant.limit((MODEL, m(name)), requestsPerMinute="1")
    await early_in_a_minute(20)  # the /responses call at the end finds the chat model's minute spent
    calls = {
        "chat": ("/chat/completions", chat(m("lchat"))),
        "embeddings": ("/embeddings", {"model": m("lembed"), "input": ["a", "b"]}),
        "rerank": ("/rerank", {"model": m("lrerank"), "query": "q", "documents": ["a", "b"]}),
    }
    for surface, (path, body) in calls.items():
        first = await post(gw, secret, path, body)
        assert first[0] == 200 and first[1]["x-ratelimit-remaining-requests"] == "0", surface
        assert (await post(gw, secret, path, body))[0] == 429, surface
    with openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0) as sdk:
        answer = sdk.audio.transcriptions.with_raw_response.create(model=m("lwhisper"), file=("a.wav", b"RIFF0000"))
        assert answer.headers["x-ratelimit-remaining-requests"] == "0"
        with pytest.raises(openai.RateLimitError):
            sdk.audio.transcriptions.create(model=m("lwhisper"), file=("a.wav", b"RIFF0000"))
        # /v1/responses: its model call is /v1/chat/completions' model, already spent above.
        with pytest.raises(openai.RateLimitError):
            sdk.responses.create(model=m("lchat"), input="hi")


@pytest.fixture(scope="module")
def tools_url() -> Iterator[str]:
    with serve_asgi(loop_tools_server({})) as port:
        yield f"http://127.0.0.1:{port}/mcp"


async def test_each_model_call_of_the_tool_loop_counts(
    gw: LimitsGateway, tenant: Tenant, server: Server, tools_url: str
) -> None:
    label = await shared_mcp_server(server, tools_url, "s")
    key_id, secret = await tenant.key("loop")
    await tenant.limit((KEY, key_id), requestsPerMinute="3")
    await early_in_a_minute(10)
    tools = [{"type": "mcp", "server_label": label, "require_approval": "never"}]
    with openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0) as sdk:
        raw = sdk.responses.with_raw_response.create(model=tenant.world.model("lchat"), input="2+3?", tools=tools)
        result = raw.parse()
        assert [item.type for item in result.output] == ["mcp_list_tools", "mcp_call", "message"]
        # Two model calls (the tool call, then the answer): two of the three requests.
        assert raw.headers["x-ratelimit-remaining-requests"] == "1"
        with pytest.raises(openai.RateLimitError) as refused:  # its first model call fits, its second does not
            sdk.responses.create(model=tenant.world.model("lchat"), input="2+3?", tools=tools)
        # The refusal's own headers only: not also those of the grant its first model call had.
        assert refused.value.response.headers.get_list("x-ratelimit-remaining-requests") == ["0"]
    # Streamed, a loop call refused after the stream began ends it with response.failed naming the limit.
    key_id, secret = await tenant.key("loop-stream")
    await tenant.limit((KEY, key_id), requestsPerMinute="3")
    await asyncio.sleep(1.2)  # the tenant's policies, cached by the gateway for up to 1 s (the test setting)
    await early_in_a_minute(10)
    with openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0) as sdk:
        for expected in ("response.completed", "response.failed"):
            events = list(
                sdk.responses.create(model=tenant.world.model("lchat"), input="2+3?", tools=tools, stream=True)
            )
            assert events[-1].type == expected, [e.type for e in events]
        assert "Rate limit reached" in str(events[-1].response.error)  # type: ignore[union-attr]
    assert "Traceback" not in gw.log()


async def test_a_tool_loop_across_two_minutes_settles_each_model_call_in_its_own(
    gw: LimitsGateway, tenant: Tenant, server: Server, tools_url: str
) -> None:
    """A turn's model calls may be admitted in two minutes: each settles in the window it was admitted in. Settling
    the turn's whole use against its last call's minute (the first's reservation kept in its own) drove that
    minute's count about 950 below zero: room beyond its limit."""
    label = await shared_mcp_server(server, tools_url, "s")
    key_id, secret = await tenant.key("two-minutes")
    await tenant.limit((KEY, key_id), tokensPerMinute="100k")
    tools = [{"type": "mcp", "server_label": label, "require_approval": "never"}]
    # `lslow` answers after 1.5 s: started at second 59 of a minute, its first call is admitted in it, its second
    # (after the tool) in the next.
    await asyncio.sleep((59.0 - time.time() % 60) % 60)
    with openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0) as sdk:
        raw = sdk.responses.with_raw_response.create(model=tenant.world.model("lslow"), input="2+3?", tools=tools)
    assert [item.type for item in raw.parse().output] == ["mcp_list_tools", "mcp_call", "message"]
    # The second call's grant found a fresh window (in the first's, both reservations, ~2,100, would show).
    assert 100_000 - int(raw.headers["x-ratelimit-remaining-tokens"]) < 1_500, raw.headers
    after = chat(tenant.world.model("lchat"), max_tokens=1)
    _, headers, _ = await post(gw, secret, "/chat/completions", after)
    # This minute holds the turn's second model call (70 tokens), not the turn's use less the first's reservation.
    assert headers["x-ratelimit-remaining-tokens"] == str(100_000 - 70 - reserved(after))


async def test_a_tool_loop_cut_short_counts_and_meters_the_model_calls_it_made(
    gw: LimitsGateway, tenant: Tenant, server: Server, tools_url: str, database: Database
) -> None:
    """A turn refused a rate limit at its second model call: the first one ran, so its tokens stay counted against
    the tenant's limits and are metered (they were all given back and metered as 0)."""
    label = await shared_mcp_server(server, tools_url, "s")
    key_id, secret = await tenant.key("loop-tokens")
    _, other = await tenant.key("loop-tokens-other")
    await tenant.limit((KEY, key_id), requestsPerMinute="3")
    await tenant.limit((TENANT, ""), tokensPerMinute="100k")
    await early_in_a_minute(15)
    model = tenant.world.model("lchat")
    tools = [{"type": "mcp", "server_label": label, "require_approval": "never"}]
    body = {"model": model, "input": "2+3?", "tools": tools}
    assert (await post(gw, secret, "/responses", body))[0] == 200  # two model calls of 70 tokens each
    assert (await post(gw, secret, "/responses", body))[0] == 429  # one model call of 70 tokens, then refused
    after = chat(model, max_tokens=1)
    _, headers, _ = await post(gw, other, "/chat/completions", after)
    assert headers["x-ratelimit-remaining-tokens"] == str(100_000 - 3 * 70 - reserved(after))
    db = Db(database.url)
    try:
        for _attempt in range(100):  # metered off the request path
            async with db.read() as session:
                rows = (
                    await session.scalars(
                        select(UsageEventRow).where(
                            UsageEventRow.api_key_id == key_id, UsageEventRow.call_kind == int(CallKind.RESPONSE)
                        )
                    )
                ).all()
            if len(rows) == 2:
                break
            await asyncio.sleep(0.1)
    finally:
        await db.close()
    assert sorted((r.status, r.total_tokens) for r in rows) == [(200, 140), (429, 70)]


async def preset_agent(
    tenant: Tenant, base: str, guardrails: tuple[str, ...] = (), sampling: dict[str, Any] | None = None
) -> str:
    """The publicModelId of a new preset agent, made by the tenant's editor (who may not set limits)."""
    name = f"agent-{secrets.token_hex(3)}"
    agent = {"name": name, "publicModelId": name, "baseModel": base, "outputGuardrails": list(guardrails)}
    if sampling is not None:
        agent["sampling"] = sampling
    body = {"tenantId": tenant.id, "presetAgent": agent}
    created = must(await tenant.connect.call(f"{AGENTS}/CreatePresetAgent", body, token=tenant.world.tokens["editor"]))
    return str(created["presetAgent"]["publicModelId"])


async def test_a_preset_agent_is_held_to_its_base_models_limits(gw: LimitsGateway, tenant: Tenant) -> None:
    base = tenant.world.model("lchat")
    await tenant.limit((MODEL, base), tier="LIMIT_TIER_TENANT", requestsPerMinute="2")
    agent = await preset_agent(tenant, base)
    key_id, secret = await tenant.key("agent", person="editor")
    await early_in_a_minute(10)
    assert (await post(gw, secret, "/chat/completions", chat(base)))[0] == 200
    status, headers, _ = await post(gw, secret, "/chat/completions", chat(agent))
    assert status == 200 and headers["x-ratelimit-remaining-requests"] == "0"
    status, _, body = await post(gw, secret, "/chat/completions", chat(agent))
    assert status == 429 and f"requests per minute of the model {base}" in body["error"]["message"]
    assert (await post(gw, secret, "/responses", {"model": agent, "input": "hi"}))[0] == 429
    # What limits the key's calls of the agent, as the limits API reads them: the base model's too.
    body = {"tenantId": tenant.id, "apiKeyId": key_id, "model": agent}
    got = must(await tenant.connect.call(f"{LIMITS}/GetLimitUsage", body, token=tenant.world.tokens["admin"]))
    assert [(u["scope"]["id"], u["limit"]) for u in got["limits"]] == [(base, "2")], got


async def test_a_preset_agents_max_output_tokens_bounds_its_reservation(gw: LimitsGateway, tenant: Tenant) -> None:
    """An agent's maxOutputTokens reaches its base model as max_completion_tokens when the caller sets no bound: the
    call reserves it, not the 1024 of a call without one, on chat completions and on responses."""
    agent = await preset_agent(tenant, tenant.world.model("lchat"), sampling={"maxOutputTokens": 50})
    key_id, secret = await tenant.key("agent-bound", person="editor")
    await tenant.limit((KEY, key_id), tokensPerMinute="100k")
    await early_in_a_minute(15)
    asked = chat(agent)
    status, headers, answer = await post(gw, secret, "/chat/completions", asked)
    assert status == 200 and answer["usage"]["completion_tokens"] == 50  # the agent's bound reached the upstream
    assert headers["x-ratelimit-remaining-tokens"] == str(100_000 - reserved(asked, output=50))
    # A bound the caller sets is the call's own: the agent's applies only where the caller set none.
    own = chat(agent, max_tokens=20)
    status, headers, answer = await post(gw, secret, "/chat/completions", own)
    assert status == 200 and answer["usage"]["completion_tokens"] == 20
    assert headers["x-ratelimit-remaining-tokens"] == str(100_000 - 60 - reserved(own))
    responses = {"model": agent, "input": "hi"}
    status, headers, _ = await post(gw, secret, "/responses", responses)
    assert status == 200
    assert headers["x-ratelimit-remaining-tokens"] == str(100_000 - 60 - 30 - input_tokens(responses) - 50)


async def test_output_guardrail_calls_count_against_the_callers_limits(gw: LimitsGateway, tenant: Tenant) -> None:
    guard = tenant.world.model("lguard")
    agent = await preset_agent(tenant, tenant.world.model("lchat"), (guard, guard))
    tokens_id, tokens = await tenant.key("guarded-tokens", person="editor")
    requests_id, requests = await tenant.key("guarded-requests", person="editor")
    await tenant.limit((KEY, tokens_id), tokensPerMinute="100k")
    await tenant.limit((KEY, requests_id), requestsPerMinute="2")
    await early_in_a_minute(15)
    status, _, answer = await post(gw, tokens, "/chat/completions", chat(agent, max_tokens=5))
    assert status == 200 and answer["usage"]["total_tokens"] == 15
    after = chat(tenant.world.model("lchat"), max_tokens=1)
    _, headers, _ = await post(gw, tokens, "/chat/completions", after)
    # The base model's 15 tokens and each guardrail's 70.
    assert headers["x-ratelimit-remaining-tokens"] == str(100_000 - 15 - 2 * 70 - reserved(after))
    # The base model call and the first guardrail's take the two requests; the second guardrail's is refused, and
    # the answer is withheld with that limit's 429.
    status, headers, body = await post(gw, requests, "/chat/completions", chat(agent))
    assert status == 429 and "requests per minute of the API key" in body["error"]["message"]
    assert "retry-after" in headers


async def test_concurrency_caps_and_the_sdk_retry_backs_off_until_a_slot_frees(
    gw: LimitsGateway, tenant: Tenant
) -> None:
    key_id, secret = await tenant.key("cc")
    await tenant.limit((KEY, key_id), concurrentRequests="1")
    slow = tenant.world.model("lslow")
    statuses: list[int] = []
    client = httpx.Client(event_hooks={"response": [lambda r: statuses.append(r.status_code)]})
    holder = threading.Thread(
        target=lambda: openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=0).chat.completions.create(
            model=slow, messages=[{"role": "user", "content": "hold the slot"}]
        )
    )
    holder.start()
    await asyncio.sleep(0.5)  # the slow call holds the one slot for 1.5 s
    with openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=4, http_client=client) as sdk:
        started = time.monotonic()
        answer = await asyncio.to_thread(
            sdk.chat.completions.create, model=slow, messages=[{"role": "user", "content": "wait for it"}]
        )
    holder.join()
    assert answer.choices[0].message.content == "counted"
    assert statuses[0] == 429 and statuses[-1] == 200  # refused while the slot was held, then admitted
    assert time.monotonic() - started >= 1.0  # it waited as Retry-After said


async def test_a_concurrency_refusal_carries_the_rate_limit_headers(gw: LimitsGateway, tenant: Tenant) -> None:
    """A call refused by a concurrency cap was counted by the limits like any other: its 429 carries the trios of the
    key's requests- and tokens-per-minute limits, with the counts the refusal found (it counted nothing itself)."""
    key_id, secret = await tenant.key("cap-headers")
    await tenant.limit((KEY, key_id), concurrentRequests="1", requestsPerMinute="100", tokensPerMinute="100k")
    await early_in_a_minute(10)
    holding = chat(tenant.world.model("lflood"), stream=True)
    async with aiohttp.ClientSession() as http:
        resp = await http.post(
            f"{gw.base_url}/chat/completions", data=orjson.dumps(holding), headers={"Authorization": f"Bearer {secret}"}
        )
        try:
            assert resp.status == 200 and resp.headers["x-ratelimit-limit-requests"] == "100"
            await resp.content.readline()  # the stream is under way: it holds the one slot
            status, headers, body = await post(gw, secret, "/chat/completions", chat(tenant.world.model("lchat")))
        finally:
            resp.close()
    assert status == 429 and "concurrent requests" in body["error"]["message"], body
    assert headers["retry-after"] == "1" and headers["x-should-retry"] == "true", headers
    assert headers["x-ratelimit-limit-requests"] == "100" and headers["x-ratelimit-remaining-requests"] == "99"
    assert headers["x-ratelimit-limit-tokens"] == "100000", headers
    assert RESET.match(headers["x-ratelimit-reset-requests"]) and RESET.match(headers["x-ratelimit-reset-tokens"])


@pytest.mark.timeout(150)
async def test_the_sdk_retry_succeeds_after_the_window(gw: LimitsGateway, tenant: Tenant) -> None:
    """A refused call's Retry-After runs to the end of the minute window; the SDK waits that long and succeeds."""
    key_id, secret = await tenant.key("window")
    await tenant.limit((KEY, key_id), requestsPerMinute="1")
    await early_in_a_minute(5)  # both calls must start in one window
    model = tenant.world.model("lchat")
    statuses: list[int] = []
    client = httpx.Client(event_hooks={"response": [lambda r: statuses.append(r.status_code)]})
    with openai.OpenAI(base_url=gw.base_url, api_key=secret, max_retries=2, http_client=client) as sdk:
        sdk.chat.completions.create(model=model, messages=[{"role": "user", "content": "one"}])
        answer = await asyncio.to_thread(
            sdk.chat.completions.create, model=model, messages=[{"role": "user", "content": "two"}]
        )
    assert answer.choices[0].message.content == "counted"
    assert statuses == [200, 429, 200]


async def test_two_workers_of_one_gateway_admit_the_limit_once_without_redis(
    database: Database, server: Server, tenant: Tenant
) -> None:
    """Without Redis the workers share their counters in memory: 30 calls on fresh connections (which the kernel
    spreads over both workers) against a limit of 10 admit exactly 10, not 10 per worker."""
    key_id, secret = await tenant.key("two-workers")
    await tenant.limit((KEY, key_id), requestsPerMinute="10")
    await early_in_a_minute(10)  # all of them in one minute window
    body = orjson.dumps(chat(tenant.world.model("lchat")))
    async with limits_gateway(database, server, workers=2) as two:
        connector = aiohttp.TCPConnector(force_close=True)  # a new connection per call
        async with aiohttp.ClientSession(connector=connector) as http:

            async def one() -> int:
                headers = {"Authorization": f"Bearer {secret}"}
                async with http.post(f"{two.base_url}/chat/completions", data=body, headers=headers) as resp:
                    await resp.read()
                    return resp.status

            statuses = await asyncio.gather(*(one() for _ in range(30)))
    assert statuses.count(200) == 10 and statuses.count(429) == 20


def _listed(value: str | None) -> set[str]:
    return {v.strip().lower() for v in (value or "").split(",") if v.strip()}


async def test_browsers_can_read_the_rate_limit_headers(gw: LimitsGateway, tenant: Tenant) -> None:
    """A page on an allowed origin: its preflight is answered, and on the actual answers (a success and a 429) the
    rate-limit headers are listed in Access-Control-Expose-Headers, so fetch() can read them."""
    written = {*NAMES["requests"], *NAMES["tokens"], *retry_headers(1)}
    key_id, secret = await tenant.key("browser")
    await tenant.limit((KEY, key_id), requestsPerMinute="1", tokensPerMinute="100k")
    await early_in_a_minute(10)
    url = f"{gw.base_url}/chat/completions"
    async with aiohttp.ClientSession() as http:
        asked = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
        async with http.options(url, headers={"Origin": ORIGIN, **asked}) as preflight:
            assert preflight.status == 204
            assert preflight.headers["Access-Control-Allow-Origin"] == ORIGIN
        headers = {"Origin": ORIGIN, "Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        body = orjson.dumps(chat(tenant.world.model("lchat")))
        expected = {
            200: {"x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens"},
            429: {"x-ratelimit-remaining-requests", "retry-after", "retry-after-ms"},
        }
        for status, wanted in expected.items():
            async with http.post(url, data=body, headers=headers) as resp:
                await resp.read()
                assert resp.status == status
                assert resp.headers["Access-Control-Allow-Origin"] == ORIGIN
                exposed = _listed(resp.headers["Access-Control-Expose-Headers"])
                assert wanted <= {h.lower() for h in resp.headers}
                # Each once: a refusal's answer carries its own, an admitted call's answer gets its grant's.
                assert all(len(resp.headers.getall(name)) == 1 for name in written if name in resp.headers)
                assert written <= exposed, written - exposed  # every header the limiter writes, not only these


async def test_a_dead_workers_calls_free_their_concurrency_slots(
    database: Database, server: Server, tenant: Tenant
) -> None:
    """Both workers of a gateway killed while their calls hold a cap's every slot: the gateway's parent gives the
    slots back when it reaps them, so the replacement workers admit new calls at once (the dead calls never end)."""
    key_id, secret = await tenant.key("killed")
    await tenant.limit((KEY, key_id), concurrentRequests="2")
    slow, model = tenant.world.model("lslow"), tenant.world.model("lchat")
    async with limits_gateway(database, server, workers=2) as two, aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bearer {secret}"}
        url = f"{two.base_url}/chat/completions"

        async def call(name: str) -> int:
            async with http.post(url, data=orjson.dumps(chat(name)), headers=headers) as resp:
                await resp.read()
                return resp.status

        holding = [asyncio.ensure_future(call(slow)) for _ in range(2)]
        await asyncio.sleep(0.7)  # both admitted, upstream answers after 1.5 s
        assert await call(model) == 429  # the cap is full
        workers = two.workers()
        for pid in workers:
            os.kill(pid, signal.SIGKILL)
        await asyncio.gather(*holding, return_exceptions=True)  # cut off
        for _ in range(100):  # until both replacements serve
            await asyncio.sleep(0.1)
            replaced = set(two.workers()) - set(workers)
            if len(replaced) == 2:
                break
        statuses = []
        for _ in range(30):
            with contextlib.suppress(aiohttp.ClientError):
                statuses.append(await call(model))
                if statuses[-1] == 200:
                    break
            await asyncio.sleep(0.1)
        assert statuses and statuses[-1] == 200, statuses
