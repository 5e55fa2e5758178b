"""switchboard.usage.v1.UsageService: the console's usage aggregates, on SQLite and PostgreSQL.

Correctness: usage rows are written through the gateway's own meter (server.metering.Meter, the path that writes
them in production; the rollup is kept by the database's triggers) at random times, keys, models, kinds and
statuses, and every answer is compared with the same sums computed here from the rows written. Each test reads a
private stretch of time (a random month in 1990-2009) so tests never see each other's rows.

Gates: operators read any tenant and every tenant; tenant admins their tenant; members their own calls; people
outside the tenant and API keys nothing.
"""

from __future__ import annotations

import random
import secrets
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, select

from server.metering import CallKind, Meter, UsageEvent
from server.store.db import Database as Store
from server.store.models import (
    USAGE_MONTH_GRAIN,
    UsageApiKeyRollupRow,
    UsageEventRow,
    UsageKeyRollupRow,
    UsageModelCallRollupRow,
    UsageModelRollupRow,
    UsageTenantRollupRow,
)
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database, Server
from tests.world import World, make_world, must

USAGE = "switchboard.usage.v1.UsageService"
KEYS = "platform.tenants.v1.ApiKeyService"
MODEL_KINDS = {1, 2, 3, 4, 5}


@dataclass
class Usage:
    """The world, its keys (id -> (display name, owner)) and the rows written, in a month of this test's own."""

    world: World
    start: datetime
    keys: dict[str, tuple[str, str]]
    events: list[UsageEvent]


def _month() -> datetime:
    return datetime(1990, 1, 1, tzinfo=UTC) + timedelta(days=31 * random.randrange(240))


def _ts(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def _write(database: Database, events: Iterable[UsageEvent]) -> None:
    store = Store(database.url)
    meter = Meter(store)
    meter.start()
    for event in events:
        meter.usage(event)
    await meter.close()
    await store.close()


@pytest.fixture
async def usage(server: Server, connect: ConnectJsonCaller, database: Database) -> Usage:
    world = await make_world(server, connect)
    keys: dict[str, tuple[str, str]] = {}
    for person in ("admin", "admin", "member", "member", "editor"):
        body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": f"k-{secrets.token_hex(3)}"}
        key = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens[person]))["apiKey"]
        keys[key["id"]] = (f"{key['name']} ({key['prefix']})", world.user_ids[person])
    start = _month()
    rng = random.Random(start.toordinal())
    events = []
    for _ in range(600):
        key_id, (_, owner) = rng.choice(list(keys.items()))
        kind = rng.choice(list(CallKind))
        model = f"m-{rng.randrange(4)}" if kind in MODEL_KINDS else ""
        prompt, completion = rng.randrange(100), rng.randrange(50)
        events.append(
            UsageEvent(
                tenant_id=world.tenant_id,
                api_key_id=key_id if rng.random() > 0.1 else "",  # some calls made with a session
                user_id=owner,
                model_id=model,
                call_kind=int(kind),
                prompt_tokens=prompt,
                completion_tokens=completion,
                embedding_tokens=3 if kind == CallKind.EMBEDDING else 0,
                total_tokens=prompt + completion,
                status=rng.choice([200, 200, 200, 429, 500]),
                occurred_at=start + timedelta(seconds=rng.randrange(3 * 86400)),
            )
        )
    # The other tenant's calls in the same hours: never counted in this tenant's answers.
    events += [
        UsageEvent(world.other_tenant_id, "", world.user_ids["outsider"], "m-0", 1, prompt_tokens=1000,
                   total_tokens=1000, occurred_at=start + timedelta(hours=h))
        for h in range(0, 72, 5)
    ]  # fmt: skip
    await _write(database, events)
    return Usage(world, start, keys, events)


