"""The gateway's security events reach the audit trail: refused keys (without the key) and egress refusals (naming
the host and the key that asked), written off the request path."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from datetime import UTC, datetime

import aiohttp
import openai
import pytest_asyncio
from sqlalchemy import select

from server.audit.events import ActorType, Outcome, Source
from server.store.db import Database as Db
from server.store.models import AuditEventRow
from tests import test_gateway_mcp_loop as loop_tests
from tests import test_model_egress as egress
from tests.agent_world import AgentWorld, build_agent_world
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld
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


@pytest_asyncio.fixture(scope="module")
async def aw(server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> AgentWorld:
    """Agents of this module's own (names carry their own tag: the agent tests' module builds the same world)."""
    own = dataclasses.replace(gw_world, tag=secrets.token_hex(3), names=dict(gw_world.names))
    return await build_agent_world(ConnectJsonCaller(server.base_url), server.admin_token, own, fakes.openai_url)


servers, mcp_ports = loop_tests.servers, loop_tests.mcp_ports


async def test_a_guardrail_refusal_names_the_agent_and_the_key_never_the_content(
    database: Database, gateway: Gateway, aw: AgentWorld
) -> None:
    since = datetime.now(UTC)
    key = aw.gw.keys["all"]
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0) as sdk_client:
        result = await sdk_client.chat.completions.create(
            model=aw.agents["guarded"], messages=[{"role": "user", "content": "FORBIDDEN-A please"}]
        )
    assert result.choices[0].finish_reason == "content_filter"
    events = await _events_since(database, "gateway.guardrail_refused", since)
    [event] = [e for e in events if e.resource_name == aw.agents["guarded"]]
    assert (event.outcome, event.resource_kind, event.actor_type) == (
        Outcome.REFUSED,
        "PresetAgent",
        ActorType.API_KEY,
    )
    assert event.api_key_id and event.tenant_id == aw.gw.tenant_id
    assert "FORBIDDEN" not in str([getattr(event, c.key) for c in AuditEventRow.__table__.columns])


async def test_approval_decisions_are_recorded(
    database: Database, sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: loop_tests.Servers
) -> None:
    since = datetime.now(UTC)
    add = f"{servers.tools}add"
    tool = {"type": "mcp", "server_label": servers.tools, "require_approval": "always"}
    for approve in (True, False):
        fakes.openai.script.append(tool_calls((add, '{"a": 20, "b": 22}')))
        first = await asyncio.to_thread(
            sdk.responses.create, model=gw_world.model("chat"), input="20+22?", tools=[tool]
        )
        asked = first.output[1]
        answer = {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": approve}
        await asyncio.to_thread(
            sdk.responses.create,
            model=gw_world.model("chat"),
            previous_response_id=first.id,
            input=[answer],
            tools=[tool],
        )
    events = await _events_since(database, "gateway.approval_decided", since, count=2)
    mine = [e for e in events if e.resource_name == f"{servers.tools}/add"]
    assert sorted((e.outcome, e.code) for e in mine) == [(Outcome.ALLOWED, ""), (Outcome.REFUSED, "declined")]
    assert all(e.resource_kind == "McpTool" and e.api_key_id for e in mine)


async def test_model_content_reaches_no_table_nor_the_log(
    database: Database, gateway: Gateway, gw_world: GatewayWorld, aw: AgentWorld
) -> None:
    """Content capture is off (the only state there is): a chat's canary, refused by a guardrail or answered, is
    nowhere in the database (audit trail and usage rows included) nor in the gateway's log."""
    canary_text = f"CANARY-{secrets.token_hex(6)}"
    since = datetime.now(UTC)
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as sdk:
        await sdk.chat.completions.create(
            model=gw_world.model("chat"), messages=[{"role": "user", "content": canary_text}]
        )
        await sdk.chat.completions.create(
            model=aw.agents["guarded"], messages=[{"role": "user", "content": f"{canary_text} FORBIDDEN-A"}]
        )
    assert await _events_since(database, "gateway.guardrail_refused", since)  # the writer has written since
    db = Db(database.url)
    try:
        async with db.read() as session:
            for table in AuditEventRow.metadata.sorted_tables:
                rows = (await session.execute(select(table))).all()
                assert canary_text not in str(rows), table.name
    finally:
        await db.close()
    assert canary_text not in gateway.log()
