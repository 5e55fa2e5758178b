"""What a resource may name to use on its own authority (permissions.can_reference): a preset agent's base model,
guardrails, MCP servers and RAGs, a RAG's embedding and rerank models. The gateway runs those for every caller of
the agent or RAG without asking about the caller, so what a tenant's resource names must be usable in that tenant
alone, and what a platform resource names must be the platform's.

A user of two tenants in a session without `X-Platform-Tenant-Id` reaches both; before, such a session could save
tenant A's agent on tenant B's private external model (or MCP server, or RAG), and every member of A then spent B's
provider key through it. The same request scoped to A was refused: the answer depended on a header.

The rule holds for as long as the resource is used, not only when it is saved (`permissions.withdrawn`): a RAG kept
embedding with a platform model the platform had stopped sharing with its tenant, for every key that could use it."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, create_models, share_model
from tests.rag_helpers import model, new_rag
from tests.rag_http import call, multipart
from tests.world import TENANTS, World, make_world, must

AGENTS = "platform.agents.v1.PresetAgentService"
MCP = "platform.agents.v1.ExternalMcpServerService"
MODELS = "platform.modelmanager.v1.ExternalModelService"
RAGS = "platform.ragmanager.v1.RagService"


async def bridge(server: Server, connect: ConnectJsonCaller, world: World) -> str:
    """The unscoped session of a user who is an Editor of both of the world's tenants (A and B)."""
    user = f"bridge-{secrets.token_hex(3)}"
    for tenant in (world.tenant_id, world.other_tenant_id):
        body = {"tenantId": tenant, "userId": user, "role": "TENANT_ROLE_EDITOR"}
        must(await connect.call(f"{TENANTS}/AddTenantMember", body, token=server.admin_token))
    return server.token(user)


async def external_model(connect: ConnectJsonCaller, tenant: str, token: str, task: str) -> str:
    """A private external model of `tenant`, with that tenant's provider key; its public model id."""
    name = f"ext-{secrets.token_hex(3)}"
    model = {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "m",
        "baseUrl": "http://127.0.0.1:9/v1",
        "publicModelId": name,
        "apiKey": "sk-tenant-b",
        "capabilities": {"taskType": task},
    }
    must(
        await connect.call(
            f"{MODELS}/CreateTenantExternalModel", {"tenantId": tenant, "externalModel": model}, token=token
        )
    )
    return name


async def mcp_server(connect: ConnectJsonCaller, tenant: str, token: str) -> str:
    body = {
        "tenantId": tenant,
        "externalMcpServer": {
            "name": f"srv-{secrets.token_hex(3)}",
            "serverUrl": "https://b-only.example.test/mcp",
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"},
        },
        "apiKey": "tenant-b-secret-token",
    }
    return str(
        must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=token))["externalMcpServer"]["name"]
    )


async def rag(connect: ConnectJsonCaller, tenant: str, token: str, embedder: str) -> str:
    body = {"tenantId": tenant, "rag": {"name": f"r-{secrets.token_hex(3)}", "embeddingModel": embedder}}
    return str(must(await connect.call(f"{RAGS}/CreateRag", body, token=token))["rag"]["id"])


async def shared_with_all(connect: ConnectJsonCaller, server: Server) -> str:
    """A platform text-generation deployment shared with every tenant; its public model id."""
    return str((await model(connect, server.admin_token, "TASK_TYPE_TEXT_GENERATION"))["publicModelId"])


def agent(base: str, **fields: Any) -> dict[str, Any]:
    name = f"ag-{secrets.token_hex(4)}"
    return {"name": name, "publicModelId": name, "baseModel": base, **fields}


# The create request (method, body) of a resource of the tenant given that names a resource of tenant B.
Request = Callable[[str], tuple[str, dict[str, Any]]]
# Makes tenant B's resource with the bridge's token, and the request naming it.
Case = Callable[[Server, ConnectJsonCaller, World, str], Awaitable[Request]]


async def base_model(server: Server, connect: ConnectJsonCaller, world: World, token: str) -> Request:
    b_model = await external_model(connect, world.other_tenant_id, token, "TASK_TYPE_TEXT_GENERATION")
    return lambda tenant: (f"{AGENTS}/CreatePresetAgent", {"tenantId": tenant, "presetAgent": agent(b_model)})


async def default_mcp_server(server: Server, connect: ConnectJsonCaller, world: World, token: str) -> Request:
    b_server = await mcp_server(connect, world.other_tenant_id, token)
    base = await shared_with_all(connect, server)
    agent_body = agent(base, defaultMcpServers=[b_server])
    return lambda tenant: (f"{AGENTS}/CreatePresetAgent", {"tenantId": tenant, "presetAgent": agent_body})


async def default_rag(server: Server, connect: ConnectJsonCaller, world: World, token: str) -> Request:
    b_embedder = await external_model(connect, world.other_tenant_id, token, "TASK_TYPE_EMBEDDING")
    b_rag = await rag(connect, world.other_tenant_id, token, b_embedder)
    base = await shared_with_all(connect, server)
    agent_body = agent(base, defaultRags=[b_rag])
    return lambda tenant: (f"{AGENTS}/CreatePresetAgent", {"tenantId": tenant, "presetAgent": agent_body})


