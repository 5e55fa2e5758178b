"""The gateway's security events reach the audit trail: refused keys (without the key) and egress refusals (naming
the host and the key that asked), written off the request path."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime

import aiohttp
from sqlalchemy import select

from server.audit.events import ActorType, Outcome, Source
from server.store.db import Database as Db
from server.store.models import AuditEventRow
from tests import test_model_egress as egress
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.gateway_fixtures import Gateway
from tests.test_model_egress import Canary, Guarded, _chat, _unique_model
from tests.world import World, must

# The egress tests' guarded management server and gateway (loopback protected), canary upstream and world.
guarded, canary, world = egress.guarded, egress.canary, egress.world

EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
KEYS = "platform.tenants.v1.ApiKeyService"


async def _events_since(database: Database, method: str, since: datetime, count: int = 1) -> list[AuditEventRow]:
    db = Db(database.url)
    try:
        for _ in range(100):
            async with db.read() as session:
                found = await session.scalars(
                    select(AuditEventRow).where(AuditEventRow.method == method, AuditEventRow.occurred_at >= since)
                )
                rows = list(found.all())
            if len(rows) >= count:
                return rows
            await asyncio.sleep(0.1)
        return rows
    finally:
        await db.close()


async def test_a_refused_key_is_recorded_without_the_key(database: Database, gateway: Gateway) -> None:
    since = datetime.now(UTC)
    bogus = f"sb_{secrets.token_hex(16)}"
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{gateway.base_url}/chat/completions", json={"model": "m"}, headers={"Authorization": f"Bearer {bogus}"}
        ) as resp,
    ):
        assert resp.status == 401
    [event] = [e for e in await _events_since(database, "gateway.key_refused", since) if e.code == "unauthenticated"]
    assert (event.source, event.outcome, event.actor_type) == (Source.GATEWAY, Outcome.REFUSED, ActorType.ANONYMOUS)
    assert (event.resource_kind, event.resource_name) == ("Route", "/v1/chat/completions")
    assert event.peer_address == "127.0.0.1"
    assert bogus not in str([getattr(event, c.key) for c in AuditEventRow.__table__.columns])


async def test_an_egress_refusal_names_the_host_and_the_key(
    database: Database, server: Server, guarded: Guarded, world: World, canary: Canary
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    body = {"tenantId": world.tenant_id, "externalModel": _unique_model(canary.url)}
    model = must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=world.tokens["editor"]))
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "egress-audit"}
    created = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["editor"]))
    since = datetime.now(UTC)
    status, _answer = await _chat(guarded.gateway_url, created["secret"], model["externalModel"]["publicModelId"])
    assert status == 400
    events = await _events_since(database, "gateway.egress_refused", since)
    [event] = [e for e in events if e.api_key_id == created["apiKey"]["id"]]
    assert (event.outcome, event.code, event.resource_kind, event.resource_name) == (
        Outcome.REFUSED,
        "failed_precondition",
        "Host",
        "127.0.0.1",
    )
    assert (event.tenant_id, event.user_id, event.peer_address) == (
        world.tenant_id,
        world.user_ids["editor"],
        "127.0.0.1",
    )
    assert canary.upstream.received == []
