"""A platform resource's shared-with list names the platform's customers: a tenant it is shared with reads the
resource, and must not learn from it which other tenants use it (server.permissions.resources `_seen_by`). Its
readers see only their own tenant in the list; the platform's administrators see all of it."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.rag_helpers import model
from tests.world import World, make_world, must

DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"

# reads one resource (its message) by name, as a token
Reader = Callable[[ConnectJsonCaller, str, str], Awaitable[dict[str, Any]]]


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _deployment(server: Any, connect: ConnectJsonCaller, sharing: dict[str, Any]) -> str:
    name = str((await model(connect, server.admin_token, "TASK_TYPE_TEXT_GENERATION", shared=False))["name"])
    body = {"name": name, "sharing": sharing}
    must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", body, token=server.admin_token))
    return name


async def _alias(server: Any, connect: ConnectJsonCaller, sharing: dict[str, Any]) -> str:
    target = {"kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT", "name": await _deployment(server, connect, sharing)}
    body = {"alias": {"publicModelId": f"a-{secrets.token_hex(4)}", "sharing": sharing, "targetRef": target}}
    return str(must(await connect.call(f"{ALIASES}/CreateModelAlias", body, token=server.admin_token))["name"])


async def _get_deployment(connect: ConnectJsonCaller, name: str, token: str) -> dict[str, Any]:
    got = await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", {"name": name}, token=token, get=True)
    return dict(must(got)["modelDeployment"])


async def _listed_deployment(connect: ConnectJsonCaller, name: str, token: str) -> dict[str, Any]:
    listed = must(await connect.call(f"{DEPLOYMENTS}/ListModelDeployments", {}, token=token, get=True))
    (found,) = [d for d in listed["modelDeployments"] if d["name"] == name]
    return dict(found)


async def _listed_alias(connect: ConnectJsonCaller, name: str, token: str) -> dict[str, Any]:
    listed = must(await connect.call(f"{ALIASES}/ListModelAliases", {}, token=token, get=True))
    (found,) = [a["alias"] for a in listed["aliases"] if a["name"] == name]
    return dict(found)


KINDS: dict[str, tuple[Callable[..., Awaitable[str]], Reader]] = {
    "deployment-get": (_deployment, _get_deployment),
    "deployment-list": (_deployment, _listed_deployment),
    "alias-list": (_alias, _listed_alias),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
async def test_a_reader_sees_only_its_own_tenant_in_the_shared_with_list(
    server: Any, connect: ConnectJsonCaller, world: World, kind: str
) -> None:
    create, read = KINDS[kind]
    both = sorted((world.tenant_id, world.other_tenant_id))
    name = await create(server, connect, {"sharedWith": both})
    for reader, tenant in (
        ("member", world.tenant_id),
        ("admin", world.tenant_id),
        ("outsider", world.other_tenant_id),
    ):
        seen = await read(connect, name, world.tokens[reader])
        assert seen["sharing"] == {"sharedWith": [tenant]}, (reader, seen)
    assert (await read(connect, name, server.admin_token))["sharing"] == {"sharedWith": both}


async def test_shared_with_every_tenant_reads_the_same_for_everyone(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    name = await _deployment(server, connect, {"shareToAll": True})
    for token in (world.tokens["member"], world.tokens["outsider"], server.admin_token):
        assert (await _get_deployment(connect, name, token))["sharing"] == {"shareToAll": True}