def _totals(events: Iterable[UsageEvent]) -> dict[str, int]:
    out = {"requests": 0, "errors": 0, "inputTokens": 0, "outputTokens": 0, "totalTokens": 0}
    for e in events:
        out["requests"] += 1
        out["errors"] += e.status >= 400
        out["inputTokens"] += e.prompt_tokens + e.embedding_tokens + e.rerank_tokens
        out["outputTokens"] += e.completion_tokens
        out["totalTokens"] += e.total_tokens
    return out


def _answered(totals: dict[str, Any]) -> dict[str, int]:
    names = ("requests", "errors", "inputTokens", "outputTokens", "totalTokens")
    return {name: int(totals.get(name, 0)) for name in names}


def _within(events: Iterable[UsageEvent], start: datetime, end: datetime, **where: Any) -> list[UsageEvent]:
    return [e for e in events if start <= e.occurred_at < end and all(getattr(e, k) == v for k, v in where.items())]


def _ranked(events: list[UsageEvent], key: Callable[[UsageEvent], str]) -> list[tuple[str, dict[str, int]]]:
    groups: dict[str, list[UsageEvent]] = defaultdict(list)
    for e in events:
        groups[key(e)].append(e)
    sums = [(name, _totals(group)) for name, group in groups.items()]
    return sorted(sums, key=lambda item: (-item[1]["totalTokens"], -item[1]["requests"], item[0]))


async def _call(connect: ConnectJsonCaller, method: str, token: str, **body: Any) -> Result:
    return await connect.call(f"{USAGE}/{method}", body, token=token, get=True)


async def test_hourly_series_by_api_key_match_the_raw_rows(connect: ConnectJsonCaller, usage: Usage) -> None:
    world, start = usage.world, usage.start
    # A ragged range: rounded outward to whole hours.
    body = {
        "tenantId": world.tenant_id,
        "startTime": _ts(start + timedelta(minutes=10)),
        "endTime": _ts(start + timedelta(hours=30, minutes=5)),
        "bucket": "BUCKET_HOUR",
        "groupBy": "GROUP_BY_API_KEY",
        "limit": 2,
    }
    answer = must(await _call(connect, "GetUsageSeries", world.tokens["admin"], **body))
    end = start + timedelta(hours=31)
    assert (answer["startTime"], answer["endTime"]) == (_ts(start), _ts(end))
    starts = [start + timedelta(hours=h) for h in range(31)]
    assert answer["bucketStarts"] == [_ts(t) for t in starts]
    events = [e for e in _within(usage.events, start, end, tenant_id=world.tenant_id) if e.api_key_id]
    ranked = _ranked(events, lambda e: e.api_key_id)
    assert len(ranked) == 5
    series = answer["series"]
    assert [s["group"].get("id", "") for s in series] == [ranked[0][0], ranked[1][0], ""]
    assert series[2]["group"]["other"] is True
    for one, (key_id, totals) in zip(series[:2], ranked[:2], strict=True):
        assert one["group"].get("displayName") == usage.keys[key_id][0], one["group"]
        assert one["group"]["tenantId"] == world.tenant_id
        assert _answered(one["totals"]) == totals
        hourly = [_totals(_within(events, t, t + timedelta(hours=1), api_key_id=key_id)) for t in starts]
        assert [int(v) for v in one["totalTokens"]] == [h["totalTokens"] for h in hourly]
        assert [int(v) for v in one["requests"]] == [h["requests"] for h in hourly]
    # `other` is every other call: other keys' and calls made without a key; the stack adds up to the total.
    every = _within(usage.events, start, end, tenant_id=world.tenant_id)
    rest = [e for e in every if e.api_key_id not in {ranked[0][0], ranked[1][0]}]
    assert [int(v) for v in series[2]["inputTokens"]] == [
        _totals(_within(rest, t, t + timedelta(hours=1)))["inputTokens"] for t in starts
    ]
    assert _answered(answer["totals"]) == _totals(every)


