"""The meter's batched writes: every usage event of a batch larger than one statement lands once, every field exact
(times to the microsecond, zero-padded ones included); traffic lands as exact per-second counts."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta

from sqlalchemy import select

from server.metering import Meter, UsageEvent, _statement_rows
from server.store.db import Database as Db
from server.store.models import ApiTrafficRow, UsageEventRow
from tests.conftest import Database

EVENTS = 2_550  # more than two batches (1,000 events) and many SQLite statements (100 rows), multiples of neither


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


async def test_a_large_batch_lands_whole_and_exact(database: Database) -> None:
    db = Db(database.url)
    meter = Meter(db)
    meter.start()
    start = datetime(2026, 3, 1, 12, 0, 0, 5, tzinfo=UTC)
    tenant = f"meter-batch-{database.backend}"
    for i in range(EVENTS):
        meter.usage(
            UsageEvent(
                tenant_id=tenant,
                api_key_id=f"key-{i}",
                user_id="u'\"ü",  # quotes and non-ASCII survive
                model_id="m",
                call_kind=1,
                target_kind=2,
                target_name="t",
                prompt_tokens=i,
                completion_tokens=2 * i,
                total_tokens=3 * i,
                status=i % 3,
                latency_ms=i + 0.25,
                request_bytes=10**12 + i,  # beyond 32 bits
                response_bytes=i,
                occurred_at=start + timedelta(seconds=i, microseconds=397 * i),
            )
        )
        # three requests a second: 200, 201, 200, then 201, 200, 201, ...
        meter.traffic(f"svc-{tenant}", 200 + i % 2, i, 2 * i, at=start + timedelta(seconds=i // 3))
    await meter.close()
    try:
        async with db.read() as session:
            usage = list(
                await session.scalars(
                    select(UsageEventRow).where(UsageEventRow.tenant_id == tenant).order_by(UsageEventRow.id)
                )
            )
            traffic = list(
                await session.scalars(
                    select(ApiTrafficRow).where(ApiTrafficRow.service == f"svc-{tenant}").order_by(ApiTrafficRow.id)
                )
            )
    finally:
        await db.close()
    assert [(r.api_key_id, r.prompt_tokens, r.completion_tokens, r.total_tokens) for r in usage] == [
        (f"key-{i}", i, 2 * i, 3 * i) for i in range(EVENTS)
    ]
    assert all(r.user_id == "u'\"ü" and r.target_kind == 2 and r.call_kind == 1 for r in usage)
    assert [(r.status, r.latency_ms, r.request_bytes) for r in usage] == [
        (i % 3, i + 0.25, 10**12 + i) for i in range(EVENTS)
    ]
    assert [_utc(r.occurred_at) for r in usage] == [
        start + timedelta(seconds=i, microseconds=397 * i) for i in range(EVENTS)
    ]
    expected: dict[tuple[datetime, int], list[int]] = {}
    for i in range(EVENTS):
        second = (start + timedelta(seconds=i // 3)).replace(microsecond=0)
        counts = expected.setdefault((second, 200 + i % 2), [0, 0, 0])
        counts[0] += 1
        counts[1] += i
        counts[2] += 2 * i
    found = {(_utc(r.occurred_at), r.status): [r.requests, r.request_bytes, r.response_bytes] for r in traffic}
    assert len(traffic) == len(found)  # one row per second and status: the whole batch went in one flush
    assert found == expected


async def test_a_batch_holding_nul_lands_whole(database: Database) -> None:
    """An MCP server may name a tool with NUL, which PostgreSQL's text cannot hold (nor `->>` make text of): the
    whole batch was refused, every call of it unmetered, and again at each replay of the journal. It is stored with
    U+FFFD there; SQLite holds NUL."""
    db = Db(database.url)
    meter = Meter(db)
    meter.start()
    tenant = f"meter-nul-{database.backend}-{secrets.token_hex(3)}"
    meter.usage(UsageEvent(tenant_id=tenant, api_key_id="k", user_id="u", model_id="to\x00ol", call_kind=6))
    meter.usage(UsageEvent(tenant_id=tenant, api_key_id="k", user_id="u", model_id="m", call_kind=1))
    await meter.close()
    try:
        async with db.read() as session:
            stored = set(await session.scalars(select(UsageEventRow.model_id).where(UsageEventRow.tenant_id == tenant)))
    finally:
        await db.close()
    assert stored == {"to\ufffdol" if database.backend == "postgresql" else "to\x00ol", "m"}


def test_sqlite_batches_are_written_in_a_few_statement_shapes() -> None:
    """Any number of rows goes out in statements of 100 rows or a power of two below it: 8 shapes per table, which
    the driver's statement cache (128) keeps parsed, where a remainder of any size was a statement to parse again."""
    shapes = set()
    for rows in range(1, 1001):
        left = rows
        while left:
            size = _statement_rows(left)
            assert 1 <= size <= left
            shapes.add(size)
            left -= size
    assert shapes == {100, 64, 32, 16, 8, 4, 2, 1}
