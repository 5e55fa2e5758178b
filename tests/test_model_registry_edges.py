"""Model deployments, external models and aliases at their edges; each was found by probing:

- an update that leaves capabilities (or a deployment's runtime info) out keeps them: they were reset to text
  generation (a RAG's embedding model renamed that way stopped embedding) and cleared;
- a platform alias may name platform models only: one naming a tenant's own external model handed that model, and
  its provider key, to every tenant the alias was shared with;
- concurrent creates of one name answer already_exists, not internal;
- text past its column (servedModelId, apiVersion), a maxModelLen past 32 bits and a sharedWith list past 10,000
  tenants are invalid_argument naming the field, where PostgreSQL answered internal or unavailable (its column and
  bind-parameter limits) and SQLite stored them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.clients import ConnectJsonCaller
from tests.test_model_registry import ALIASES, DEPLOYMENTS, EXTERNAL, _deployment, _external, _id, world
from tests.world import World, must

__all__ = ["world"]


async def test_deployment_rename_keeps_capabilities(connect: ConnectJsonCaller, world: World) -> None:
    created = await _deployment(
        connect, world, capabilities={"taskType": "TASK_TYPE_EMBEDDING", "inputModalities": ["MODALITY_TEXT"]}
    )
    update = {"modelDeployment": {"name": created["name"], "displayName": "Renamed"}}
    renamed = must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", update, token=world.tokens["models"]))
    assert renamed["modelDeployment"]["capabilities"] == created["capabilities"]


async def test_deployment_rename_keeps_runtime_info(connect: ConnectJsonCaller, world: World) -> None:
    created = await _deployment(connect, world, runtimeInfo={"maxModelLen": 4096})
    update = {"modelDeployment": {"name": created["name"], "displayName": "Renamed"}}
    renamed = must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", update, token=world.tokens["models"]))
    assert renamed["modelDeployment"].get("runtimeInfo") == {"maxModelLen": 4096}


async def test_external_rename_keeps_capabilities(connect: ConnectJsonCaller, world: World) -> None:
    body = _external(capabilities={"taskType": "TASK_TYPE_EMBEDDING", "inputModalities": ["MODALITY_TEXT"]})
    created = must(
        await connect.call(f"{EXTERNAL}/CreateExternalModel", {"externalModel": body}, token=world.tokens["models"])
    )["externalModel"]
    update = {"externalModel": {"name": created["name"], "displayName": "Renamed"}}
    renamed = must(await connect.call(f"{EXTERNAL}/UpdateExternalModel", update, token=world.tokens["models"]))
    assert renamed["externalModel"]["capabilities"] == created["capabilities"]


async def test_sharing_with_many_tenants_is_a_clear_refusal(connect: ConnectJsonCaller, world: World) -> None:
    created = await _deployment(connect, world)
    tenants = [world.tenant_id] + [f"ten_{i:016x}" for i in range(70_000)]
    result = await connect.call(
        f"{DEPLOYMENTS}/UpdateModelDeploymentSharing",
        {"name": created["name"], "sharing": {"sharedWith": tenants}},
        token=world.tokens["models"],
    )
    assert result.code == "invalid_argument" and "shared_with" in result.message, result


async def test_platform_alias_cannot_expose_a_tenant_owned_model(
    connect: ConnectJsonCaller, world: World, server: Any
) -> None:
    """A platform alias shared with every tenant, pointing at one tenant's own external model (and its provider
    credential): every other tenant could then invoke it through the alias (the gateway checks only the alias)."""
    ops_editor = server.token(world.user_ids["editor"], roles=("can_manage_models",))
    tenant_model = must(
        await connect.call(
            f"{EXTERNAL}/CreateTenantExternalModel",
            {"tenantId": world.tenant_id, "externalModel": _external()},
            token=world.tokens["editor"],
        )
    )["externalModel"]
    ref = {"kind": "MODEL_ALIAS_TARGET_KIND_EXTERNAL_MODEL", "name": tenant_model["name"]}
    alias = {"publicModelId": _id("leak"), "targetRef": ref, "sharing": {"shareToAll": True}}
    result = await connect.call(f"{ALIASES}/CreateModelAlias", {"alias": alias}, token=ops_editor)
    outsider_sees = [
        i["alias"]["publicModelId"]
        for i in must(await connect.call(f"{ALIASES}/ListModelAliases", {}, token=world.tokens["outsider"])).get(
            "aliases", []
        )
    ]
    assert not result.ok and alias["publicModelId"] not in outsider_sees, (result, outsider_sees)


async def test_overlong_served_model_id_is_invalid_argument(connect: ConnectJsonCaller, world: World) -> None:
    name = _id("dep")
    body = {
        "name": name,
        "publicModelId": f"org/{name}",
        "endpointUrl": "http://127.0.0.1:9/v1",
        "servedModelId": "s" * 300,
    }
    result = await connect.call(
        f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=world.tokens["models"]
    )
    assert result.code == "invalid_argument" and "served_model_id" in result.message, result


async def test_overlong_query_prefix_of_a_deployment_is_invalid_argument(
    connect: ConnectJsonCaller, world: World
) -> None:
    """An external model's queryPrefix stopped at 1024 characters; a deployment's was stored whatever its size (3 MB
    when probed), on create and on update."""
    name = _id("dep")
    body = {"name": name, "publicModelId": f"org/{name}", "endpointUrl": "http://127.0.0.1:9/v1"}
    token = world.tokens["models"]
    refused = await connect.call(
        f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": {**body, "queryPrefix": "q" * 1025}}, token=token
    )
    assert refused.code == "invalid_argument" and "query_prefix" in refused.message, refused
    created = await _deployment(connect, world, queryPrefix="q" * 1024)
    update = {"modelDeployment": {"name": created["name"], "queryPrefix": "q" * 1025}}
    refused = await connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", update, token=token)
    assert refused.code == "invalid_argument" and "query_prefix" in refused.message, refused


async def test_overlong_api_version_is_invalid_argument(connect: ConnectJsonCaller, world: World) -> None:
    body = _external(provider="EXTERNAL_MODEL_PROVIDER_VENDOR_B", apiVersion="v" * 100)
    result = await connect.call(
        f"{EXTERNAL}/CreateExternalModel", {"externalModel": body}, token=world.tokens["models"]
    )
    assert result.code == "invalid_argument" and "api_version" in result.message, result


async def test_huge_max_model_len_is_not_internal(connect: ConnectJsonCaller, world: World) -> None:
    name = _id("dep")
    body = {
        "name": name,
        "publicModelId": f"org/{name}",
        "endpointUrl": "http://127.0.0.1:9/v1",
        "runtimeInfo": {"maxModelLen": 4_000_000_000},
    }
    result = await connect.call(
        f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=world.tokens["models"]
    )
    assert result.code != "internal", result
    if result.ok:
        got = must(
            await connect.call(
                f"{DEPLOYMENTS}/GetModelDeployment", {"name": name}, token=world.tokens["models"], get=True
            )
        )
        assert got["modelDeployment"]["runtimeInfo"] == {"maxModelLen": 4_000_000_000}
    else:
        assert result.code == "invalid_argument" and "max_model_len" in result.message, result


async def test_concurrent_creates_of_one_deployment_name(connect: ConnectJsonCaller, world: World) -> None:

    name = _id("race")
    bodies = [
        {"modelDeployment": {"name": name, "publicModelId": f"org/{name}-{i}", "endpointUrl": "http://127.0.0.1:9/v1"}}
        for i in range(10)
    ]
    results = await asyncio.gather(
        *(connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", b, token=world.tokens["models"]) for b in bodies)
    )
    codes = sorted(r.code for r in results)
    assert codes == ["already_exists"] * 9 + ["ok"], codes


async def test_concurrent_creates_of_one_external_model_name(connect: ConnectJsonCaller, world: World) -> None:

    name = _id("race")
    bodies = [{"externalModel": _external(name=name, publicModelId=f"ext/{name}-{i}")} for i in range(10)]
    results = await asyncio.gather(
        *(connect.call(f"{EXTERNAL}/CreateExternalModel", b, token=world.tokens["models"]) for b in bodies)
    )
    codes = sorted(r.code for r in results)
    assert codes == ["already_exists"] * 9 + ["ok"], codes


async def test_platform_models_are_created_from_platform_scope_only(
    connect: ConnectJsonCaller, world: World, server: Any
) -> None:
    """Spec Auth 9: a platform resource is managed only from platform scope. A can_manage_models user who is also a
    tenant's member created platform models from that tenant's scope (X-Platform-Tenant-Id)."""
    ops = server.token(world.user_ids["editor"], roles=("can_manage_models",))
    name = _id("dep")
    deployment = {"name": name, "publicModelId": f"org/{name}", "endpointUrl": "http://127.0.0.1:9/v1"}
    calls = [
        (f"{EXTERNAL}/CreateExternalModel", {"externalModel": _external()}),
        (f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}),
    ]
    for method, body in calls:
        scoped = await connect.call(method, body, token=ops, tenant=world.tenant_id)
        assert scoped.code == "permission_denied" and "platform scope" in scoped.message, scoped
        must(await connect.call(method, body, token=ops))  # the same call from platform scope


async def test_an_api_key_no_header_can_carry_is_refused_where_it_is_given(
    connect: ConnectJsonCaller, world: World
) -> None:
    """The provider key goes out in a header: one with a line break, a character past Latin-1 or past 8 KiB was
    stored, then failed every call to the model (a 502) instead of the request that gave it."""
    models = world.tokens["models"]
    create, update = f"{EXTERNAL}/CreateExternalModel", f"{EXTERNAL}/UpdateExternalModel"
    created = must(await connect.call(create, {"externalModel": _external()}, token=models))["externalModel"]
    for bad in ("sk-a\nb", "sk-a\rb", "sk-\u2028x", "sk-\u20ac", "k" * 8193):
        refused = await connect.call(create, {"externalModel": _external(apiKey=bad)}, token=models)
        assert refused.code == "invalid_argument" and "api_key" in refused.message, (bad[:8], refused)
        assert bad not in refused.message
        body = {"name": created["name"], "apiKey": bad, "displayName": "half-written"}
        refused = await connect.call(update, {"externalModel": body}, token=models)
        assert refused.code == "invalid_argument" and "api_key" in refused.message, (bad[:8], refused)
    kept = must(await connect.call(f"{EXTERNAL}/GetExternalModel", {"name": created["name"]}, token=models))
    assert kept["externalModel"]["displayName"] == created["displayName"]
    latin_1 = {"name": created["name"], "apiKey": "sk-\u00e9\tok"}  # tab and Latin-1 are header text
    must(await connect.call(update, {"externalModel": latin_1}, token=models))
