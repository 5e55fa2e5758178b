"""GET /v1/models and /v1/models/{id}: what the key can use, with capabilities and filters."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import aiohttp
import openai
import pytest

from tests.agent_world import AGENTS
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import (
    DEPLOYMENTS,
    GatewayWorld,
    ModelSpec,
    all_resources_key,
    create_models,
    service_account_key,
    share_model,
)
from tests.rag_http import call
from tests.world import make_world, must


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def ours(world: GatewayWorld, ids: list[str]) -> set[str]:
    """Our world's models among ids, without the tag (other tests' worlds may share the database)."""
    suffix = f"-{world.tag}"
    return {i.removesuffix(suffix) for i in ids if i.endswith(suffix)}


def test_list_shows_usable_models_and_hides_unlisted_aliases(gateway: Gateway, gw_world: GatewayWorld) -> None:
    page = client(gateway, gw_world.keys["all"]).models.list()
    names = ours(gw_world, [m.id for m in page.data])
    assert {"chat", "embed", "rerank", "whisper", "va-chat", "vb-chat", "cc-chat", "alias-chat"} <= names
    assert "hidden" not in names  # unlisted, yet invokable (see test_gateway_chat)
    assert "private" not in names  # not shared with the key's tenant
    assert "dangling" not in names


def test_list_for_a_key_with_grants_shows_only_them(gateway: Gateway, gw_world: GatewayWorld) -> None:
    page = client(gateway, gw_world.keys["chat-only"]).models.list()
    assert ours(gw_world, [m.id for m in page.data]) == {"chat"}


def test_items_carry_capabilities(gateway: Gateway, gw_world: GatewayWorld) -> None:
    page = client(gateway, gw_world.keys["all"]).models.list()
    by_id = {m.id: m.model_dump() for m in page.data}
    chat = by_id[gw_world.model("chat")]
    assert chat["object"] == "model"
    assert chat["capabilities"] == {"task_type": "text-generation", "input_modalities": ["text", "image"]}
    assert by_id[gw_world.model("embed")]["capabilities"]["task_type"] == "embedding"
    assert by_id[gw_world.model("alias-chat")]["capabilities"] == chat["capabilities"]


@pytest.mark.parametrize(
    ("query", "expected_in", "expected_out"),
    [
        ("input_modalities=image", {"chat", "alias-chat"}, {"embed", "whisper"}),
        ("input_modalities[]=audio", {"whisper"}, {"chat"}),
        ("input_modalities=text,image", {"chat"}, {"embed"}),
        ("task_type=embedding", {"embed", "vb-embed"}, {"chat"}),
        ("task_type=speech_to_text", {"whisper"}, {"chat"}),
    ],
)
async def test_filters(
    gateway: Gateway, gw_world: GatewayWorld, query: str, expected_in: set[str], expected_out: set[str]
) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/models?{query}", headers=headers) as resp:
        assert resp.status == 200
        names = ours(gw_world, [m["id"] for m in (await resp.json())["data"]])
    assert expected_in <= names
    assert not expected_out & names


async def test_unknown_filter_value_is_400(gateway: Gateway, gw_world: GatewayWorld) -> None:
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    url = f"{gateway.base_url}/models?input_modalities=smell"
    async with aiohttp.ClientSession() as http, http.get(url, headers=headers) as resp:
        assert resp.status == 400
        assert (await resp.json())["error"]["param"] == "input_modalities"


def test_retrieve_one_model_including_unlisted_alias(gateway: Gateway, gw_world: GatewayWorld) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    assert sdk.models.retrieve(gw_world.model("chat")).id == gw_world.model("chat")
    assert sdk.models.retrieve(gw_world.model("hidden")).id == gw_world.model("hidden")
    for missing in ("private", "nope"):
        with pytest.raises(openai.NotFoundError) as err:
            sdk.models.retrieve(gw_world.model(missing))
        assert err.value.code == "model_not_found"


async def test_max_model_len_is_reported_by_the_management_api_only(
    server: Any, connect: ConnectJsonCaller, gateway: Gateway, gw_world: GatewayWorld
) -> None:
    """Spec 3.3.0: runtime_info.max_model_len is reported per deployment "through the API only", so /v1/models
    carries no max_model_len, listed or retrieved, while GetModelDeployment does."""
    name = f"long-{secrets.token_hex(4)}"
    deployment = {
        "name": name,
        "publicModelId": name,
        "endpointUrl": "http://127.0.0.1:9/v1",
        "runtimeInfo": {"maxModelLen": 32768},
        "sharing": {"shareToAll": True},
    }
    must(
        await connect.call(
            f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}, token=server.admin_token
        )
    )
    got = must(await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", {"name": name}, token=server.admin_token))
    assert got["modelDeployment"]["runtimeInfo"] == {"maxModelLen": 32768}
    key = await all_resources_key(connect, gw_world, gw_world.tokens["member"], f"len-{name}")  # a fresh listing
    headers = {"Authorization": f"Bearer {key}"}
    async with aiohttp.ClientSession(headers=headers) as http:
        async with http.get(f"{gateway.base_url}/models") as resp:
            listed = {m["id"]: m for m in (await resp.json())["data"]}
        async with http.get(f"{gateway.base_url}/models/{name}") as resp:
            retrieved = await resp.json()
    assert set(listed[name]) == {"id", "object", "created", "owned_by", "capabilities"}
    assert retrieved == listed[name]


async def _fresh_world(server: Server, connect: ConnectJsonCaller) -> GatewayWorld:
    """A tenant of its own, for tests that change what the platform shares with it."""
    people = await make_world(server, connect)
    return GatewayWorld(
        tenant_id=people.tenant_id, tag=secrets.token_hex(3), tokens=dict(people.tokens), user_ids=dict(people.user_ids)
    )


async def _model_ids(gateway: Gateway, key: str) -> set[str]:
    answer = await call("GET", f"{gateway.base_url}/models", key)
    assert answer.status == 200, answer
    return {m["id"] for m in answer.body["data"]}


@pytest.mark.parametrize("withdrawn", ["base", "guardrail"])
async def test_an_agent_that_cannot_run_is_not_offered(
    server: Server, gateway: Gateway, fakes: Fakes, connect: ConnectJsonCaller, withdrawn: str
) -> None:
    """/v1/models lists what the key can use: an agent whose base model or guardrail the platform no longer shares
    with the agent's tenant was still listed (and answered by id) though every call to it was refused. The listing
    asks what the invocation asks (`preset_agents.runnable`)."""
    gw = await _fresh_world(server, connect)
    specs = [
        ModelSpec("base", upstream=fakes.openai_url, upstream_model="echo", shared=False),
        ModelSpec("guard", upstream=fakes.openai_url, upstream_model="guard-json", task=5, shared=False),
    ]
    await create_models(connect, server.admin_token, gw, specs)
    for label in ("base", "guard"):
        await share_model(connect, server.admin_token, gw, gw.model(label), {"sharedWith": [gw.tenant_id]})
    agent = {
        "name": f"ag-{gw.tag}",
        "publicModelId": gw.model("agent"),
        "baseModel": gw.model("base"),
        "outputGuardrails": [gw.model("guard")],
        "sharing": {"shareToAll": True},
    }
    body = {"tenantId": gw.tenant_id, "presetAgent": agent}
    made = must(await connect.call(f"{AGENTS}/CreatePresetAgent", body, token=gw.tokens["editor"]))
    agent_id = made["presetAgent"]["publicModelId"]
    key = await all_resources_key(connect, gw, gw.tokens["member"], "member")
    assert agent_id in await _model_ids(gateway, key)

    lost = gw.model("base" if withdrawn == "base" else "guard")
    await share_model(connect, server.admin_token, gw, lost, {})
    # Until the listing and the lookup by id have both seen the change: each is cached for up to 1 s in tests, and
    # the two caches expire apart (CI saw the listing without the agent while its lookup still answered 200).
    for _ in range(100):
        listed = await _model_ids(gateway, key)
        got = await call("GET", f"{gateway.base_url}/models/{agent_id}", key)
        if lost not in listed and got.status == 404:
            break
        await asyncio.sleep(0.05)
    assert lost not in listed
    assert agent_id not in listed
    assert got.status == 404, got
    chat = {"model": agent_id, "messages": [{"role": "user", "content": "hi"}]}
    refused = await call("POST", f"{gateway.base_url}/chat/completions", key, json=chat)
    assert refused.status == 400, refused  # the listing and the call agree


async def test_a_service_account_key_uses_a_platform_model_granted_to_its_tenant(
    server: Server, gateway: Gateway, fakes: Fakes, connect: ConnectJsonCaller
) -> None:
    """A platform model granted to a tenant (a TENANT-subject permission) is one the tenant may use, and CreateApiKey
    accepts it as a service-account key's grant; the key could not use it (404), as its reach was only what the
    platform shares with the tenant. Spec Auth 2: the key's grants decide which models it reaches."""
    gw = await _fresh_world(server, connect)
    spec = ModelSpec("tenantwide", upstream=fakes.openai_url, upstream_model="served-chat", shared=False)
    await create_models(connect, server.admin_token, gw, [spec])
    model = gw.model("tenantwide")
    grant = {
        "name": gw.names[model][1],
        "subject": {"type": "SUBJECT_TYPE_TENANT", "id": gw.tenant_id},
        "role": "DEPLOYMENT_ROLE_READER",
    }
    must(await connect.call(f"{DEPLOYMENTS}/AddModelDeploymentPermission", grant, token=server.admin_token))
    sa_key = await service_account_key(connect, gw, gw.tokens["admin"], "sa", ["tenantwide"])
    assert model in await _model_ids(gateway, sa_key)
    chat = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    answer = await call("POST", f"{gateway.base_url}/chat/completions", sa_key, json=chat)
    assert answer.status == 200, answer
    ungranted = await service_account_key(connect, gw, gw.tokens["admin"], "sa-none", [])
    assert model not in await _model_ids(gateway, ungranted)  # its grants still decide
