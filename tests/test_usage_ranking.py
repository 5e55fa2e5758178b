"""Top keys over ranges of several calendar months (server.domain._usage_ranking, _usage_sources), on SQLite and
PostgreSQL: month rows for the whole months, day rows and hour rows for the edges, and the threshold read of each
month's heaviest keys, compared with sums of the raw rows written (through the gateway's meter, as in production).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from itertools import pairwise

import pytest

from server.domain._usage_ranking import _Heads, ranked
from server.domain._usage_sources import DAY, HOUR, MONTH, GroupBy, UsageFilter, _pieces, group_column, planned
from server.metering import UsageEvent
from server.permissions import UsageReach
from server.store.db import Database as Store
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.test_usage_service import _answered, _call, _ranked, _totals, _ts, _write
from tests.world import make_world, must

KEYS = 60


def _epoch(value: datetime) -> int:
    return int(value.timestamp())


@pytest.mark.parametrize("seed", range(40))
def test_pieces_cover_a_range_exactly_once_coarsest_first(seed: int) -> None:
    rng = random.Random(seed)
    first = _epoch(datetime(1990 + rng.randrange(20), 1, 1, tzinfo=UTC)) + rng.randrange(400) * DAY
    first += rng.randrange(24) * HOUR
    last = first + rng.randrange(1, 24 * 400) * HOUR
    pieces = _pieces(first, last, (MONTH, DAY, HOUR))
    covered = [(a, b) for _, a, b in pieces]
    assert covered[0][0] == first and covered[-1][1] == last
    assert all(b == c for (_, b), (c, _) in pairwise(covered))  # contiguous, no overlap
    for grain, a, b in pieces:
        start, end = datetime.fromtimestamp(a, UTC), datetime.fromtimestamp(b, UTC)
        if grain == MONTH:
            assert start.day == end.day == 1 and start.hour == end.hour == 0 and a < b
        elif grain == DAY:
            assert a % DAY == b % DAY == 0 and b - a < 62 * DAY  # never a whole month of days
    assert sum(1 for grain, _, _ in pieces if grain == HOUR) <= 2


def _counted(tenant_id: str, key: str, tokens: int, at: datetime) -> UsageEvent:
    """One counted call of `tokens` prompt tokens by `key` (empty: no key) of the tenant's."""
    return UsageEvent(
        tenant_id=tenant_id,
        api_key_id=key,
        user_id="",
        model_id="m-0",
        call_kind=1,
        prompt_tokens=tokens,
        total_tokens=tokens,
        status=200,
        occurred_at=at,
    )


def _events(tenant_id: str, start: datetime, days: int, rng: random.Random, *, skew: float) -> list[UsageEvent]:
    """Calls of KEYS keys (Zipf-weighted by `skew`; 0 is even), some without a key, over `days` days."""
    keys = [f"key_rank_{i:03d}" for i in range(KEYS)]
    weights = [1 / (i + 1) ** skew for i in range(KEYS)]
    events = []
    for key in rng.choices(keys, weights, k=1500):
        tokens = rng.randrange(1, 400)
        at = start + timedelta(seconds=rng.randrange(days * 86400))
        events.append(_counted(tenant_id, key if rng.random() > 0.05 else "", tokens, at))
    return events


@pytest.mark.parametrize("skew", [1.5, 0.0])
async def test_top_keys_over_months_match_the_raw_rows(
    server: Server, connect: ConnectJsonCaller, database: Database, skew: float
) -> None:
    """Skewed, the heaviest keys of each month prove the winners; even, the read goes deeper or sums every key.
    Either way, across a year's end, the answers are the raw rows' sums."""
    world = await make_world(server, connect)
    rng = random.Random(int(skew * 10) + 7)
    start = datetime(1990 + rng.randrange(20), 11, 20, tzinfo=UTC)
    events = _events(world.tenant_id, start, 75, rng, skew=skew)  # Nov 20 to early February
    await _write(database, events)
    first, last = start + timedelta(days=4, hours=7), start + timedelta(days=71, hours=13)  # whole Dec and Jan
    within = [e for e in events if first <= e.occurred_at < last]
    expected = _ranked([e for e in within if e.api_key_id], lambda e: e.api_key_id)
    body = {"tenantId": world.tenant_id, "startTime": _ts(first), "endTime": _ts(last), "groupBy": "GROUP_BY_API_KEY"}
    for limit in (1, 3, 10, 50):
        top = must(await _call(connect, "ListTopUsage", world.tokens["admin"], **body, limit=limit))
        answered = [(r["group"]["id"], _answered(r["totals"])) for r in top["ranks"]]
        assert answered == expected[:limit], limit
        assert _answered(top["totals"]) == _totals(within)
    # A daily series ranks the range widened to whole days.
    days = [e for e in events if first - timedelta(hours=7) <= e.occurred_at < last + timedelta(hours=11)]
    widened = _ranked([e for e in days if e.api_key_id], lambda e: e.api_key_id)
    daily = must(await _call(connect, "GetUsageSeries", world.tokens["admin"], **body, bucket="BUCKET_DAY", limit=5))
    assert [s["group"].get("id", "") for s in daily["series"]] == [k for k, _ in widened[:5]] + [""]
    assert [_answered(s["totals"]) for s in daily["series"][:5]] == [t for _, t in widened[:5]]