async def test_daily_series_by_call_kind_and_by_model(connect: ConnectJsonCaller, usage: Usage) -> None:
    world, start = usage.world, usage.start
    end = start + timedelta(days=3)
    base = {"tenantId": world.tenant_id, "startTime": _ts(start), "endTime": _ts(end), "bucket": "BUCKET_DAY"}
    events = _within(usage.events, start, end, tenant_id=world.tenant_id)
    days = [start + timedelta(days=d) for d in range(3)]

    by_kind = must(await _call(connect, "GetUsageSeries", world.tokens["admin"], **base, groupBy="GROUP_BY_CALL_KIND"))
    expected = _ranked(events, lambda e: CallKind(e.call_kind).name.lower())
    assert [(s["group"]["id"], _answered(s["totals"])) for s in by_kind["series"]] == expected
    for one in by_kind["series"]:
        kind = CallKind[one["group"]["id"].upper()]
        daily = [_totals(_within(events, d, d + timedelta(days=1), call_kind=int(kind))) for d in days]
        assert [int(v) for v in one["errors"]] == [d["errors"] for d in daily]

    by_model = must(
        await _call(connect, "GetUsageSeries", world.tokens["admin"], **base, groupBy="GROUP_BY_MODEL", limit=50)
    )
    model_calls = [e for e in events if e.call_kind in MODEL_KINDS and e.model_id]
    *models, other = by_model["series"]
    assert [(s["group"]["id"], _answered(s["totals"])) for s in models] == _ranked(model_calls, lambda e: e.model_id)
    assert other["group"] == {"other": True}  # MCP tool calls and RAG retrievals
    assert _answered(other["totals"]) == _totals(e for e in events if e.call_kind not in MODEL_KINDS)
    # Ungrouped, zero-filled: a day without calls is a point of zeros.
    later = {**base, "startTime": _ts(start + timedelta(days=2)), "endTime": _ts(start + timedelta(days=5))}
    one = must(await _call(connect, "GetUsageSeries", world.tokens["admin"], **later))["series"]
    assert len(one) == 1 and [int(v) for v in one[0]["requests"]][1:] == [0, 0]


async def test_top_lists_mix_day_and_hour_rollups_exactly(connect: ConnectJsonCaller, usage: Usage) -> None:
    world, start = usage.world, usage.start
    # From 05:00 on day 0 to 19:00 on day 2: hour rows at both ends, a day row in the middle.
    first, last = start + timedelta(hours=5), start + timedelta(days=2, hours=19)
    events = _within(usage.events, first, last, tenant_id=world.tenant_id)
    body = {"tenantId": world.tenant_id, "startTime": _ts(first), "endTime": _ts(last)}
    keys = must(await _call(connect, "ListTopUsage", world.tokens["admin"], **body, groupBy="GROUP_BY_API_KEY"))
    expected = _ranked([e for e in events if e.api_key_id], lambda e: e.api_key_id)
    assert [(r["group"]["id"], _answered(r["totals"])) for r in keys["ranks"]] == expected
    assert [r["group"]["displayName"] for r in keys["ranks"]] == [usage.keys[k][0] for k, _ in expected]
    # Totals count every call, in a group or not (calls made with a session have no key, so no group).
    assert _answered(keys["totals"]) == _totals(events)
    top2 = must(await _call(connect, "ListTopUsage", world.tokens["admin"], **body, groupBy="GROUP_BY_MODEL", limit=2))
    model_calls = [e for e in events if e.call_kind in MODEL_KINDS and e.model_id]
    assert [(r["group"]["id"], _answered(r["totals"])) for r in top2["ranks"]] == _ranked(
        model_calls, lambda e: e.model_id
    )[:2]
    kinds = {"filter": {"callKinds": ["CALL_KIND_EMBEDDING"]}}
    embeddings = must(
        await _call(connect, "ListTopUsage", world.tokens["admin"], **body, groupBy="GROUP_BY_MODEL", **kinds)
    )
    assert _answered(embeddings["totals"]) == _totals(e for e in events if e.call_kind == CallKind.EMBEDDING)
    chat_keys = must(
        await _call(connect, "ListTopUsage", world.tokens["admin"], **body, groupBy="GROUP_BY_API_KEY", **{
            "filter": {"callKinds": ["CALL_KIND_CHAT_COMPLETION", "CALL_KIND_RESPONSE"]}})
    )  # fmt: skip
    chats = [e for e in events if e.api_key_id and e.call_kind in (1, 2)]
    assert [(r["group"]["id"], _answered(r["totals"])) for r in chat_keys["ranks"]] == _ranked(
        chats, lambda e: e.api_key_id
    )


