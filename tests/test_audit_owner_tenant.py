"""The tenant an audit event is filed under is the one owning what the call acted on: not a tenant the client wrote
in an output-only field, nor the caller's scope (none, for an operator's unscoped session), which for a request
naming only a resource says nothing of its owner. Tenant admins read their own tenant's trail (docs/audit.md)."""

from __future__ import annotations

import secrets
import struct
import zlib
from typing import Any

import pytest

from server.crypto import SecretBox
from server.store.models import CapturedExchangeRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, insert_rows
from tests.matrix import shared_model
from tests.world import TENANTS, World, make_world, must

AGENTS = "platform.agents.v1.PresetAgentService"
AUDIT = "switchboard.audit.v1.AuditService/ListAuditEvents"
CAPTURE = "switchboard.capture.v1.CaptureService"


def _id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _agent(connect: ConnectJsonCaller, server: Server, world: World, **fields: Any) -> dict[str, Any]:
    name = _id("agent")
    agent = {
        "name": name,
        "publicModelId": name,
        "baseModel": await shared_model(server, connect, world.tenant_id),
        **fields,
    }
    body = {"tenantId": world.tenant_id, "presetAgent": agent}
    return dict(
        must(await connect.call(f"{AGENTS}/CreatePresetAgent", body, token=world.tokens["editor"]))["presetAgent"]
    )


async def _events(connect: ConnectJsonCaller, token: str, **query: Any) -> list[dict[str, Any]]:
    return list(must(await connect.call(AUDIT, {"pageSize": 1000, **query}, token=token, get=True)).get("events", []))


async def test_an_update_is_filed_under_the_agents_tenant_not_one_written_in_an_output_only_field(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """presetAgent.tenantId is output only: written as tenant B's, the change to tenant A's agent was filed under B,
    whose admin read A's agent name and actor, while A's admin did not see it."""
    agent = await _agent(connect, server, world)
    spoofed = {**agent, "displayName": "renamed", "tenantId": world.other_tenant_id}
    must(await connect.call(f"{AGENTS}/UpdatePresetAgent", {"presetAgent": spoofed}, token=world.tokens["editor"]))
    method = f"/{AGENTS}/UpdatePresetAgent"
    theirs = await _events(
        connect, world.tokens["outsider"], tenantId=world.other_tenant_id, method=method, resourceName=agent["name"]
    )
    ours = await _events(
        connect, world.tokens["admin"], tenantId=world.tenant_id, method=method, resourceName=agent["name"]
    )
    assert (len(ours), len(theirs)) == (1, 0), {"tenant A sees": ours, "tenant B sees": theirs}


async def test_a_delete_from_an_unscoped_session_is_in_the_agents_tenants_trail(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """DeletePresetAgent names only the agent: from a session without X-Platform-Tenant-Id the event had no tenant,
    and the tenant's admin never saw that their agent was deleted."""
    agent = await _agent(connect, server, world)
    must(await connect.call(f"{AGENTS}/DeletePresetAgent", {"name": agent["name"]}, token=world.tokens["editor"]))
    method = f"/{AGENTS}/DeletePresetAgent"
    ours = await _events(
        connect, world.tokens["admin"], tenantId=world.tenant_id, method=method, resourceName=agent["name"]
    )
    everywhere = await _events(connect, server.admin_token, method=method, resourceName=agent["name"])
    assert len(ours) == 1, {"tenant admin sees": ours, "recorded": everywhere}


async def test_a_tenants_creation_is_the_first_event_of_its_trail(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """CreateTenant names no tenant (it makes one): its event had none, so a tenant's admins never read who created
    it and when, while its deletion is filed under it. `world`'s tenant was created by the operator."""
    method = f"/{TENANTS}/CreateTenant"
    ours = await _events(connect, world.tokens["admin"], tenantId=world.tenant_id, method=method)
    assert [(e["actor"]["userId"], e["outcome"]) for e in ours] == [("platform-admin", "OUTCOME_ALLOWED")], ours
    theirs = await _events(connect, world.tokens["outsider"], tenantId=world.other_tenant_id, method=method)
    assert len(theirs) == 1 and theirs[0]["id"] != ours[0]["id"]


async def test_an_operators_read_of_captured_content_is_in_the_tenants_trail(
    database: Database, server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """Every GetCapturedExchange is an audit event; an operator may leave tenantId out, and the event then had no
    tenant: the tenant's trail never showed that its captured content was read."""
    request, response = b'{"messages": "kept for the record"}', b'{"answer": "ok"}'
    plain = struct.pack(">I", len(request)) + request + response
    exchange = CapturedExchangeRow(
        id=f"cap_{secrets.token_hex(6)}",
        tenant_id=world.tenant_id,
        sealed=SecretBox(server.settings).seal_blob(zlib.compress(plain)),
    )
    await insert_rows(database, exchange)
    read = must(await connect.call(f"{CAPTURE}/GetCapturedExchange", {"id": exchange.id}, token=server.admin_token))
    assert read["requestBody"] == request.decode()
    method = f"/{CAPTURE}/GetCapturedExchange"
    ours = await _events(connect, server.admin_token, tenantId=world.tenant_id, method=method, resourceName=exchange.id)
    everywhere = await _events(connect, server.admin_token, method=method, resourceName=exchange.id)
    assert len(ours) == 1, {"in the tenant's trail": ours, "recorded": everywhere}
