"""Soft budgets (docs/limits.md): crossing a `softBudget` is recorded (a `limit_soft_crossings` row, once per period,
and a log line) for every policy that sets one, and only when what calls used crosses it, not what they reserved.
Through the real gateway, and through the limiter on each counter store."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import orjson
import pytest
from sqlalchemy import select, update

from gateway.limits.limiter import Limiter
from server.domain.limits import BudgetPeriod
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.store.db import Database as Db
from server.store.limit_counters import Counters, MemoryCounters
from server.store.models import LimitPolicyRow, LimitSoftCrossingRow, TenantRow
from server.store.redis_counters import RedisCounters
from server.store.shared_counters import SharedCounters
from server.store.shared_permits import SharedPermits
from tests.conftest import ONE_BACKEND, Database, Server, insert_rows, unique_name
from tests.gateway_world import GatewayWorld
from tests.limits_world import LIMITS, LimitsGateway, Tenant, limits_gateway, new_tenant
from tests.world import must

pytestmark = ONE_BACKEND  # the limits' counts are the gateway's; policies are stored as on any backend

KEY = "API_KEY"
REDIS_URL = "redis://127.0.0.1:6379/0"
PLATFORM, TENANT_TIER = 1, 2
TODAY = time.strftime("%Y-%m-%d", time.gmtime())


# -- through the gateway -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def gw(database: Database, server: Server) -> AsyncIterator[LimitsGateway]:
    async with limits_gateway(database, server) as gateway:
        yield gateway


@pytest.fixture
async def tenant(server: Server, limits_models: GatewayWorld) -> Tenant:
    return await new_tenant(server, limits_models)


async def post(gw: LimitsGateway, secret: str, body: dict[str, Any]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{gw.base_url}/chat/completions", data=orjson.dumps(body), headers={"Authorization": f"Bearer {secret}"}
        ) as resp,
    ):
        return resp.status, orjson.loads(await resp.read())


def chat(model: str, **extra: Any) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": "hi"}], **extra}


async def crossings(database: Database, tenant_id: str, wait: float = 3.0) -> list[tuple[int, str]]:
    """The tenant's soft crossings as (tier, period), waiting up to `wait` seconds for one (recorded off the request
    path)."""
    db = Db(database.url)
    try:
        rows: list[LimitSoftCrossingRow] = []
        for _ in range(int(wait / 0.1)):
            async with db.read() as session:
                query = select(LimitSoftCrossingRow).where(LimitSoftCrossingRow.tenant_id == tenant_id)
                rows = list((await session.scalars(query)).all())
            if rows:
                break
            await asyncio.sleep(0.1)
        return sorted((r.tier, r.period) for r in rows)
    finally:
        await db.close()


async def test_platform_soft_budget_is_recorded_when_a_tenant_budget_on_the_same_scope_is_lower(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    """An operator's budget with a soft threshold on a key, and the tenant admin's lower budget (none) on the same key:
    the two share one counter, whose limit is the lower one, yet the operator's threshold is still watched."""
    key_id, secret = await tenant.key("softplat")
    await tenant.limit((KEY, key_id), tokenBudget="100000", budgetPeriod="BUDGET_PERIOD_DAY", softBudget="100")
    await tenant.limit((KEY, key_id), tier="LIMIT_TIER_TENANT", tokenBudget="50000", budgetPeriod="BUDGET_PERIOD_DAY")
    model = tenant.world.model("lchat")
    for _ in range(4):  # each uses 70 tokens: 280 in all, well past the operator's soft 100
        status, _ = await post(gw, secret, chat(model, max_tokens=60))
        assert status == 200
    assert await crossings(database, tenant.id) == [(PLATFORM, TODAY)]