async def test_rollups_follow_deleted_and_updated_raw_rows(
    connect: ConnectJsonCaller, usage: Usage, database: Database
) -> None:
    world, start = usage.world, usage.start
    end = start + timedelta(days=3)
    store = Store(database.url)
    try:
        async with store.transaction() as s:
            await s.execute(
                delete(UsageEventRow).where(
                    UsageEventRow.tenant_id == world.tenant_id,
                    UsageEventRow.occurred_at < start + timedelta(days=1),
                    UsageEventRow.status == 500,
                )
            )
        async with store.read() as s:

            async def raw(*where: Any) -> tuple[int, int]:
                found = (
                    await s.execute(
                        select(func.count(), func.coalesce(func.sum(UsageEventRow.total_tokens), 0)).where(
                            UsageEventRow.tenant_id == world.tenant_id, *where
                        )
                    )
                ).one()
                return int(found[0]), int(found[1])

            every = await raw()
            # usage_model_call_rollups counts only the calls grouped by model: model calls that named a model.
            model_calls = await raw(UsageEventRow.call_kind.in_(MODEL_KINDS), UsageEventRow.model_id != "")
            hour_day = (3600, 86400)
            for table, grains, expected in (
                (UsageTenantRollupRow, hour_day, every),
                (UsageModelRollupRow, hour_day, every),
                (UsageKeyRollupRow, hour_day, every),
                (UsageApiKeyRollupRow, (*hour_day, USAGE_MONTH_GRAIN), every),
                (UsageModelCallRollupRow, hour_day, model_calls),
            ):
                for grain in grains:
                    rolled = (
                        await s.execute(
                            select(func.sum(table.requests), func.sum(table.total_tokens)).where(
                                table.tenant_id == world.tenant_id, table.grain == grain
                            )
                        )
                    ).one()
                    assert tuple(int(v) for v in rolled) == expected, (table, grain)
    finally:
        await store.close()
    kept = [
        e
        for e in _within(usage.events, start, end, tenant_id=world.tenant_id)
        if not (e.status == 500 and e.occurred_at < start + timedelta(days=1))
    ]
    body = {"tenantId": world.tenant_id, "startTime": _ts(start), "endTime": _ts(end), "bucket": "BUCKET_DAY"}
    answer = must(await _call(connect, "GetUsageSeries", world.tokens["admin"], **body))
    assert _answered(answer["totals"]) == _totals(kept)


