"""PresetAgentService over Connect JSON: the fields and their rules, the one model-id namespace, ordered output
guardrails (at most four, guardrail models only), default tools, updates, deletion and nothing half-written."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller, Result
from tests.rag_helpers import new_rag
from tests.world import World, make_world, must

AGENTS = "platform.agents.v1.PresetAgentService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"
MCP = "platform.agents.v1.ExternalMcpServerService"


def _id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


async def _deployment(connect: ConnectJsonCaller, server: Any, world: World, task: str, *, shared: bool = True) -> str:
    name = _id("m")
    body: dict[str, Any] = {
        "name": name,
        "publicModelId": name,
        "endpointUrl": "http://127.0.0.1:9/v1",
        "capabilities": {"taskType": task},
    }
    if shared:
        body["sharing"] = {"sharedWith": [world.tenant_id]}
    must(
        await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=server.admin_token)
    )
    return name


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


@pytest.fixture
async def models(server: Any, connect: ConnectJsonCaller, world: World) -> dict[str, Any]:
    base = await _deployment(connect, server, world, "TASK_TYPE_TEXT_GENERATION")
    guards = [await _deployment(connect, server, world, "TASK_TYPE_GUARDRAIL") for _ in range(5)]
    embed = await _deployment(connect, server, world, "TASK_TYPE_EMBEDDING")
    private = await _deployment(connect, server, world, "TASK_TYPE_GUARDRAIL", shared=False)
    alias_id = _id("alias")
    alias = {"publicModelId": alias_id, "targetRef": {"kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT", "name": base}}
    must(
        await connect.call(
            f"{ALIASES}/CreateModelAlias",
            {"alias": {**alias, "sharing": {"sharedWith": [world.tenant_id]}}},
            token=server.admin_token,
        )
    )
    mcp = _id("tools")
    body = {
        "tenantId": world.tenant_id,
        "externalMcpServer": {"name": mcp, "serverUrl": "https://mcp.example.test/mcp"},
    }
    must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=world.tokens["editor"]))
    return {"base": base, "guards": guards, "embed": embed, "private": private, "alias": alias_id, "mcp": mcp}


def _body(models: dict[str, Any], **fields: Any) -> dict[str, Any]:
    name = _id("agent")
    return {"name": name, "publicModelId": f"{name}/v1", "baseModel": models["base"], **fields}


async def _create(connect: ConnectJsonCaller, world: World, agent: dict[str, Any], who: str = "editor") -> Result:
    return await connect.call(
        f"{AGENTS}/CreatePresetAgent", {"tenantId": world.tenant_id, "presetAgent": agent}, token=world.tokens[who]
    )


async def test_create_get_list_update_delete(connect: ConnectJsonCaller, world: World, models: dict[str, Any]) -> None:
    g = models["guards"]
    # An agent searches its RAGs on its own authority, so its saver must be able to use each one.
    unknown = await _create(connect, world, _body(models, defaultRags=["rag-support_1"]))
    assert unknown.code == "invalid_argument" and "default_rags" in unknown.message
    rag = (await new_rag(connect, world.tokens["editor"], world.tenant_id, models["embed"]))["id"]
    agent = _body(
        models,
        displayName="Support bot",
        instructions="Answer briefly.",
        defaultMcpServers=[models["mcp"]],
        defaultRags=[rag],
        sampling={"temperature": 0.2, "topP": 0.9, "maxOutputTokens": 256},
        outputGuardrails=[g[1], g[0]],
    )
    created = must(await _create(connect, world, agent))["presetAgent"]
    assert created["tenantId"] == world.tenant_id and created["baseModelResolved"] is True
    assert created["outputGuardrails"] == [g[1], g[0]]  # order is kept
    assert created["sampling"] == {"temperature": 0.2, "topP": 0.9, "maxOutputTokens": 256}
    assert created["defaultMcpServers"] == [models["mcp"]] and created["defaultRags"] == [rag]
    editor = world.tokens["editor"]
    got = must(await connect.call(f"{AGENTS}/GetPresetAgent", {"name": agent["name"]}, token=editor, get=True))
    assert got["presetAgent"] == created
    listed = must(await connect.call(f"{AGENTS}/ListPresetAgents", {}, token=editor, get=True))["presetAgents"]
    assert [a["name"] for a in listed if a["name"] == agent["name"]] == [agent["name"]]
    update = {**created, "outputGuardrails": [g[2]], "baseModel": models["alias"], "sampling": {}, "displayName": ""}
    updated = must(await connect.call(f"{AGENTS}/UpdatePresetAgent", {"presetAgent": update}, token=editor))
    assert updated["presetAgent"]["outputGuardrails"] == [g[2]]
    assert updated["presetAgent"]["baseModel"] == models["alias"]
    assert updated["presetAgent"]["displayName"] == "Support bot"  # an empty display name keeps the stored one
    assert "temperature" not in updated["presetAgent"].get("sampling", {})
    changed_id = {**created, "publicModelId": "another-id"}
    refused = await connect.call(f"{AGENTS}/UpdatePresetAgent", {"presetAgent": changed_id}, token=editor)
    assert refused.code == "invalid_argument" and "public_model_id" in refused.message
    must(await connect.call(f"{AGENTS}/DeletePresetAgent", {"name": agent["name"]}, token=editor))
    gone = await connect.call(f"{AGENTS}/GetPresetAgent", {"name": agent["name"]}, token=editor, get=True)
    assert gone.code == "not_found"
    assert (await _create(connect, world, agent)).ok  # name and publicModelId were released


async def test_invalid_fields_are_refused_by_name_and_nothing_is_written(
    connect: ConnectJsonCaller, world: World, models: dict[str, Any]
) -> None:
    g = models["guards"]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"outputGuardrails": g}, "output_guardrails"),  # five guardrails
        ({"outputGuardrails": [g[0], models["embed"]]}, "output_guardrails"),  # not a guardrail model
        ({"outputGuardrails": [models["base"]]}, "output_guardrails"),
        ({"outputGuardrails": [models["private"]]}, "output_guardrails"),  # the creator may not invoke it
        ({"outputGuardrails": ["no-such-model"]}, "output_guardrails"),
        ({"baseModel": ""}, "base_model"),
        ({"baseModel": "no-such-model"}, "base_model"),
        ({"baseModel": g[0]}, "base_model"),  # a guardrail is not a text-generation model
        ({"baseModel": models["embed"]}, "base_model"),
        ({"publicModelId": "x"}, "public_model_id"),
        ({"publicModelId": "a" * 129}, "public_model_id"),
        ({"name": "Not A Label"}, "name"),
        ({"sampling": {"temperature": 2.5}}, "sampling.temperature"),
        ({"sampling": {"topP": 0}}, "sampling.top_p"),
        ({"sampling": {"maxOutputTokens": 0}}, "sampling.max_output_tokens"),
        ({"defaultMcpServers": ["no-such-server"]}, "default_mcp_servers"),
        ({"defaultRags": ["not a rag id!"]}, "default_rags"),
        ({"instructions": "x" * 100_001}, "instructions"),
        ({"displayName": "d" * 257}, "display_name"),  # PostgreSQL's column holds 256: was internal there
    ]
    for fields, field in cases:
        agent = _body(models, **fields)
        result = await _create(connect, world, agent)
        assert result.code == "invalid_argument" and field in result.message, (fields.keys(), result)
        # Nothing half-written: the name and publicModelId stay free.
        if field not in ("name", "public_model_id"):
            valid = {"name": agent["name"], "publicModelId": agent["publicModelId"], "baseModel": models["base"]}
            assert (await _create(connect, world, valid)).ok, field


async def test_an_agent_cannot_be_another_agents_base_or_guardrail(
    connect: ConnectJsonCaller, world: World, models: dict[str, Any]
) -> None:
    first = _body(models)
    must(await _create(connect, world, first))
    for fields, field in (
        ({"baseModel": first["publicModelId"]}, "base_model"),
        ({"outputGuardrails": [first["publicModelId"]]}, "output_guardrails"),
    ):
        result = await _create(connect, world, _body(models, **fields))
        assert result.code == "invalid_argument" and field in result.message, result


async def test_public_model_id_is_one_namespace_and_race_safe(
    connect: ConnectJsonCaller, world: World, models: dict[str, Any]
) -> None:
    taken = await _create(connect, world, _body(models, publicModelId=models["base"]))
    assert taken.code == "already_exists" and "publicModelId" in taken.message
    public_id = _id("race")
    results = await asyncio.gather(*(_create(connect, world, _body(models, publicModelId=public_id)) for _ in range(8)))
    codes = sorted(r.code for r in results)
    assert codes == ["already_exists"] * 7 + ["ok"], codes


async def test_members_cannot_create_and_platform_scope_can(
    server: Any, connect: ConnectJsonCaller, world: World, models: dict[str, Any]
) -> None:
    denied = await _create(connect, world, _body(models), who="member")
    assert denied.code == "permission_denied"
    created = must(
        await connect.call(
            f"{AGENTS}/CreatePlatformPresetAgent",
            {"presetAgent": _body(models, sharing={"sharedWith": [world.tenant_id]})},
            token=server.admin_token,
        )
    )["presetAgent"]
    assert created.get("tenantId", "") == ""
    seen = must(await connect.call(f"{AGENTS}/ListPresetAgents", {}, token=world.tokens["member"], get=True))
    assert created["name"] in [a["name"] for a in seen["presetAgents"]]
    edit = await connect.call(
        f"{AGENTS}/UpdatePresetAgent", {"presetAgent": {**created, "displayName": "x"}}, token=world.tokens["admin"]
    )
    assert edit.code == "permission_denied"  # platform-owned: managed only from platform scope
