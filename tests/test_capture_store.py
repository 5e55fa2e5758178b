"""Content capture below the gateway, on both databases: which scopes cover a caller, bodies cut at the bound, bodies
sealed in groups (one tenant's each, bounded in size, every exchange opening to its own), the meter writing
exchanges sealed with their usage rows, exchanges written before groups still opening, the retention sweeper, and a
deleted tenant's exchanges."""

from __future__ import annotations

import base64
import secrets
import struct
import time
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import zstandard
from cryptography.exceptions import InvalidTag
from sqlalchemy import select

from server.audit.retention import Retention
from server.capture.exchange import Exchange, ScopeKind, covers
from server.capture.store import (
    BODIES_SHAPE,
    EXCHANGE_SHAPE,
    GROUP_BYTES,
    open_exchange,
    open_member,
    prune_exchanges,
    seal_exchanges,
)
from server.crypto import SecretBox
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.errors import NotFound
from server.metering import Meter, UsageEvent
from server.settings import load_settings
from server.store.db import Database as Db
from server.store.models import CapturedBodiesRow, CapturedExchangeRow, UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, insert_rows
from tests.world import must

TENANTS = "platform.tenants.v1.TenantService"


def _key(service_account: str | None = None) -> Principal:
    key = ApiKeyIdentity("key_a", "ten_a", ApiKeyType.SERVICE_ACCOUNT, None, service_account)
    return Principal(user_id=None, scoped_tenant_id="ten_a", api_key=key)


def test_the_widest_scope_that_is_on_covers_a_key() -> None:
    assert not covers(frozenset(), _key("sa_1"))
    assert covers(frozenset({(ScopeKind.TENANT, "ten_a")}), _key())
    assert not covers(frozenset({(ScopeKind.TENANT, "ten_b")}), _key())
    assert covers(frozenset({(ScopeKind.SERVICE_ACCOUNT, "sa_1")}), _key("sa_1"))
    assert not covers(frozenset({(ScopeKind.SERVICE_ACCOUNT, "sa_1")}), _key("sa_2"))
    assert not covers(frozenset({(ScopeKind.SERVICE_ACCOUNT, "sa_1")}), _key())
    assert covers(frozenset({(ScopeKind.API_KEY, "key_a")}), _key())
    session = Principal(user_id="u", scoped_tenant_id="ten_a")
    assert covers(frozenset({(ScopeKind.TENANT, "ten_a")}), session)


def test_bodies_are_kept_up_to_the_bound_and_marked_when_cut() -> None:
    exchange = Exchange(limit=10)
    exchange.request(b"0123456789")
    for chunk in (b"data: ", b"abcdef", b"ghij"):
        exchange.response(chunk)
    assert (exchange.request_body, exchange.request_size) == (b"0123456789", 10)
    assert (exchange.response_body, exchange.response_size) == (b"data: abcd", 16)
    exchange.request(b"0123456789ab")
    assert (exchange.request_body, exchange.request_size) == (b"0123456789", 12)
    exchange.closed = True  # handed to the meter: later writes are not kept
    exchange.response(b"more")
    assert exchange.response_size == 16
    assert "abcd" not in repr(exchange)
    exchange.usage, exchange.occurred_at = ("t", "k", "", "u", "m", 1, 200), datetime.now(UTC)
    sealed = seal_exchanges([exchange], lambda plain: plain.hex())
    row = dict(zip(EXCHANGE_SHAPE, sealed.exchanges[0], strict=True))
    assert (row["request_truncated"], row["response_truncated"]) == (True, True)
    assert (row["request_bytes"], row["response_bytes"]) == (12, 16)
    (group,) = (dict(zip(BODIES_SHAPE, r, strict=True)) for r in sealed.bodies)
    assert (row["bodies_id"], row["bodies_index"]) == (group["id"], 0)
    assert open_member(group["sealed"], 0, bytes.fromhex) == (b"0123456789", b"data: abcd")


