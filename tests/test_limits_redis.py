"""Rate limits shared by gateway replicas through a real Redis (127.0.0.1:6379, a key prefix of this test run's own):
exact admission across three replicas under 64 concurrent calls, budgets that never overshoot what was reserved,
usage reads from the management server, and the fail-open / fail-closed choice when Redis is unreachable."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import orjson
import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Database, Server, server_env, start_server, unique_name
from tests.gateway_world import GatewayWorld
from tests.limits_world import REDIS_URL, LimitsGateway, Tenant, early_in_a_minute, limits_gateway, new_tenant
from tests.world import must

# The counts are Redis's (the database holds the policies, read as on any backend): three gateway replicas per
# backend cost CI a minute.
pytestmark = ONE_BACKEND

LIMITS = "switchboard.limits.v1.LimitService"


@pytest.fixture(scope="module")
def prefix() -> str:
    return f"test:{unique_name('limits')}:"


@pytest.fixture(scope="module")
async def replicas(database: Database, server: Server, prefix: str) -> AsyncIterator[list[LimitsGateway]]:
    """Three gateway replicas (processes) counting in one Redis."""
    settings = {"redis_url": REDIS_URL, "limits_redis_prefix": prefix}
    async with (
        limits_gateway(database, server, **settings) as one,
        limits_gateway(database, server, **settings) as two,
        limits_gateway(database, server, **settings) as three,
    ):
        yield [one, two, three]


@pytest.fixture
async def tenant(server: Server, limits_models: GatewayWorld) -> Tenant:
    return await new_tenant(server, limits_models)


def chat(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}


async def _spread(
    replicas: list[LimitsGateway], secret: str, bodies: list[dict[str, Any]], *, concurrency: int
) -> list[int]:
    """Send the bodies round-robin over the replicas, `concurrency` at a time; their statuses."""
    gate = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def one(index: int, body: dict[str, Any]) -> int:
            async with gate:
                url = f"{replicas[index % len(replicas)].base_url}/chat/completions"
                async with http.post(url, data=orjson.dumps(body), headers={"Authorization": f"Bearer {secret}"}) as r:
                    await r.read()
                    return r.status

        return list(await asyncio.gather(*(one(i, b) for i, b in enumerate(bodies))))


async def test_three_replicas_admit_exactly_the_limit_under_64_concurrent_calls(
    replicas: list[LimitsGateway], tenant: Tenant
) -> None:
    key_id, secret = await tenant.key("shared")
    await tenant.limit(("API_KEY", key_id), requestsPerMinute="60")
    await early_in_a_minute(20)
    statuses = await _spread(replicas, secret, [chat(tenant.world.model("lchat"))] * 150, concurrency=64)
    assert statuses.count(200) == 60 and statuses.count(429) == 90


async def test_a_budget_never_overshoots_what_was_reserved(
    replicas: list[LimitsGateway], tenant: Tenant, server: Server, database: Database, prefix: str
) -> None:
    key_id, secret = await tenant.key("budget")
    budget = {"tokenBudget": "3000", "budgetPeriod": "BUDGET_PERIOD_WEEK", "concurrentRequests": "64"}
    await tenant.limit(("API_KEY", key_id), **budget)
    body = chat(tenant.world.model("lchat"), max_tokens=60)
    reserved = -(-len(orjson.dumps(body)) // 4) + 60
    statuses = await _spread(replicas, secret, [body] * 120, concurrency=64)
    admitted = statuses.count(200)
    # Each call reserves `reserved` tokens and uses 70: at least as many as fit reserved at once are admitted, and
    # never more than the budget holds at 70 each.
    assert 3000 // reserved <= admitted <= 3000 // 70 and statuses.count(429) == 120 - admitted
    # The management server reads the same counters (a server of its own, configured with the same Redis).
    env = server_env(
        database, server.settings.var_dir, SWITCHBOARD_REDIS_URL=REDIS_URL, SWITCHBOARD_LIMITS_REDIS_PREFIX=prefix
    )
    proc = await start_server(env)
    try:
        connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
        body = {"tenantId": tenant.id, "apiKeyId": key_id}
        got = must(await connect.call(f"{LIMITS}/GetLimitUsage", body, token=tenant.world.tokens["admin"], get=True))
        # The read by scope (the console's, beside the key) names the same counters.
        body = {"tenantId": tenant.id, "scope": {"kind": "LIMIT_SCOPE_KIND_API_KEY", "id": key_id}}
        by_scope = must(
            await connect.call(f"{LIMITS}/GetLimitUsage", body, token=tenant.world.tokens["admin"], get=True)
        )
    finally:
        await proc.stop()
    rows = {r["metric"]: r for r in got["limits"]}
    spent = rows["LIMIT_METRIC_TOKEN_BUDGET"]
    assert int(spent["used"]) == 70 * admitted <= 3000  # every reservation settled to the usage reported
    assert int(spent["remaining"]) == 3000 - 70 * admitted
    assert rows["LIMIT_METRIC_CONCURRENT_REQUESTS"]["used"] == "0"  # every lease given back
    assert by_scope == got


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(("when_down", "status"), [("open", 200), ("closed", 429)])
async def test_when_redis_is_down_calls_fail_open_or_closed_never_5xx(
    database: Database, server: Server, tenant: Tenant, when_down: str, status: int
) -> None:
    key_id, secret = await tenant.key(f"down-{when_down}")
    await tenant.limit(("API_KEY", key_id), requestsPerMinute="1")
    down = f"redis://127.0.0.1:{_closed_port()}/0"
    async with limits_gateway(database, server, redis_url=down, limits_when_redis_down=when_down) as gw:
        statuses = await _spread([gw], secret, [chat(tenant.world.model("lchat"))] * 4, concurrency=1)
        assert statuses == [status] * 4  # the limit of 1 could not be counted: all admitted, or all refused
        log = gw.log()
    assert log.count("the rate-limit counter store is unreachable") == 1  # rate-limited: once a minute
    assert "Traceback" not in log


async def test_a_usage_read_while_redis_is_down_answers_the_limits_without_their_use(
    database: Database, server: Server, tenant: Tenant
) -> None:
    """A management server whose Redis is unreachable still answers usage reads: the limits (from the database), with
    `used`/`remaining` absent as when no Redis is configured, never a made-up count nor an error."""
    key_id, _ = await tenant.key("read-down")
    await tenant.limit(("API_KEY", key_id), requestsPerMinute="5", concurrentRequests="2")
    down = f"redis://127.0.0.1:{_closed_port()}/0"
    proc = await start_server(server_env(database, server.settings.var_dir, SWITCHBOARD_REDIS_URL=down))
    try:
        connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
        scope = {"kind": "LIMIT_SCOPE_KIND_API_KEY", "id": key_id}
        for body in ({"tenantId": tenant.id, "apiKeyId": key_id}, {"tenantId": tenant.id, "scope": scope}):
            token = tenant.world.tokens["admin"]
            got = must(await connect.call(f"{LIMITS}/GetLimitUsage", body, token=token, get=True))
            assert sorted((r["metric"], r["limit"]) for r in got["limits"]) == [
                ("LIMIT_METRIC_CONCURRENT_REQUESTS", "2"),
                ("LIMIT_METRIC_REQUESTS_PER_MINUTE", "5"),
            ], got
            assert not any("used" in r or "remaining" in r for r in got["limits"]), got
    finally:
        await proc.stop()