async def embedding_model(server: Server, connect: ConnectJsonCaller, world: World, token: str) -> Request:
    b_embedder = await external_model(connect, world.other_tenant_id, token, "TASK_TYPE_EMBEDDING")
    return lambda tenant: (
        f"{RAGS}/CreateRag",
        {"tenantId": tenant, "rag": {"name": f"r-{secrets.token_hex(3)}", "embeddingModel": b_embedder}},
    )


@pytest.mark.parametrize(
    ("case", "field"),
    [
        (base_model, "base_model"),
        (default_mcp_server, "default_mcp_servers"),
        (default_rag, "default_rags"),
        (embedding_model, "rag.embedding_model"),
    ],
)
async def test_a_tenants_resource_cannot_name_another_tenants_resource_from_a_session_reaching_both(
    server: Server, connect: ConnectJsonCaller, case: Case, field: str
) -> None:
    world = await make_world(server, connect)
    token = await bridge(server, connect, world)
    request = await case(server, connect, world, token)
    for scope in (None, world.tenant_id):  # unscoped (reaching A and B) and scoped to A alike
        method, body = request(world.tenant_id)
        refused = await connect.call(method, body, token=token, tenant=scope)
        assert refused.code == "invalid_argument" and field in refused.message, (scope, refused)
    # Tenant B's own resource may name it: the refusal is about whose resource names it, not about the caller.
    method, body = request(world.other_tenant_id)
    assert (await connect.call(method, body, token=token)).ok


async def test_a_platform_agent_names_platform_models_only(server: Server, connect: ConnectJsonCaller) -> None:
    """An operator administers every tenant's resources, but a platform agent naming one of them would make it (and
    its provider key) every tenant's."""
    world = await make_world(server, connect)
    b_model = await external_model(connect, world.other_tenant_id, server.admin_token, "TASK_TYPE_TEXT_GENERATION")
    refused = await connect.call(
        f"{AGENTS}/CreatePlatformPresetAgent", {"presetAgent": agent(b_model)}, token=server.admin_token
    )
    assert refused.code == "invalid_argument" and "base_model" in refused.message, refused
    platform = await shared_with_all(connect, server)
    assert (
        await connect.call(
            f"{AGENTS}/CreatePlatformPresetAgent", {"presetAgent": agent(platform)}, token=server.admin_token
        )
    ).ok


@pytest.mark.parametrize("withdrawn", ["embedding", "rerank"])
async def test_a_rag_stops_using_a_platform_model_withdrawn_from_its_tenant(
    server: Server, gateway: Gateway, fakes: Fakes, connect: ConnectJsonCaller, withdrawn: str
) -> None:
    """A RAG calls its embedding and rerank models on its own authority, for every key that may use it; once the
    platform stops sharing one with the RAG's tenant, what needs that model is refused (400, naming it), and what
    does not goes on (a withdrawn rerank model leaves uploads alone)."""
    people = await make_world(server, connect)
    gw = GatewayWorld(tenant_id=people.tenant_id, tag=secrets.token_hex(3), tokens=dict(people.tokens))
    specs = [
        ModelSpec("embed", upstream=fakes.openai_url, upstream_model="served-embed", task=2, shared=False),
        ModelSpec("rerank", upstream=fakes.openai_url, upstream_model="served-rerank", task=3, shared=False),
    ]
    await create_models(connect, server.admin_token, gw, specs)
    embed, rerank = gw.model("embed"), gw.model("rerank")
    for public_id in (embed, rerank):
        await share_model(connect, server.admin_token, gw, public_id, {"sharedWith": [gw.tenant_id]})
    handbook = await new_rag(connect, gw.tokens["editor"], gw.tenant_id, embed, rerankModel=rerank)
    key = await all_resources_key(connect, gw, gw.tokens["editor"], "rag")
    base = f"{gateway.base_url.removesuffix('/v1')}/rag/{handbook['id']}"

    async def upload(name: str) -> Any:
        return await call("POST", f"{base}/files", key, data=multipart([(name, b"alpha bravo charlie", "text/plain")]))

    async def search() -> Any:
        return await call("POST", f"{base}/context", key, json={"query": "alpha"})

    assert (await upload("a.txt")).status == 201
    assert (await search()).status == 200
    lost = embed if withdrawn == "embedding" else rerank
    await share_model(connect, server.admin_token, gw, lost, {})  # the platform withdraws the model from the tenant

    async def until_refused(attempt: Callable[[], Awaitable[Any]]) -> Any:
        """Each of the gateway's worker processes trusts what it cached for at most its bound (1 s in tests)."""
        for _ in range(100):
            answer = await attempt()
            if answer.status >= 300:
                break
            await asyncio.sleep(0.05)
        return answer

    answer = await until_refused(search)
    assert answer.status == 400, answer
    assert f"'{lost}'" in answer.body["error"]["message"] and "no longer available" in answer.body["error"]["message"]
    if withdrawn == "embedding":
        stored = await until_refused(lambda: upload("b.txt"))
        assert stored.status == 400 and f"'{lost}'" in stored.body["error"]["message"], stored
    else:
        stored = await upload("b.txt")
        assert stored.status == 201, stored