def _metered(tenant: str, request: bytes, chunks: list[bytes], at: datetime, limit: int = 1 << 20) -> Exchange:
    exchange = Exchange(limit)
    exchange.request(request)
    for chunk in chunks:
        exchange.response(chunk)
    exchange.usage, exchange.occurred_at = (tenant, "k", "", "u", "m", 1, 200), at
    return exchange


def test_bodies_are_sealed_in_groups_of_one_tenant_up_to_a_bound() -> None:
    """One compression and one encryption per group: a group holds one tenant's exchanges only (a deleted tenant's
    groups go whole), is closed once its plaintext reaches the bound (an exchange is never split), and its time is
    its newest exchange's (the retention sweep deletes it only once every exchange in it is past the edge)."""
    start = datetime.now(UTC)
    big = b"b" * (GROUP_BYTES // 2)
    exchanges = [
        _metered("ten_a", b'{"n": 0}', [b"data: x\n\n", b"data: [DONE]\n\n"], start),
        _metered("ten_b", b'{"n": 1}', [b"answer one"], start + timedelta(seconds=1)),
        _metered("ten_a", big, [b"answer two"], start + timedelta(seconds=2)),
        _metered("ten_a", b'{"n": 3}', [big], start + timedelta(seconds=3)),  # reaches the bound: closes its group
        _metered("ten_a", b"", [], start + timedelta(seconds=4)),  # a new group, with an empty exchange
    ]
    seals: list[bytes] = []

    def seal(compressed: bytes) -> str:
        seals.append(compressed)
        return compressed.hex()

    sealed = seal_exchanges(exchanges, seal)
    assert len(seals) == 3  # one seal per group, not per exchange
    groups = {row[0]: dict(zip(BODIES_SHAPE, row, strict=True)) for row in sealed.bodies}
    rows = [dict(zip(EXCHANGE_SHAPE, row, strict=True)) for row in sealed.exchanges]
    assert [r["id"] for r in rows] == [e.id for e in exchanges]
    assert [r["bodies_index"] for r in rows] == [0, 0, 1, 2, 0]
    first, other, _, _, last = (r["bodies_id"] for r in rows)
    assert len({first, other, last}) == 3 and rows[2]["bodies_id"] == rows[3]["bodies_id"] == first
    assert [groups[g]["tenant_id"] for g in (first, other, last)] == ["ten_a", "ten_b", "ten_a"]
    assert groups[first]["occurred_at"] == start + timedelta(seconds=3)  # its newest exchange's
    for row, exchange in zip(rows, exchanges, strict=True):
        bodies = open_member(groups[row["bodies_id"]]["sealed"], row["bodies_index"], bytes.fromhex)
        assert bodies == (exchange.request_body, exchange.response_body)
    with pytest.raises(ValueError, match="none at 3"):
        open_member(groups[first]["sealed"], 3, bytes.fromhex)
    unmetered = Exchange(10)
    with pytest.raises(ValueError, match="metered"):
        seal_exchanges([unmetered], seal)


def test_a_group_compresses_to_a_fraction_and_one_sealed_with_deflate_before_still_opens() -> None:
    """Groups are compressed with Zstandard; those sealed before it hold raw deflate, and open all the same."""
    start = datetime.now(UTC)
    words = b" ".join(b"word%d" % (i % 97) for i in range(400))
    exchanges = [
        _metered("ten_a", b'{"prompt": "%s"}' % words, [words], start + timedelta(seconds=i)) for i in range(3)
    ]
    seals: list[bytes] = []

    def seal(compressed: bytes) -> str:
        seals.append(compressed)
        return compressed.hex()

    seal_exchanges(exchanges, seal)
    (compressed,) = seals
    plain = zstandard.ZstdDecompressor().decompress(compressed)
    assert len(compressed) * 4 < len(plain)
    before = zlib.compress(plain, 1, wbits=-15).hex()  # raw deflate, as groups were sealed before
    for index, exchange in enumerate(exchanges):
        assert open_member(before, index, bytes.fromhex) == (exchange.request_body, exchange.response_body)
        assert open_member(compressed.hex(), index, bytes.fromhex) == (exchange.request_body, exchange.response_body)


def test_exchange_ids_follow_the_order_they_were_made_in() -> None:
    """Ids in creation order are appended at the end of the primary key's index (and the usage rows' capture_id
    index) instead of each landing on a random page of it."""
    ids = []
    for _ in range(3):
        ids.append(Exchange(limit=1).id)
        time.sleep(0.002)  # the id's time is in milliseconds: within one, ids are unique but not ordered
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert all(len(i) <= CapturedExchangeRow.id.type.length for i in ids)  # type: ignore[attr-defined]


def test_sealed_blobs_open_only_unaltered_under_their_key(tmp_path: Path) -> None:
    box, other = _box(tmp_path / "a"), _box(tmp_path / "b")
    sealed = box.seal_blob(b"transcript")
    assert "transcript" not in sealed and box.seal_blob(b"transcript") != sealed  # a fresh nonce each time
    assert box.open_blob(sealed) == b"transcript"
    with pytest.raises(InvalidTag):
        other.open_blob(sealed)
    tampered = bytearray(base64.b64decode(sealed))
    tampered[-1] ^= 1
    with pytest.raises(InvalidTag):
        box.open_blob(base64.b64encode(bytes(tampered)).decode())


def _box(var_dir: Path) -> SecretBox:
    var_dir.mkdir(parents=True, exist_ok=True)
    return SecretBox(load_settings({"SWITCHBOARD_VAR_DIR": str(var_dir)}))


async def test_the_meter_writes_exchanges_sealed_with_their_usage_rows(database: Database, tmp_path: Path) -> None:
    box = _box(tmp_path)
    canary = f"canary-{secrets.token_hex(6)}"
    tenant = f"ten_{secrets.token_hex(4)}"
    db = Db(database.url)
    meter = Meter(db, seal=box.seal_blob)
    unsealed = Meter(db)  # a meter that cannot seal stores usage only
    sent: dict[str, tuple[bytes, bytes]] = {}
    try:
        meter.start()
        unsealed.start()
        for n, target in enumerate((meter, meter, meter, unsealed)):
            event = UsageEvent(tenant, "key_m", "u", "m", 1, status=200, total_tokens=3)
            bodies = (f'{{"content": "{canary} {n}"}}'.encode(), f"answer {n} {canary}".encode())
            exchange = _metered(tenant, bodies[0], [bodies[1]], event.occurred_at)
            sent[exchange.id] = bodies
            target.captured(event, exchange)
        await meter.close()
        await unsealed.close()
        async with db.read() as session:
            usage = (await session.execute(select(UsageEventRow).where(UsageEventRow.tenant_id == tenant))).scalars()
            rows = list(usage)
            stored = list(
                (await session.execute(select(CapturedExchangeRow).where(CapturedExchangeRow.tenant_id == tenant)))
                .scalars()
                .all()
            )
            groups = list(
                await session.scalars(select(CapturedBodiesRow.sealed).where(CapturedBodiesRow.tenant_id == tenant))
            )
            opened = [await open_exchange(session, row.id, tenant, box.open_blob) for row in stored]
    finally:
        await db.close()
    assert len(rows) == 4 and len(stored) == 3
    linked = {r.capture_id: r.id for r in rows if r.capture_id is not None}
    assert set(linked) == {row.id for row in stored}
    assert len(groups) == 1 and canary not in groups[0]  # one batch, one tenant: one group, sealed
    assert all(row.sealed is None for row in stored)
    for found in opened:
        assert (found.request_body, found.response_body) == sent[found.row.id]
        assert found.usage is not None and found.usage.id == linked[found.row.id]
        row = found.row
        assert (row.request_bytes, row.response_bytes, row.status) == (*map(len, sent[row.id]), 200)


async def test_an_exchange_written_before_groups_still_opens(database: Database, tmp_path: Path) -> None:
    """Rows of migration 0007's layout hold their own bodies, sealed alone: the request's length, the request and the
    response, compressed."""
    box = _box(tmp_path)
    tenant = f"ten_{secrets.token_hex(4)}"
    request = b'{"old": 1}'
    plain = struct.pack(">I", len(request)) + request + b"old answer"
    old = CapturedExchangeRow(
        id=f"cap_{secrets.token_hex(6)}", tenant_id=tenant, sealed=box.seal_blob(zlib.compress(plain))
    )
    await insert_rows(database, old)
    db = Db(database.url)
    try:
        async with db.read() as session:
            opened = await open_exchange(session, old.id, tenant, box.open_blob)
            with pytest.raises(NotFound):
                await open_exchange(session, old.id, "ten_other", box.open_blob)
    finally:
        await db.close()
    assert (opened.request_body, opened.response_body) == (request, b"old answer")


async def test_retention_prunes_exchanges_older_than_it_keeps(database: Database) -> None:
    """Exchanges past the edge go; so do groups of bodies whose newest exchange is past it. A group straddling the
    edge stays (its recent exchange still opens) until a later sweep finds all of it past."""
    tenant = f"ten_{secrets.token_hex(4)}"
    now = datetime.now(UTC)
    old_group, straddling = (
        CapturedBodiesRow(id=f"cab_{secrets.token_hex(6)}", tenant_id=tenant, occurred_at=now - age, sealed="x")
        for age in (timedelta(days=31), timedelta(days=29))
    )

    def row(name: str, age: timedelta, group: CapturedBodiesRow) -> CapturedExchangeRow:
        return CapturedExchangeRow(
            id=f"cap_{name}_{secrets.token_hex(4)}",
            occurred_at=now - age,
            tenant_id=tenant,
            bodies_id=group.id,
            bodies_index=0,
        )

    old, older, recent = (
        row("old", timedelta(days=31), old_group),
        row("older", timedelta(days=32), straddling),
        row("recent", timedelta(days=29), straddling),
    )
    await insert_rows(database, old_group, straddling, old, older, recent)
    db = Db(database.url)
    try:
        assert await Retention(db, 30, prune_exchanges, "captured exchanges").prune_once(now) >= 2
        async with db.read() as session:
            left = set(
                await session.scalars(select(CapturedExchangeRow.id).where(CapturedExchangeRow.tenant_id == tenant))
            )
            groups = set(
                await session.scalars(select(CapturedBodiesRow.id).where(CapturedBodiesRow.tenant_id == tenant))
            )
    finally:
        await db.close()
    assert left == {recent.id}
    assert groups == {straddling.id}


async def test_a_deleted_tenants_exchanges_go_with_it(
    database: Database, server: Server, connect: ConnectJsonCaller
) -> None:
    admin = server.admin_token
    tenant = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": f"gone-{secrets.token_hex(3)}"}, token=admin))
    tenant_id = tenant["tenant"]["id"]
    group = CapturedBodiesRow(id=f"cab_{secrets.token_hex(6)}", tenant_id=tenant_id, sealed="x")
    kept = CapturedExchangeRow(id=f"cap_{secrets.token_hex(6)}", tenant_id=tenant_id, bodies_id=group.id)
    await insert_rows(database, group, kept)
    must(await connect.call(f"{TENANTS}/DeleteTenant", {"tenantId": tenant_id}, token=admin))
    db = Db(database.url)
    try:
        async with db.read() as session:
            assert await session.get(CapturedExchangeRow, kept.id) is None
            assert await session.get(CapturedBodiesRow, group.id) is None
    finally:
        await db.close()