async def test_soft_budget_is_not_recorded_as_crossed_by_a_reservation_the_call_never_used(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    """A call with max_tokens 2000 reserves ~2000 tokens but uses 70: the budget's use never reaches the soft
    threshold of 500, so nothing is recorded (the reservation was given back when the call ended)."""
    key_id, secret = await tenant.key("softres")
    budget = {"tokenBudget": "100000", "budgetPeriod": "BUDGET_PERIOD_DAY", "softBudget": "500"}
    await tenant.limit((KEY, key_id), tier="LIMIT_TIER_TENANT", **budget)
    model = tenant.world.model("lchat")
    status, answer = await post(gw, secret, chat(model, max_tokens=2000))
    assert status == 200 and answer["usage"]["total_tokens"] == 70
    assert await crossings(database, tenant.id, wait=2.0) == []
    assert f"scope '{key_id}'" not in gw.log()  # no "soft token budget crossed" line names it


async def soft_crossed_time(tenant: Tenant, key_id: str) -> str | None:
    """The softLimitCrossedTime GetLimitUsage reads for the key's one budget."""
    read = {"tenantId": tenant.id, "apiKeyId": key_id}
    token = tenant.world.tokens["admin"]
    usage = must(await tenant.connect.call(f"{LIMITS}/GetLimitUsage", read, token=token, get=True))
    crossed: str | None = usage["limits"][0].get("softLimitCrossedTime")
    return crossed


BUDGET = {"tokenBudget": "100000", "budgetPeriod": "BUDGET_PERIOD_DAY"}


async def _key_that_used_140(gw: LimitsGateway, tenant: Tenant, name: str, soft: str) -> tuple[str, str]:
    """A key under a budget of soft threshold `soft`, after two calls of 70 tokens each: (key id, secret)."""
    key_id, secret = await tenant.key(name)
    await tenant.limit((KEY, key_id), softBudget=soft, **BUDGET)
    for _ in range(2):
        status, _ = await post(gw, secret, chat(tenant.world.model("lchat"), max_tokens=60))
        assert status == 200
    return key_id, secret


async def _one_more_call_after_a_change(gw: LimitsGateway, tenant: Tenant, secret: str) -> None:
    """One more call of 70 tokens, once the gateway has the policy just changed."""
    await asyncio.sleep(1.2)  # past the gateway's policy cache (1 s here), whatever its invalidation's delay
    status, _ = await post(gw, secret, chat(tenant.world.model("lchat"), max_tokens=60))
    assert status == 200


async def test_a_raised_soft_threshold_reads_as_crossed_only_once_use_crosses_it(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    """Soft 100 crossed (140 used), then raised to 200: the crossing recorded was of a threshold no longer set, so
    the read shows none (the proto: absent while the period's use has not crossed the threshold), and the call that
    takes the use past 200 records that crossing, in the same period."""
    key_id, secret = await _key_that_used_140(gw, tenant, "softraised", "100")
    assert await crossings(database, tenant.id) == [(PLATFORM, TODAY)]
    first = await soft_crossed_time(tenant, key_id)
    assert first
    await tenant.limit((KEY, key_id), softBudget="200", **BUDGET)
    assert await soft_crossed_time(tenant, key_id) is None
    await _one_more_call_after_a_change(gw, tenant, secret)  # 210
    assert await crossings(database, tenant.id) == [(PLATFORM, TODAY)]
    later = await soft_crossed_time(tenant, key_id)
    assert later and later != first


async def test_a_soft_threshold_set_below_the_use_already_counted_is_recorded_by_the_next_call(
    gw: LimitsGateway, tenant: Tenant, database: Database
) -> None:
    """140 used under a soft 1000, then the threshold lowered to 100: no call crosses it any more (each starts past
    it), so the gateway records the first count of it that it sees."""
    key_id, secret = await _key_that_used_140(gw, tenant, "softlowered", "1000")
    assert await crossings(database, tenant.id, wait=1.0) == []
    await tenant.limit((KEY, key_id), softBudget="100", **BUDGET)
    await _one_more_call_after_a_change(gw, tenant, secret)  # 210
    assert await crossings(database, tenant.id) == [(PLATFORM, TODAY)]
    assert await soft_crossed_time(tenant, key_id)


# -- through the limiter, on each counter store ---------------------------------------------------------------------


def _redis(permits: bool) -> Callable[[], Counters]:
    def make() -> Counters:
        with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):  # the tests and CI expect it there
            pass
        return RedisCounters(REDIS_URL, prefix=f"test:{unique_name('soft')}:", permits=permits)

    return make


STORES = pytest.mark.parametrize(
    "store",
    [
        MemoryCounters,
        lambda: SharedCounters(slots=1024, workers=1),
        lambda: SharedPermits(SharedCounters(slots=1024, workers=1)),
        _redis(permits=False),
        _redis(permits=True),
    ],
    ids=["in-process", "shared", "shared-permits", "redis", "redis-permits"],
)


def budget(tenant_id: str, tier: int, limit: int, soft: int | None) -> LimitPolicyRow:
    """A daily token budget on the key k1."""
    return LimitPolicyRow(
        tenant_id=tenant_id,
        tier=tier,
        quantities={},
        scope_kind=3,
        scope_id="k1",
        token_budget=limit,
        budget_period=int(BudgetPeriod.DAY),
        soft_budget=soft,
    )


async def limiter_for(database: Database, store: Callable[[], Counters], *policies: LimitPolicyRow) -> Limiter:
    await insert_rows(database, *policies)
    return Limiter(Db(database.url), store(), ttl=60, fail_closed=False)


async def new_tenant_row(database: Database) -> str:
    tenant_id = unique_name("soft")
    await insert_rows(database, TenantRow(id=tenant_id, name=tenant_id))
    return tenant_id


def key_of(tenant_id: str) -> Principal:
    return Principal(
        None, scoped_tenant_id=tenant_id, api_key=ApiKeyIdentity("k1", tenant_id, ApiKeyType.PERSONAL, "u", None)
    )


async def call(limiter: Limiter, caller: Principal, reserve: int, used: int | None) -> None:
    grant = await limiter.admit(caller, "m", reserve, with_slots=True)
    assert grant is not None
    await limiter.finish(grant, used)


async def close(limiter: Limiter) -> None:
    """Close the limiter once its crossings are recorded (close awaits them)."""
    db = limiter._db
    await limiter.close()
    await db.close()


@STORES
async def test_every_policys_soft_threshold_on_a_shared_budget_counter_is_recorded_for_that_policy(
    database: Database, store: Callable[[], Counters], caplog: pytest.LogCaptureFixture
) -> None:
    """An operator's budget (soft 100) and the tenant admin's lower one (soft 200) on one key share a counter: each
    threshold is recorded, under its own policy's tier, when the use crosses it."""
    tenant_id = await new_tenant_row(database)
    limiter = await limiter_for(
        database, store, budget(tenant_id, PLATFORM, 100_000, 100), budget(tenant_id, TENANT_TIER, 50_000, 200)
    )
    try:
        with caplog.at_level("WARNING", logger="switchboard.gateway.limits"):
            for _ in range(3):  # 70, 140 (past 100), 210 (past 200)
                await call(limiter, key_of(tenant_id), 80, 70)
    finally:
        await close(limiter)
    assert await crossings(database, tenant_id) == [(PLATFORM, TODAY), (TENANT_TIER, TODAY)]
    assert caplog.text.count("soft token budget crossed") == 2
    assert "(140 of 100)" in caplog.text and "(210 of 200)" in caplog.text


@STORES
@pytest.mark.parametrize(
    ("used", "settled"), [(70, 560), (None, 2490), (2000, 2490)], ids=["used-70", "usage-unknown", "used-all"]
)
async def test_a_soft_threshold_is_crossed_by_what_calls_use_not_by_what_they_reserve(
    database: Database,
    store: Callable[[], Counters],
    used: int | None,
    settled: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Calls that reserve 2000 and use 70 take the count past a soft threshold of 500 at every admission: it is
    crossed only by the call whose use takes the settled count past it, once. A call whose usage never becomes known
    keeps its reservation, as does one that used all of it: the count its reservation took past the threshold
    stands, so it crossed it."""
    tenant_id = await new_tenant_row(database)
    limiter = await limiter_for(database, store, budget(tenant_id, TENANT_TIER, 100_000, 500))
    try:
        with caplog.at_level("WARNING", logger="switchboard.gateway.limits"):
            for _ in range(7):  # 490 used
                await call(limiter, key_of(tenant_id), 2000, 70)
            assert "soft token budget crossed" not in caplog.text
            await call(limiter, key_of(tenant_id), 2000, used)  # crosses
            await call(limiter, key_of(tenant_id), 2000, 70)  # already past
    finally:
        await close(limiter)
    assert await crossings(database, tenant_id) == [(TENANT_TIER, TODAY)]
    assert caplog.text.count("soft token budget crossed") == 1 and f"({settled} of 500)" in caplog.text


async def test_a_crossing_another_gateway_process_recorded_is_not_logged_again(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    """Two gateway processes on one Redis: the first crosses soft 100 (150 used) and records and logs it; the second,
    ending its first call of the period past it, finds it recorded: one row, one log line (each process logged it, once
    a period each)."""
    with socket.create_connection(("127.0.0.1", 6379), timeout=0.5):
        pass
    prefix = f"test:{unique_name('soft')}:"
    tenant_id = await new_tenant_row(database)
    policy = budget(tenant_id, TENANT_TIER, 10_000, 100)
    first = await limiter_for(database, lambda: RedisCounters(REDIS_URL, prefix=prefix), policy)
    second = Limiter(Db(database.url), RedisCounters(REDIS_URL, prefix=prefix), ttl=60, fail_closed=False)
    with caplog.at_level("WARNING", logger="switchboard.gateway.limits"):
        try:
            await call(first, key_of(tenant_id), 80, 150)
        finally:
            await close(first)
        try:
            await call(second, key_of(tenant_id), 80, 70)
        finally:
            await close(second)
    assert await crossings(database, tenant_id) == [(TENANT_TIER, TODAY)]
    assert caplog.text.count("soft token budget crossed") == 1 and "(150 of 100)" in caplog.text


async def test_a_call_admitted_before_its_soft_threshold_changed_records_no_crossing_of_the_old_one(
    database: Database,
) -> None:
    """A call admitted under soft 100 ends, taking the use past 100, after the threshold was raised to 50k: 100 is no
    longer set (and SetLimitPolicy forgot that policy's crossings), so nothing is recorded."""
    tenant_id = await new_tenant_row(database)
    limiter = await limiter_for(database, MemoryCounters, budget(tenant_id, PLATFORM, 100_000, 100))
    try:
        await call(limiter, key_of(tenant_id), 80, 70)
        grant = await limiter.admit(key_of(tenant_id), "m", 80, with_slots=True)  # 150: past 100 until it settles
        assert grant is not None
        db = Db(database.url)
        try:
            async with db.transaction() as session:
                raised = update(LimitPolicyRow).where(LimitPolicyRow.tenant_id == tenant_id).values(soft_budget=50_000)
                await session.execute(raised)
        finally:
            await db.close()
        await limiter.finish(grant, 70)  # 140
    finally:
        await close(limiter)
    assert await crossings(database, tenant_id, wait=0.1) == []
