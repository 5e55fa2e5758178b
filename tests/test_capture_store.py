"""Content capture below the gateway, on both databases: which scopes cover a caller, bodies cut at the bound, the
meter writing an exchange sealed with its usage row, the retention sweeper, and a deleted tenant's exchanges."""

from __future__ import annotations

import base64
import secrets
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidTag
from sqlalchemy import select

from server.audit.retention import Retention
from server.capture.exchange import Exchange, ScopeKind, covers
from server.capture.store import EXCHANGE_SHAPE, exchange_row, open_bodies, prune_exchanges
from server.crypto import SecretBox
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.metering import Meter, UsageEvent
from server.settings import load_settings
from server.store.db import Database as Db
from server.store.models import CapturedExchangeRow, UsageEventRow
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
    row = dict(zip(EXCHANGE_SHAPE, exchange_row(exchange, lambda plain: plain.hex()), strict=True))
    assert (row["request_truncated"], row["response_truncated"]) == (True, True)
    assert (row["request_bytes"], row["response_bytes"]) == (12, 16)
    request, response = open_bodies(row["sealed"], bytes.fromhex)
    assert (request, response) == (b"0123456789", b"data: abcd")


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


async def test_the_meter_writes_an_exchange_sealed_with_its_usage_row(database: Database, tmp_path: Path) -> None:
    box = _box(tmp_path)
    canary = f"canary-{secrets.token_hex(6)}"
    tenant = f"ten_{secrets.token_hex(4)}"
    db = Db(database.url)
    meter = Meter(db, seal=box.seal_blob)
    unsealed = Meter(db)  # a meter that cannot seal stores usage only
    try:
        meter.start()
        unsealed.start()
        for target in (meter, unsealed):
            exchange = Exchange(limit=1024)
            exchange.request(f'{{"content": "{canary}"}}'.encode())
            exchange.response(b"answer " + canary.encode())
            event = UsageEvent(tenant, "key_m", "u", "m", 1, status=200, total_tokens=3)
            exchange.usage = (tenant, "key_m", "", "u", "m", 1, 200)
            exchange.occurred_at = event.occurred_at
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
    finally:
        await db.close()
    assert len(rows) == 2 and len(stored) == 1
    linked = [r for r in rows if r.capture_id is not None]
    assert [r.capture_id for r in linked] == [stored[0].id]
    row = stored[0]
    assert canary not in row.sealed
    request, response = open_bodies(row.sealed, box.open_blob)
    assert request == f'{{"content": "{canary}"}}'.encode() and response == b"answer " + canary.encode()
    assert (row.request_bytes, row.response_bytes, row.status, row.model_id) == (len(request), len(response), 200, "m")


async def test_retention_prunes_exchanges_older_than_it_keeps(database: Database) -> None:
    tenant = f"ten_{secrets.token_hex(4)}"
    now = datetime.now(UTC)

    def row(name: str, age: timedelta) -> CapturedExchangeRow:
        return CapturedExchangeRow(
            id=f"cap_{name}_{secrets.token_hex(4)}",
            occurred_at=now - age,
            tenant_id=tenant,
            sealed="x",
        )

    old, recent = row("old", timedelta(days=31)), row("recent", timedelta(days=29))
    await insert_rows(database, old, recent)
    db = Db(database.url)
    try:
        assert await Retention(db, 30, prune_exchanges, "captured exchanges").prune_once(now) >= 1
        async with db.read() as session:
            left = set(
                await session.scalars(select(CapturedExchangeRow.id).where(CapturedExchangeRow.tenant_id == tenant))
            )
    finally:
        await db.close()
    assert left == {recent.id}


async def test_a_deleted_tenants_exchanges_go_with_it(
    database: Database, server: Server, connect: ConnectJsonCaller
) -> None:
    admin = server.admin_token
    tenant = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": f"gone-{secrets.token_hex(3)}"}, token=admin))
    tenant_id = tenant["tenant"]["id"]
    kept = CapturedExchangeRow(id=f"cap_{secrets.token_hex(6)}", tenant_id=tenant_id, sealed="x")
    await insert_rows(database, kept)
    must(await connect.call(f"{TENANTS}/DeleteTenant", {"tenantId": tenant_id}, token=admin))
    db = Db(database.url)
    try:
        async with db.read() as session:
            assert await session.get(CapturedExchangeRow, kept.id) is None
    finally:
        await db.close()
