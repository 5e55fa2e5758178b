"""A reference pins the resource it named (server.domain.resource_pins): once that resource is deleted, another
tenant's admin may create a resource under the same name (and public id), and neither a platform alias shared with
every tenant, nor a preset agent, nor a RAG's embedding model may then send anyone's data to it. Through the real
management API and gateway, the upstream a stand-in that records what reached it."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import openai
import pytest

from tests.agent_world import AgentWorld, agent_body, create_agent
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import ALIASES, DEPLOYMENTS, EXTERNALS, GatewayWorld, ModelSpec, create_models
from tests.rag_helpers import new_rag
from tests.rag_http import call, personal_all_key
from tests.world import make_world, must

INTRUDER = "intruder-model"  # what the other tenant's model asks its upstream for


def _intruded(fakes: Fakes, since: int) -> bool:
    return any((r.json or {}).get("model") == INTRUDER for r in fakes.openai.received[since:])


async def _until_refused(attempt: Callable[[], Awaitable[Any]]) -> BaseException:
    """The error the gateway answers once its cached route has expired (1 s in tests); fails if it keeps answering."""
    for _ in range(100):
        try:
            await attempt()
        except (openai.APIStatusError, AssertionError) as refused:
            return refused
        await asyncio.sleep(0.1)
    pytest.fail("the gateway kept answering")


async def _take_over(
    connect: ConnectJsonCaller, token: str, tenant_id: str, *, name: str, public_id: str, url: str
) -> None:
    """Another tenant's admin creates a tenant model under a deleted model's name and public id."""
    body = {
        "tenantId": tenant_id,
        "externalModel": {
            "name": name,
            "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
            "providerModelId": INTRUDER,
            "baseUrl": url,
            "publicModelId": public_id,
            "capabilities": {"taskType": "TASK_TYPE_TEXT_GENERATION"},
        },
    }
    must(await connect.call(f"{EXTERNALS}/CreateTenantExternalModel", body, token=token))


async def test_a_platform_alias_does_not_follow_its_deleted_target_s_name_to_another_tenant(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    tag = secrets.token_hex(3)
    name = f"pinned-{tag}"
    target = {"kind": "MODEL_ALIAS_TARGET_KIND_EXTERNAL_MODEL", "name": name}
    platform_model = {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "echo",
        "baseUrl": fakes.openai_url,
        "publicModelId": f"ext/{name}",
    }
    admin = server.admin_token
    must(await connect.call(f"{EXTERNALS}/CreateExternalModel", {"externalModel": platform_model}, token=admin))
    alias = {"publicModelId": f"al-{tag}", "sharing": {"shareToAll": True}, "targetRef": target}
    handle = must(await connect.call(f"{ALIASES}/CreateModelAlias", {"alias": alias}, token=admin))["name"]
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0)
    ask: list[Any] = [{"role": "user", "content": "tenant secret"}]
    assert (await sdk.chat.completions.create(model=f"al-{tag}", messages=ask)).choices

    must(await connect.call(f"{EXTERNALS}/DeleteExternalModel", {"name": name}, token=admin))
    since = len(fakes.openai.received)
    outsider, other = people.tokens["outsider"], people.other_tenant_id
    await _take_over(connect, outsider, other, name=name, public_id=f"ext/{name}", url=fakes.openai_url)

    got = must(await connect.call(f"{ALIASES}/GetModelAlias", {"name": handle}, token=admin, get=True))
    assert got["alias"]["targetUnresolved"] is True  # still: the model of that name is another one
    refused = await _until_refused(lambda: sdk.chat.completions.create(model=f"al-{tag}", messages=ask))
    assert isinstance(refused, openai.BadRequestError) and refused.code == "model_unresolved"
    assert not _intruded(fakes, since)
    assert f"al-{tag}" not in {m.id for m in (await sdk.models.list()).data}

    # Pointing the alias at the new model is a write, and not even an operator who may administer both can make it:
    # the new model is a tenant's own, and an alias (the platform's) may name platform models only.
    repointed = await connect.call(f"{ALIASES}/UpdateModelAlias", {"name": handle, "alias": alias}, token=admin)
    assert repointed.code == "permission_denied" and "platform models only" in repointed.message, repointed
    got = must(await connect.call(f"{ALIASES}/GetModelAlias", {"name": handle}, token=admin, get=True))
    assert got["alias"]["targetUnresolved"] is True


async def test_an_agent_does_not_follow_its_deleted_base_model_s_name_and_id_to_another_tenant(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    # The shared world's tenant and keys, with names of this test's own (other modules create the agent world's).
    aw = AgentWorld(dataclasses.replace(gw_world, tag=secrets.token_hex(3), names=dict(gw_world.names)))
    # A platform external model: a tenant can create one of the same kind, name and public id once it is deleted.
    base = ModelSpec("pinned-base", kind="external", upstream=fakes.openai_url, upstream_model="echo", provider=3)
    await create_models(connect, server.admin_token, aw.gw, [base])
    body = agent_body(aw, "pinned", "pinned-base", [], sharing={"shareToAll": True})
    await create_agent(connect, aw.gw.tokens["editor"], aw, "pinned", body)
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=aw.gw.keys["all"], max_retries=0)
    ask: list[Any] = [{"role": "user", "content": "tenant secret"}]
    assert (await sdk.chat.completions.create(model=aw.agents["pinned"], messages=ask)).choices

    public_id = aw.gw.model("pinned-base")
    _, name = aw.gw.names[public_id]
    must(await connect.call(f"{EXTERNALS}/DeleteExternalModel", {"name": name}, token=server.admin_token))
    people = await make_world(server, connect)
    since = len(fakes.openai.received)
    await _take_over(
        connect, people.tokens["outsider"], people.other_tenant_id, name=name, public_id=public_id, url=fakes.openai_url
    )

    refused = await _until_refused(lambda: sdk.chat.completions.create(model=aw.agents["pinned"], messages=ask))
    assert isinstance(refused, openai.BadRequestError) and "unresolved" in refused.message
    assert not _intruded(fakes, since)


async def test_a_rag_does_not_embed_with_a_model_created_under_its_deleted_model_s_id(
    server: Server, gateway: Gateway, fakes: Fakes
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    tag = secrets.token_hex(3)
    name, public_id = f"emb-{tag}", f"emb/{tag}"
    deployment = {
        "name": name,
        "publicModelId": public_id,
        "endpointUrl": fakes.openai_url,
        "capabilities": {"taskType": "TASK_TYPE_EMBEDDING"},
    }
    admin = server.admin_token
    must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}, token=admin))
    sharing = {"name": name, "sharing": {"shareToAll": True}}
    must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", sharing, token=admin))
    rag = await new_rag(connect, people.tokens["editor"], people.tenant_id, public_id)
    key = await personal_all_key(connect, people.tokens["editor"], people.tenant_id)
    context = f"{gateway.base_url.removesuffix('/v1')}/rag/{rag['id']}/context"
    assert (await call("POST", context, key, json={"query": "tenant secret"})).status == 200

    must(await connect.call(f"{DEPLOYMENTS}/DeleteModelDeployment", {"name": name}, token=admin))
    since = len(fakes.openai.received)
    body = {
        "tenantId": people.other_tenant_id,
        "externalModel": {
            "name": name,
            "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
            "providerModelId": INTRUDER,
            "baseUrl": fakes.openai_url,
            "publicModelId": public_id,
            "capabilities": {"taskType": "TASK_TYPE_EMBEDDING"},
        },
    }
    must(await connect.call(f"{EXTERNALS}/CreateTenantExternalModel", body, token=people.tokens["outsider"]))

    async def search() -> None:
        answer = await call("POST", context, key, json={"query": "tenant secret"})
        assert answer.status == 200, answer

    refused = await _until_refused(search)
    assert "status=400" in str(refused) and "no longer exists" in str(refused)
    assert not _intruded(fakes, since)