async def test_who_reads_what(server: Server, connect: ConnectJsonCaller, usage: Usage) -> None:
    world, start = usage.world, usage.start
    window = {"startTime": _ts(start), "endTime": _ts(start + timedelta(days=3))}
    own = {"tenantId": world.tenant_id, **window}
    events = _within(usage.events, start, start + timedelta(days=3))
    mine = [e for e in events if e.tenant_id == world.tenant_id]

    # Operators: one tenant, or every tenant grouped by tenant (names resolved).
    every_kind = {"groupBy": "GROUP_BY_CALL_KIND"}  # a grouping every call is in
    assert _answered(must(await _call(connect, "ListTopUsage", server.admin_token, **own, **every_kind))[
        "totals"]) == _totals(mine)  # fmt: skip
    tenants = must(await _call(connect, "ListTopUsage", server.admin_token, **window, groupBy="GROUP_BY_TENANT",
                               limit=100))["ranks"]  # fmt: skip
    found = {r["group"]["id"]: _answered(r["totals"]) for r in tenants}
    assert found[world.tenant_id] == _totals(mine)
    assert found[world.other_tenant_id] == _totals(e for e in events if e.tenant_id == world.other_tenant_id)
    assert all(r["group"]["displayName"] for r in tenants)
    # Per tenant in days, each tenant's day is one rollup row: read as it is, summed the same.
    by_tenant = {"groupBy": "GROUP_BY_TENANT", "bucket": "BUCKET_DAY", "limit": 50}
    days = must(await _call(connect, "GetUsageSeries", server.admin_token, **window, **by_tenant))["series"]
    per_day = {s["group"].get("id", ""): [int(v) for v in s["requests"]] for s in days}
    starts = [start + timedelta(days=d) for d in range(3)]
    assert per_day[world.tenant_id] == [len(_within(mine, d, d + timedelta(days=1))) for d in starts]

    # Tenant admins: their tenant; not another, and not every tenant.
    admin = world.tokens["admin"]
    assert _answered(must(await _call(connect, "GetUsageSeries", admin, **own, bucket="BUCKET_DAY"))["totals"]) == (
        _totals(mine)
    )
    other = await _call(connect, "GetUsageSeries", admin, **window, tenantId=world.other_tenant_id)
    assert other.code == "permission_denied"
    assert (await _call(connect, "GetUsageSeries", admin, **window)).code == "invalid_argument"  # needs a tenant

    # Members: their own calls only, whatever they filter on.
    for person in ("member", "editor"):
        who = world.user_ids[person]
        answer = must(await _call(connect, "ListTopUsage", world.tokens[person], **own, **every_kind))
        assert _answered(answer["totals"]) == _totals(e for e in mine if e.user_id == who)
        keys = must(await _call(connect, "ListTopUsage", world.tokens[person], **own, groupBy="GROUP_BY_API_KEY"))
        assert {r["group"]["id"] for r in keys["ranks"]} == {k for k, v in usage.keys.items() if v[1] == who}
    # A member's calls per model: no rollup holds user and model together, so the raw rows answer (same sums).
    who = world.user_ids["member"]
    per_model = must(await _call(connect, "ListTopUsage", world.tokens["member"], **own, groupBy="GROUP_BY_MODEL"))
    expected = _ranked([e for e in mine if e.user_id == who and e.call_kind in MODEL_KINDS], lambda e: e.model_id)
    assert [(r["group"]["id"], _answered(r["totals"])) for r in per_model["ranks"]] == expected[:10]
    series = must(await _call(connect, "GetUsageSeries", world.tokens["member"], **own, groupBy="GROUP_BY_MODEL"))
    assert [s["group"].get("id", "") for s in series["series"]] == [m for m, _ in expected] + [""]  # MCP, RAG
    admins_key = next(k for k, v in usage.keys.items() if v[1] == world.user_ids["admin"])
    probe = must(
        await _call(connect, "GetUsageSeries", world.tokens["member"], **own, filter={"apiKeyIds": [admins_key]})
    )
    assert _answered(probe["totals"]) == _totals([])

    # Outsiders and keys: nothing.
    outsider = await _call(connect, "GetUsageSeries", world.tokens["outsider"], **own)
    assert outsider.code == "permission_denied"
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "reader"}
    secret = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=admin))["secret"]
    assert (await _call(connect, "ListTopUsage", secret, **own, groupBy="GROUP_BY_MODEL")).code == "permission_denied"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endTime": "1990-02-02T01:00:00Z", "bucket": "BUCKET_HOUR"}, "end_time"),  # 32 days of hours
        ({"startTime": "1990-01-02T00:00:00Z", "endTime": "1990-01-01T00:00:00Z"}, "start_time"),
        ({"endTime": None}, "endTime"),
        ({"limit": 51, "groupBy": "GROUP_BY_MODEL"}, "limit"),
        ({"limit": -1, "groupBy": "GROUP_BY_MODEL"}, "limit"),
        ({"filter": {"callKinds": [99]}}, "callKinds"),  # refused by the decoder
        ({"filter": {"callKinds": ["CALL_KIND_UNSPECIFIED"]}}, "call_kinds"),
    ],
)
async def test_bad_requests_name_their_field(
    server: Server, connect: ConnectJsonCaller, change: dict[str, Any], field: str
) -> None:
    body: dict[str, Any] = {"startTime": "1990-01-01T00:00:00Z", "endTime": "1990-01-02T00:00:00Z", **change}
    body = {k: v for k, v in body.items() if v is not None}
    result = await _call(connect, "GetUsageSeries", server.admin_token, **body)
    assert result.code == "invalid_argument" and field in result.message, result