async def test_skewed_keys_are_ranked_from_the_first_months_read(
    server: Server, connect: ConnectJsonCaller, database: Database
) -> None:
    """The threshold read is what answers a skewed month (not the sum of every key): at the first depth it proves
    the winners, and they are the raw rows' ranking."""
    world = await make_world(server, connect)
    rng = random.Random(3)
    start = datetime(1990 + rng.randrange(20), 3, 1, tzinfo=UTC)
    events = _events(world.tenant_id, start, 40, rng, skew=1.5)
    await _write(database, events)
    first, last = _epoch(start + timedelta(hours=5)), _epoch(start + timedelta(days=38))
    within = [e for e in events if first <= _epoch(e.occurred_at) < last and e.api_key_id]
    expected = [(key, totals["totalTokens"]) for key, totals in _ranked(within, lambda e: e.api_key_id)[:3]]
    store = Store(database.url)
    try:
        async with store.read() as s:
            reach = UsageReach(tenant_id=world.tenant_id, user_id=None)
            source, where = planned(reach, UsageFilter(), GroupBy.API_KEY)
            column = group_column(source, GroupBy.API_KEY)
            found = await _Heads(source, where, column=column, limit=3, span=(first, last)).deeper(s, 12)
    finally:
        await store.close()
    assert found is not None
    assert [(key, totals.total_tokens) for key, totals in found] == expected


async def test_tenants_ranked_from_key_rollups_are_summed_not_thresholded(
    server: Server, connect: ConnectJsonCaller, database: Database
) -> None:
    """Ranking tenants over named keys reads the per-key rollup, where a tenant has a month row per key: a tenant of
    many keys, each lighter than another tenant's, must still win on its sum (the threshold read would stop at the
    heavier single rows)."""
    heavy, light = (await make_world(server, connect)).tenant_id, (await make_world(server, connect)).tenant_id
    start = datetime(1990 + random.Random().randrange(20), 6, 1, tzinfo=UTC)
    keys = {light: [(f"key_few_{i}", 100) for i in range(4)], heavy: [(f"key_many_{i}", 99) for i in range(5)]}
    events = [
        _counted(tenant, key, tokens, start + timedelta(days=3))
        for tenant, owned in keys.items()
        for key, tokens in owned
    ]
    await _write(database, events)
    wanted = UsageFilter(api_key_ids=tuple(key for owned in keys.values() for key, _ in owned))
    store = Store(database.url)
    try:
        async with store.read() as s:
            source, where = planned(UsageReach(tenant_id=None), wanted, GroupBy.TENANT)
            top = await ranked(
                s,
                source,
                where,
                group=GroupBy.TENANT,
                limit=1,
                span=(_epoch(start), _epoch(start + timedelta(days=30))),
            )
    finally:
        await store.close()
    assert [(tenant, totals.total_tokens) for tenant, totals in top] == [(heavy, 495)]


async def test_the_deeper_read_goes_on_from_the_last_row_read_through_ties(
    server: Server, connect: ConnectJsonCaller, database: Database
) -> None:
    """A month whose heaviest keys tie across the first pass's depth (which of them it reads is the database's
    choice): the deeper pass reads on from there, taking the tied keys the first left (skipping them would rank a
    lighter key among the winners) and no key twice (it would read fewer new ones, and prove less)."""
    world = await make_world(server, connect)
    start = datetime(1990 + random.Random().randrange(20), 3, 1, tzinfo=UTC)
    first_depth, deeper = 4, 32
    tied = [f"key_tied_{i}" for i in range(first_depth + 1)]
    keys = [(key, 100) for key in tied] + [(f"key_light_{i:02d}", 10 + i) for i in range(deeper + 3)]
    events = [_counted(world.tenant_id, key, tokens, start + timedelta(days=2)) for key, tokens in keys]
    await _write(database, events)
    span = (_epoch(start), _epoch(datetime(start.year, 4, 1, tzinfo=UTC)))
    limit = len(tied)
    store = Store(database.url)
    try:
        async with store.read() as s:
            source, where = planned(UsageReach(tenant_id=world.tenant_id, user_id=None), UsageFilter(), GroupBy.API_KEY)
            column = group_column(source, GroupBy.API_KEY)
            heads = _Heads(source, where, column=column, limit=limit, span=span)
            assert await heads.deeper(s, first_depth) is None  # fewer keys read than wanted
            proven = await heads.deeper(s, deeper)
            read = [key for key, _ in heads._found]
            top = await ranked(s, source, where, group=GroupBy.API_KEY, limit=limit, span=span)
    finally:
        await store.close()
    assert proven is not None
    assert [(key, totals.total_tokens) for key, totals in proven] == [(key, 100) for key in tied]
    heaviest = sorted(keys, key=lambda item: -item[1])[:deeper]
    assert sorted(read) == sorted(key for key, _ in heaviest)  # the month's 32 heaviest, each once
    assert [(key, totals.total_tokens) for key, totals in top] == [(key, 100) for key in tied]
