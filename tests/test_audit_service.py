"""switchboard.audit.v1.AuditService: operators read every event, tenant admins their tenant's, nobody else any;
filters narrow, pages cover everything once, newest first; old events are pruned by the retention."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from server.audit.events import AuditEvent, Outcome
from server.audit.store import row_of
from server.store.db import Database as Db
from server.store.models import AuditEventRow
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database, Server, insert_rows, server_env, start_server
from tests.world import GROUPS, World, make_world, must

AUDIT = "switchboard.audit.v1.AuditService/ListAuditEvents"
KEYS = "platform.tenants.v1.ApiKeyService"


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _list(connect: ConnectJsonCaller, token: str, **body: Any) -> Result:
    return await connect.call(AUDIT, body, token=token, get=True)


async def _groups(connect: ConnectJsonCaller, world: World, count: int) -> list[str]:
    names = [f"g-{secrets.token_hex(3)}" for _ in range(count)]
    for name in names:
        body = {"tenantId": world.tenant_id, "name": name}
        must(await connect.call(f"{GROUPS}/CreateGroup", body, token=world.tokens["admin"]))
    return names


async def test_operators_read_all_tenant_admins_their_own_and_nobody_else(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    await _groups(connect, world, 1)
    everything = must(await _list(connect, server.admin_token, pageSize=1000))["events"]
    assert {e.get("tenantId") for e in everything} >= {world.tenant_id, world.other_tenant_id}

    own = must(await _list(connect, world.tokens["admin"], tenantId=world.tenant_id, pageSize=1000))["events"]
    assert own and {e["tenantId"] for e in own} == {world.tenant_id}
    assert any(e["method"] == f"/{GROUPS}/CreateGroup" for e in own)
    # A session scoped to the tenant need not repeat it.
    scoped = await connect.call(AUDIT, {}, token=world.tokens["admin"], tenant=world.tenant_id, get=True)
    assert {e["tenantId"] for e in must(scoped)["events"]} == {world.tenant_id}

    other = await _list(connect, world.tokens["admin"], tenantId=world.other_tenant_id)
    assert other.code == "permission_denied"
    assert (await _list(connect, world.tokens["member"], tenantId=world.tenant_id)).code == "permission_denied"
    missing = await _list(connect, world.tokens["admin"])
    assert missing.code == "invalid_argument" and "tenant_id" in missing.message

    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "reader"}
    secret = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["admin"]))["secret"]
    assert (await _list(connect, secret, tenantId=world.tenant_id)).code == "permission_denied"


async def test_filters_narrow_and_pages_cover_everything_once_newest_first(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    names = await _groups(connect, world, 5)
    refused = await connect.call(
        f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "x"}, token=world.tokens["member"]
    )
    assert refused.code == "permission_denied"
    admin = world.tokens["admin"]
    method = f"/{GROUPS}/CreateGroup"

    seen: list[dict[str, Any]] = []
    token = ""
    for _ in range(10):
        page = must(await _list(connect, admin, tenantId=world.tenant_id, method=method, pageSize=2, pageToken=token))
        assert len(page["events"]) <= 2
        seen += page["events"]
        token = page.get("nextPageToken", "")
        if not token:
            break
    assert [e["resourceName"] for e in seen] == ["x", *reversed(names)]
    assert len({e["id"] for e in seen}) == len(seen)
    times = [e["time"] for e in seen]
    assert times == sorted(times, reverse=True)

    by_outcome = must(await _list(connect, admin, tenantId=world.tenant_id, method=method, outcome="OUTCOME_REFUSED"))
    [event] = by_outcome["events"]
    assert (event["code"], event["actor"]["userId"]) == ("permission_denied", world.user_ids["member"])
    assert event["actor"]["type"] == "ACTOR_TYPE_USER" and event["source"] == "SOURCE_MANAGEMENT"

    by_actor = must(await _list(connect, admin, tenantId=world.tenant_id, actorId=world.user_ids["member"]))
    assert [e["resourceName"] for e in by_actor["events"]] == ["x"]
    by_name = must(await _list(connect, admin, tenantId=world.tenant_id, resourceKind="Group", resourceName=names[2]))
    assert [e["resourceName"] for e in by_name["events"]] == [names[2]]

    future = (datetime.now(UTC) + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    assert must(await _list(connect, admin, tenantId=world.tenant_id, startTime=future)).get("events", []) == []
    assert must(await _list(connect, admin, tenantId=world.tenant_id, endTime=future, method=method))["events"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"pageToken": "not-a-token"}, "page_token"),
        ({"pageSize": 1001}, "page_size"),
        ({"pageSize": -1}, "page_size"),
        ({"outcome": 9}, "outcome"),
    ],
)
async def test_bad_requests_name_their_field(connect: ConnectJsonCaller, server: Server, body: Any, field: str) -> None:
    result = await _list(connect, server.admin_token, **body)
    assert result.code == "invalid_argument" and field in result.message.replace("Size", "_size"), result


async def test_events_older_than_the_retention_are_pruned(database: Database) -> None:
    old = AuditEvent(method="/old", outcome=Outcome.ALLOWED, time=datetime.now(UTC) - timedelta(days=3))
    recent = AuditEvent(method="/recent", outcome=Outcome.ALLOWED, time=datetime.now(UTC) - timedelta(hours=1))
    await insert_rows(database, row_of(old), row_of(recent))
    env = server_env(database, Path(tempfile.mkdtemp(prefix="switchboard-var-")), SWITCHBOARD_AUDIT_RETENTION_DAYS="2")
    proc = await start_server(env)
    db = Db(database.url)
    try:
        for _ in range(100):
            async with db.read() as session:
                found = await session.scalars(
                    select(AuditEventRow.id).where(AuditEventRow.method.in_(["/old", "/recent"]))
                )
                left = set(found.all())
            if old.id not in left:
                break
            await asyncio.sleep(0.1)
        assert left == {recent.id}
    finally:
        await db.close()
        await proc.stop()
