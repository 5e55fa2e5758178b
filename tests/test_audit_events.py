"""Audit events of management calls: exactly one per state-changing call, allowed or refused, on both databases.

The methods come from the generated service descriptors (what reflection serves), so a method added to the
contract later is walked too, and fails here if it answers without its event.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest

from server.audit.events import ActorType, Outcome, outcome_of
from tests.audit_helpers import Trail, state_changing_methods
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.world import GROUPS, TENANTS, World, make_world, must

KEYS = "platform.tenants.v1.ApiKeyService"
CONVERSATIONS = "platform.conversations.v1.ConversationService"


@pytest.fixture
async def trail(database: Database) -> AsyncIterator[Trail]:
    found = Trail(database)
    yield found
    await found.close()


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _one_new_event(trail: Trail, method: str, before: set[str]) -> Any:
    new = [e for e in await trail.events(method) if e.id not in before]
    assert len(new) == 1, (method, [(e.outcome, e.code) for e in new])
    return new[0]


def test_the_walk_covers_the_contract() -> None:
    methods = state_changing_methods()
    assert len(methods) >= 78
    assert "platform.tenants.v1.GroupService/CreateGroup" in methods
    assert "platform.tenants.v1.GroupService/ListGroups" not in methods


async def test_every_state_changing_method_records_exactly_one_event(
    server: Server, connect: ConnectJsonCaller, trail: Trail
) -> None:
    """Each method, called by nobody, by a stranger and by the platform admin (with an empty request, so most are
    refused somewhere): one event per call, whose outcome and code are what the caller was answered."""
    stranger = server.token(f"stranger-{secrets.token_hex(3)}")
    callers: list[tuple[str | None, ActorType, str]] = [
        (None, ActorType.ANONYMOUS, ""),
        (stranger, ActorType.USER, ""),
        (server.admin_token, ActorType.USER, "platform-admin"),
    ]
    for method in state_changing_methods():
        for token, actor_type, user_id in callers:
            before = {e.id for e in await trail.events(method)}
            result = await connect.call(method, {}, token=token)
            event = await _one_new_event(trail, method, before)
            code = "" if result.ok else result.code
            assert (event.outcome, event.code) == (int(outcome_of(code)), code), (method, result)
            assert event.actor_type == int(actor_type), method
            if user_id:
                assert event.user_id == user_id
            assert event.peer_address.startswith("127.0.0.1"), event.peer_address
            assert event.resource_kind == method.split("/")[0].rsplit(".", 1)[1].removesuffix("Service")


async def test_allowed_changes_name_actor_tenant_and_resource(
    connect: ConnectJsonCaller, world: World, trail: Trail
) -> None:
    admin = world.tokens["admin"]
    before = {e.id for e in await trail.events(f"{GROUPS}/CreateGroup")}
    group = must(
        await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "Audit"}, token=admin)
    )
    created = await _one_new_event(trail, f"{GROUPS}/CreateGroup", before)
    assert (created.outcome, created.code, created.tenant_id) == (Outcome.ALLOWED, "", world.tenant_id)
    assert (created.actor_type, created.user_id) == (ActorType.USER, world.user_ids["admin"])
    assert (created.resource_kind, created.resource_name) == ("Group", "Audit")

    group_id = group["group"]["id"]
    before = {e.id for e in await trail.events(f"{GROUPS}/DeleteGroup")}
    must(await connect.call(f"{GROUPS}/DeleteGroup", {"tenantId": world.tenant_id, "groupId": group_id}, token=admin))
    deleted = await _one_new_event(trail, f"{GROUPS}/DeleteGroup", before)
    assert (deleted.outcome, deleted.resource_name) == (Outcome.ALLOWED, group_id)

    # Refused: a member may not delete groups; the event says who and why, and nothing else changed.
    before = {e.id for e in await trail.events(f"{GROUPS}/CreateGroup")}
    refused = await connect.call(
        f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "Nope"}, token=world.tokens["member"]
    )
    assert refused.code == "permission_denied"
    event = await _one_new_event(trail, f"{GROUPS}/CreateGroup", before)
    assert (event.outcome, event.code, event.user_id) == (
        Outcome.REFUSED,
        "permission_denied",
        world.user_ids["member"],
    )


async def test_keys_act_by_id_and_their_secrets_never_reach_the_trail(
    connect: ConnectJsonCaller, world: World, trail: Trail
) -> None:
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "audited"}
    created = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["editor"]))
    secret, key_id = created["secret"], created["apiKey"]["id"]

    before = {e.id for e in await trail.events(f"{CONVERSATIONS}/CreateConversation")}
    must(await connect.call(f"{CONVERSATIONS}/CreateConversation", {}, token=secret))
    event = await _one_new_event(trail, f"{CONVERSATIONS}/CreateConversation", before)
    assert (event.actor_type, event.api_key_id, event.user_id) == (
        ActorType.API_KEY,
        key_id,
        world.user_ids["editor"],
    )
    assert event.tenant_id == world.tenant_id

    # A key may not change the tenant: refused before the handler, recorded with the key as actor.
    before = {e.id for e in await trail.events(f"{TENANTS}/UpdateTenant")}
    refused = await connect.call(f"{TENANTS}/UpdateTenant", {"tenantId": world.tenant_id}, token=secret)
    assert refused.code == "permission_denied"
    event = await _one_new_event(trail, f"{TENANTS}/UpdateTenant", before)
    assert (event.outcome, event.api_key_id) == (Outcome.REFUSED, key_id)

    for row in await trail.all():
        assert secret not in str([getattr(row, c.key) for c in row.__table__.columns])


async def test_a_capture_toggle_is_named_after_the_tenant_it_acted_on(server: Server) -> None:
    """docs/audit.md: turning capture on or off is "named by its scope and state (`tenant/<tenant id> on`, ...)". An
    operator scoped to the tenant (`X-Platform-Tenant-Id`, as the console calls) may leave `tenantId` out: the event
    was named from the request's own field, "tenant/ off", naming no tenant."""
    connect = ConnectJsonCaller(server.base_url)
    world = await make_world(server, connect)
    body = {"scope": {"kind": "CAPTURE_SCOPE_KIND_TENANT"}, "enabled": False}
    method = "switchboard.capture.v1.CaptureService/SetCapturePolicy"
    answer = must(await connect.call(method, body, token=server.admin_token, tenant=world.tenant_id))
    assert answer["policy"]["tenantId"] == world.tenant_id
    query = {"tenantId": world.tenant_id, "method": f"/{method}", "pageSize": 10}
    events = must(
        await connect.call("switchboard.audit.v1.AuditService/ListAuditEvents", query, token=server.admin_token)
    )
    assert [e.get("resourceName") for e in events["events"]] == [f"tenant/{world.tenant_id} off"], events
