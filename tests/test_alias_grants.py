"""Grants name an alias by its `alias_…` handle or by the publicModelId people chose; both store the handle."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.world import World, make_world, must

KEYS = "platform.tenants.v1.ApiKeyService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"
ALIAS = "RESOURCE_KIND_MODEL_ALIAS"


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _alias(server: Any, connect: ConnectJsonCaller, *, shared: bool = True) -> tuple[str, str]:
    """(handle, publicModelId) of a new alias to a new deployment."""
    tag = secrets.token_hex(4)
    sharing = {"shareToAll": True} if shared else {}
    deployment = {"name": f"d-{tag}", "publicModelId": f"d/{tag}", "endpointUrl": "http://127.0.0.1:9/v1"}
    must(
        await connect.call(
            f"{DEPLOYMENTS}/CreateModelDeployment",
            {"modelDeployment": {**deployment, "sharing": {"shareToAll": True}}},
            token=server.admin_token,
        )
    )
    target = {"kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT", "name": f"d-{tag}"}
    body = {"alias": {"publicModelId": f"chat-{tag}", "sharing": sharing, "targetRef": target}}
    created = must(await connect.call(f"{ALIASES}/CreateModelAlias", body, token=server.admin_token))
    assert created["name"].startswith("alias_")
    return created["name"], created["alias"]["publicModelId"]


async def test_a_key_is_granted_an_alias_by_its_public_model_id(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    handle, public_id = await _alias(server, connect)
    body = {
        "tenantId": world.tenant_id,
        "type": "API_KEY_TYPE_PERSONAL",
        "name": "laptop",
        "grants": [{"kind": ALIAS, "name": public_id}, {"kind": ALIAS, "name": handle}],
    }
    key = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["editor"]))["apiKey"]
    assert key["grants"] == [{"kind": ALIAS, "name": handle}]  # one grant, stored by handle
    call = {"tenantId": world.tenant_id, "apiKeyId": key["id"], "grant": {"kind": ALIAS, "name": public_id}}
    removed = must(await connect.call(f"{KEYS}/RemoveApiKeyGrant", call, token=world.tokens["editor"]))
    assert removed["apiKey"].get("grants", []) == []
    added = must(await connect.call(f"{KEYS}/AddApiKeyGrant", call, token=world.tokens["editor"]))
    assert added["apiKey"]["grants"] == [{"kind": ALIAS, "name": handle}]
    again = await connect.call(f"{KEYS}/AddApiKeyGrant", call, token=world.tokens["editor"])
    assert again.code == "already_exists"


async def test_an_unreadable_alias_is_not_found_by_either_name(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    handle, public_id = await _alias(server, connect, shared=False)
    for name in (public_id, handle, "no-such-alias"):
        body = {
            "tenantId": world.tenant_id,
            "type": "API_KEY_TYPE_PERSONAL",
            "name": "laptop",
            "grants": [{"kind": ALIAS, "name": name}],
        }
        result = await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["editor"])
        assert result.code == "not_found", (name, result)


async def test_tenant_members_list_the_aliases_they_can_read(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    """ListModelAliases is gated on logged-in and filtered by can_read (spec method table); the writes and the get
    keep their can_manage_models gate."""
    shared, _ = await _alias(server, connect)
    hidden, _ = await _alias(server, connect, shared=False)
    for person in ("member", "editor", "admin"):
        listed = must(await connect.call(f"{ALIASES}/ListModelAliases", {}, token=world.tokens[person], get=True))
        handles = {item["name"] for item in listed.get("aliases", [])}
        assert shared in handles and hidden not in handles, person
    operator = must(await connect.call(f"{ALIASES}/ListModelAliases", {}, token=server.admin_token, get=True))
    assert {shared, hidden} <= {item["name"] for item in operator["aliases"]}
    member = world.tokens["member"]
    body = {"alias": {"publicModelId": f"x-{secrets.token_hex(3)}", "targetRef": {"name": "whatever"}}}
    assert (await connect.call(f"{ALIASES}/CreateModelAlias", body, token=member)).code == "permission_denied"
    assert (await connect.call(f"{ALIASES}/DeleteModelAlias", {"name": shared}, token=member)).code == (
        "permission_denied"
    )
    got = await connect.call(f"{ALIASES}/GetModelAlias", {"name": shared}, token=member, get=True)
    assert got.code == "permission_denied"
    anonymous = await connect.call(f"{ALIASES}/ListModelAliases", {}, token=None, get=True)
    assert anonymous.code == "unauthenticated"
