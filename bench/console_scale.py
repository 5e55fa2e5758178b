"""The console's reads at its scale goals (issue 24), on PostgreSQL: one tenant with 100,000 API keys, 10,000
groups and 1,000,000 usage rows (seeded by tests.console_seed with COPY), read through the real management server
over Connect JSON, one request at a time (a person's page load, not throughput).

Measured, p50 and p95 of REPEATS requests each: the first and a deep page of every paged list
(switchboard.tenants.v1.TenantListService), every usage aggregate the console draws (switchboard.usage.v1) over
the seeded 30 days, and two baselines from the same run: the no-op (grpc.health.v1.Health/Check, served by the
same process without authentication) and the same month summed from the raw rows (the platform's usage series
by model, which reads usage_events: what a console without rollups would do). Goals: a page well under 100 ms,
an aggregate at most 200 ms.

SQLite is not measured: the scale goals are for PostgreSQL, and tests/test_usage_service.py checks SQLite's
answers. Set CONSOLE_SCALE_USAGE_ROWS (default 1,000,000) for a quicker, smaller run.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

import aiohttp

from bench._backends import backends, using
from bench.common import running_server
from server.domain.pages import token_after
from server.tokens import PLATFORM_ROLES, mint_token
from tests.console_seed import Seeded, seed_tenant
from tests.pg_urls import libpq_url

REPEATS = 20
WARMUP = 3
PAGE_GOAL_MS = 100
AGGREGATE_GOAL_MS = 200
USAGE = "switchboard.usage.v1.UsageService"
PAGES = "switchboard.tenants.v1.TenantListService"


def _ts(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


async def _timed(call: Callable[[], Awaitable[None]]) -> list[float]:
    for _ in range(WARMUP):
        await call()
    out = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        await call()
        out.append((time.perf_counter() - start) * 1000)
    return out


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _seed(url: str) -> Seeded:
    rows = int(os.environ.get("CONSOLE_SCALE_USAGE_ROWS", "1000000"))
    started = time.perf_counter()
    seeded = seed_tenant(libpq_url(url), usage_rows=rows)
    import psycopg

    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")  # what autovacuum does soon after a bulk load; plans depend on it
    counts = ", ".join(f"{k} {v:,}" for k, v in seeded.counts.items())
    print(f"seeded in {time.perf_counter() - started:.0f} s (VACUUM ANALYZE included): {counts}")
    return seeded


async def _measure(base_url: str, settings: Any, seeded: Seeded) -> None:
    admin = mint_token(settings, user_id=seeded.admin_user_id)
    operator = mint_token(settings, user_id="bench-operator", roles=PLATFORM_ROLES)
    member = mint_token(settings, user_id=seeded.member_user_ids[0])
    tenant = seeded.tenant_id
    month = {"startTime": _ts(seeded.start), "endTime": _ts(seeded.end)}
    deep_key = seeded.api_key_ids[90_000]
    created = seeded.start - timedelta(days=1) + timedelta(seconds=90_000)
    deep = {
        "ListApiKeys": token_after("api_keys", created.isoformat(), deep_key),
        "ListGroups": token_after("groups", "group-09000"),
        "ListGroupMembers": token_after("group_members", sorted(seeded.member_user_ids)[1800]),
        "ListTenantMembers": token_after("tenant_members", "members", sorted(seeded.member_user_ids)[1800]),
        "ListServiceAccounts": token_after("service_accounts", "service-00450"),
    }
    cases: list[tuple[str, str, dict[str, Any], str, str]] = []  # label, path, body, token, kind
    for method, deep_token in deep.items():
        body: dict[str, Any] = {"tenantId": tenant}
        if method == "ListGroupMembers":
            body["groupId"] = seeded.big_group_id
        for where, token in (("first", ""), ("deep", deep_token)):
            page = {"pageSize": 50, "pageToken": token}
            cases.append((f"{method} {where} page", f"{PAGES}/{method}", {**body, "page": page}, admin, "page"))
    hourly = {"tenantId": tenant, **month, "bucket": "BUCKET_HOUR"}
    daily = {"tenantId": tenant, **month, "bucket": "BUCKET_DAY"}
    aggregates = [
        ("series, hourly", hourly, admin),
        ("series by model, hourly", {**hourly, "groupBy": "GROUP_BY_MODEL"}, admin),
        ("series by call kind, daily", {**daily, "groupBy": "GROUP_BY_CALL_KIND"}, admin),
        ("series by key (top 10), hourly", {**hourly, "groupBy": "GROUP_BY_API_KEY"}, admin),
        ("series by key (top 10), daily", {**daily, "groupBy": "GROUP_BY_API_KEY"}, admin),
        (
            "operator: series by tenant, daily",
            {**month, "bucket": "BUCKET_DAY", "groupBy": "GROUP_BY_TENANT"},
            operator,
        ),
        ("member: own series by call kind, hourly", {**hourly, "groupBy": "GROUP_BY_CALL_KIND"}, member),
        ("member: own series by model, daily (raw rows)", {**daily, "groupBy": "GROUP_BY_MODEL"}, member),
    ]
    for label, body, token in aggregates:
        cases.append((label, f"{USAGE}/GetUsageSeries", body, token, "aggregate"))
    for label, group in (("top 10 keys", "GROUP_BY_API_KEY"), ("top 10 models", "GROUP_BY_MODEL")):
        body = {"tenantId": tenant, **month, "groupBy": group}
        cases.append((label, f"{USAGE}/ListTopUsage", body, admin, "aggregate"))
    raw = {
        "window": month,
        "step": "3600s",
        "groupBy": "TOKEN_USAGE_GROUP_BY_MODEL",
        "tenantIds": [tenant],
    }
    async with aiohttp.ClientSession() as http:

        def call(path: str, body: dict[str, Any], token: str) -> Callable[[], Awaitable[None]]:
            data = json.dumps(body)
            headers = {"Content-Type": "application/json"} | ({"Authorization": f"Bearer {token}"} if token else {})

            async def one() -> None:
                async with http.post(f"{base_url}/{path}", data=data, headers=headers) as resp:
                    text = await resp.text()
                    assert resp.status == 200, f"{path}: {resp.status} {text[:300]}"

            return one

        noop = await _timed(call("grpc.health.v1.Health/Check", {}, ""))
        baseline = statistics.median(noop)
        raw_month = await _timed(
            call("platform.metering.v1.PlatformUsageService/GetPlatformTokenUsageSeries", raw, operator)
        )
        print(f"{'case':<50} {'p50 ms':>8} {'p95 ms':>8} {'p50/no-op':>10} {'goal':>8}")
        print(f"{'no-op (Health/Check)':<50} {_p(noop, 0.5):>8.1f} {_p(noop, 0.95):>8.1f} {1:>9.1f}x")
        rows = [("raw rows: month by model, hourly (platform usage)", raw_month, "")]
        for label, path, body, token, kind in cases:
            goal = f"<{PAGE_GOAL_MS}" if kind == "page" else f"<={AGGREGATE_GOAL_MS}"
            rows.append((label, await _timed(call(path, body, token)), goal))
        for label, values, goal in rows:
            p50, p95 = _p(values, 0.5), _p(values, 0.95)
            limit = PAGE_GOAL_MS if goal.startswith("<1") else AGGREGATE_GOAL_MS
            verdict = "" if not goal else ("ok" if p95 <= limit else "MISSED")
            print(f"{label:<50} {p50:>8.1f} {p95:>8.1f} {p50 / baseline:>9.1f}x {goal:>5} {verdict}")
        rollup_month = next(v for label, v, _ in rows if label == "series by model, hourly")
        print(
            f"the same month by model from the rollups vs the raw rows: "
            f"{statistics.median(raw_month) / statistics.median(rollup_month):.0f}x faster"
        )


async def main() -> None:
    if "postgresql" not in backends() and "given" not in backends():
        print("console_scale needs PostgreSQL (SWITCHBOARD_BENCH_PG_URL); skipped")
        return
    backend = "given" if "given" in backends() else "postgresql"
    with using(backend):
        async with running_server() as (base_url, _port, settings):
            seeded = _seed(settings.database_url)
            await _measure(base_url, settings, seeded)