async def test_a_two_year_range_answers_in_days_and_top_lists_need_a_grouping(
    server: Server, connect: ConnectJsonCaller
) -> None:
    window = {"startTime": "1990-01-01T00:00:00Z", "endTime": "1992-01-02T00:00:00Z"}
    days = must(await _call(connect, "GetUsageSeries", server.admin_token, **window, bucket="BUCKET_DAY"))
    assert len(days["bucketStarts"]) == 731 and len(days["series"][0]["requests"]) == 731
    assert (await _call(connect, "ListTopUsage", server.admin_token, **window)).code == "invalid_argument"
    too_long = {"startTime": "1990-01-01T00:00:00Z", "endTime": "1993-01-01T00:00:00Z"}
    refused = await _call(connect, "ListTopUsage", server.admin_token, **too_long, groupBy="GROUP_BY_MODEL")
    assert refused.code == "invalid_argument" and "732 days" in refused.message


async def test_an_end_time_a_fraction_of_a_second_into_a_bucket_takes_that_bucket(
    server: Server, connect: ConnectJsonCaller, database: Database
) -> None:
    """endTime is rounded up to its bucket: its fraction of a second was dropped first, so a range ending 0.5 s into
    an hour ended before it, and a call in that half second was in no answer (found by probing)."""
    world = await make_world(server, connect)
    start = _month()
    at = start + timedelta(hours=1, milliseconds=100)
    event = UsageEvent(world.tenant_id, "", "u", "m", 1, prompt_tokens=7, total_tokens=7, status=200, occurred_at=at)
    await _write(database, [event])
    body = {"tenantId": world.tenant_id, "startTime": _ts(start), "endTime": _ts(at + timedelta(milliseconds=400))}
    series = must(await _call(connect, "GetUsageSeries", server.admin_token, **body, bucket="BUCKET_HOUR"))
    assert series["endTime"] == _ts(start + timedelta(hours=2)), series
    assert int(series["totals"].get("totalTokens", 0)) == 7, series
    top = must(await _call(connect, "ListTopUsage", server.admin_token, **body, groupBy="GROUP_BY_MODEL"))
    assert int(top["totals"].get("totalTokens", 0)) == 7, top


_WINDOW = {"startTime": "2001-01-01T00:00:00Z", "endTime": "2001-01-01T01:00:00Z"}


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        (
            "platform.metering.v1.PlatformUsageService/ListPlatformTokenUsage",
            {"window": _WINDOW, "tenantIds": ["t"] * 1001},
            "tenant_ids",
        ),
        (
            "switchboard.usage.v1.UsageService/GetUsageSeries",
            {**_WINDOW, "filter": {"apiKeyIds": ["k"] * 1001}},
            "filter.api_key_ids",
        ),
    ],
    ids=["platform-usage-tenants", "usage-series-keys"],
)
async def test_usage_filters_are_bounded_before_the_database(
    server: Server, connect: ConnectJsonCaller, method: str, body: dict[str, Any], field: str
) -> None:
    """Each id a usage read filters by is a bind parameter: 70,000 answered 503 "retry" on PostgreSQL, 260,000 an
    internal error on SQLite. A list is bounded (1,000) and refused naming its field."""
    result = await connect.call(method, body, token=server.admin_token)
    assert result.code == "invalid_argument" and field in result.message, result
