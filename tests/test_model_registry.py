"""Model deployments, external models and model aliases, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from pathlib import Path
from typing import Any

import pytest

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database, server_env, start_server
from tests.world import World, make_world, must

DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"
CUSTOM = "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE"


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    world = await make_world(server, connect)
    world.tokens["models"] = server.token(f"ops-{secrets.token_hex(3)}", roles=("can_manage_models",))
    world.tokens["tenants-only"] = server.token(f"tops-{secrets.token_hex(3)}", roles=("can_manage_tenants",))
    return world


def _id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


async def _deployment(connect: ConnectJsonCaller, world: World, **extra: Any) -> dict[str, Any]:
    name = _id("dep")
    body = {"name": name, "publicModelId": f"org/{name}", "endpointUrl": "http://127.0.0.1:9/v1", **extra}
    return must(
        await connect.call(
            f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=world.tokens["models"]
        )
    )["modelDeployment"]


def _external(**extra: Any) -> dict[str, Any]:
    name = _id("ext")
    return {
        "name": name,
        "provider": CUSTOM,
        "providerModelId": "gpt-x",
        "apiKey": "sk-do-not-leak-0001",
        "baseUrl": "http://127.0.0.1:9/v1",
        "publicModelId": f"ext/{name}",
        **extra,
    }


async def _tenant_external(connect: ConnectJsonCaller, world: World, person: str = "editor", **extra: Any) -> Result:
    return await connect.call(
        f"{EXTERNAL}/CreateTenantExternalModel",
        {"tenantId": world.tenant_id, "externalModel": _external(**extra)},
        token=world.tokens[person],
    )


async def test_deployments_are_platform_resources_managed_with_can_manage_models(
    connect: ConnectJsonCaller, world: World
) -> None:
    created = await _deployment(
        connect,
        world,
        runtimeInfo={"maxModelLen": 4096},
        capabilities={"taskType": "TASK_TYPE_EMBEDDING", "inputModalities": ["MODALITY_TEXT"]},
    )
    assert created["servedModelId"] == created["publicModelId"]  # defaults to the public id
    assert created["runtimeInfo"] == {"maxModelLen": 4096}
    assert created["capabilities"]["taskType"] == "TASK_TYPE_EMBEDDING"
    body = {"modelDeployment": {"name": _id("dep"), "publicModelId": _id("x"), "endpointUrl": "http://h/v1"}}
    for person in ("admin", "editor", "tenants-only"):
        assert (
            await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=world.tokens[person])
        ).code == "permission_denied", person
    # Tenants read only what is shared with them.
    get = {"name": created["name"]}
    assert (
        await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", get, token=world.tokens["member"])
    ).code == "not_found"
    sharing = {"name": created["name"], "sharing": {"sharedWith": [world.tenant_id]}}
    must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", sharing, token=world.tokens["models"]))
    assert (await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", get, token=world.tokens["member"])).ok
    assert (
        await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", get, token=world.tokens["outsider"])
    ).code == "not_found"
    listed = must(await connect.call(f"{DEPLOYMENTS}/ListModelDeployments", {}, token=world.tokens["member"]))
    assert created["name"] in [d["name"] for d in listed["modelDeployments"]]
    update = {"modelDeployment": {"name": created["name"], "displayName": "Renamed"}}
    assert (
        await connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", update, token=world.tokens["member"])
    ).code == "permission_denied"
    renamed = must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", update, token=world.tokens["models"]))
    assert renamed["modelDeployment"]["displayName"] == "Renamed"
    assert renamed["modelDeployment"]["sharing"] == {"sharedWith": [world.tenant_id]}  # update keeps sharing
    immutable = {"modelDeployment": {"name": created["name"], "publicModelId": "other/id"}}
    result = await connect.call(f"{DEPLOYMENTS}/UpdateModelDeployment", immutable, token=world.tokens["models"])
    assert result.code == "invalid_argument" and "public_model_id" in result.message


async def test_deployment_validation(connect: ConnectJsonCaller, world: World) -> None:
    cases = [
        ("name", {"name": "Bad Name", "publicModelId": "a/b", "endpointUrl": "http://h/v1"}),
        ("endpoint_url", {"name": _id("d"), "publicModelId": _id("p"), "endpointUrl": "ftp://h"}),
        ("endpoint_url", {"name": _id("d"), "publicModelId": _id("p"), "endpointUrl": "http://[::1"}),
        ("public_model_id", {"name": _id("d"), "publicModelId": "-bad-", "endpointUrl": "http://h/v1"}),
    ]
    for field, body in cases:
        result = await connect.call(
            f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=world.tokens["models"]
        )
        assert result.code == "invalid_argument" and field in result.message, (field, result)


async def test_tenant_external_models_creator_rights_and_capability(connect: ConnectJsonCaller, world: World) -> None:
    assert (await _tenant_external(connect, world, "member")).code == "permission_denied"  # Members hold no capability
    created = must(await _tenant_external(connect, world, "editor"))["externalModel"]
    assert "apiKey" not in created
    name = {"name": created["name"]}
    assert (await connect.call(f"{EXTERNAL}/GetExternalModel", name, token=world.tokens["editor"])).ok  # creator
    assert (await connect.call(f"{EXTERNAL}/GetExternalModel", name, token=world.tokens["admin"])).ok  # tenant admin
    assert (await connect.call(f"{EXTERNAL}/GetExternalModel", name, token=world.tokens["member"])).code == "not_found"
    must(
        await connect.call(
            f"{EXTERNAL}/UpdateExternalModelSharing",
            {"name": created["name"], "sharing": {"shareToAll": True}},
            token=world.tokens["editor"],
        )
    )
    # Shared with the tenant: the member can list it, but get needs can_admin.
    assert (
        await connect.call(f"{EXTERNAL}/GetExternalModel", name, token=world.tokens["member"])
    ).code == "permission_denied"
    listed = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=world.tokens["member"]))
    [summary] = [m for m in listed["externalModels"] if m["name"] == created["name"]]
    assert summary["tenantId"] == world.tenant_id and summary["shareToAll"] is True
    assert not {"baseUrl", "apiVersion", "sharing", "apiKey"} & set(summary)
    outsider = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=world.tokens["outsider"]))
    assert created["name"] not in [m["name"] for m in outsider.get("externalModels", [])]


async def test_external_model_rules(connect: ConnectJsonCaller, world: World) -> None:
    models = world.tokens["models"]
    create = f"{EXTERNAL}/CreateExternalModel"
    bad = {
        "base_url": _external(baseUrl=""),
        "api_version": _external(provider="EXTERNAL_MODEL_PROVIDER_VENDOR_B"),
        "provider": _external(provider="EXTERNAL_MODEL_PROVIDER_UNSPECIFIED"),
    }
    for field, body in bad.items():
        result = await connect.call(create, {"externalModel": body}, token=models)
        assert result.code == "invalid_argument" and field in result.message, (field, result)
    assert (
        await connect.call(create, {"externalModel": _external()}, token=world.tokens["admin"])
    ).code == "permission_denied"
    vendor_b = must(
        await connect.call(
            create,
            {"externalModel": _external(provider="EXTERNAL_MODEL_PROVIDER_VENDOR_B", apiVersion="2024-10-21")},
            token=models,
        )
    )
    assert vendor_b["externalModel"]["capabilities"]["taskType"] == "TASK_TYPE_TEXT_GENERATION"  # the default
    body = _external(queryPrefix="query: ", sharing={"shareToAll": True})
    created = must(await connect.call(create, {"externalModel": body}, token=models))["externalModel"]
    assert created["queryPrefix"] == "query: "
    assert created["sharing"] == {}  # sharing is read-only on create
    update = f"{EXTERNAL}/UpdateExternalModel"
    kept = must(
        await connect.call(
            update,
            {"externalModel": {"name": created["name"], "displayName": "D", "sharing": {"shareToAll": True}}},
            token=models,
        )
    )
    assert kept["externalModel"]["queryPrefix"] == "query: "  # omitted: preserved
    assert kept["externalModel"]["sharing"] == {}  # update never changes sharing
    cleared = must(
        await connect.call(update, {"externalModel": {"name": created["name"], "queryPrefix": ""}}, token=models)
    )
    assert cleared["externalModel"]["queryPrefix"] == ""  # empty: explicitly disabled, not unset
    put = f"{EXTERNAL}/UpdateExternalModelSharing"
    must(
        await connect.call(
            put,
            {"name": created["name"], "sharing": {"shareToAll": True, "sharedWith": [world.tenant_id]}},
            token=models,
        )
    )
    replaced = must(await connect.call(put, {"name": created["name"], "sharing": {"sharedWith": []}}, token=models))
    assert replaced.get("sharing", {}) == {}  # omitted fields are cleared
    must(await connect.call(f"{EXTERNAL}/DeleteExternalModel", {"name": created["name"]}, token=models))
    gone = await connect.call(f"{EXTERNAL}/GetExternalModel", {"name": created["name"]}, token=models)
    assert gone.code == "not_found"


async def test_permissions_on_external_models(connect: ConnectJsonCaller, world: World) -> None:
    created = must(await _tenant_external(connect, world, "editor"))["externalModel"]
    grant = {
        "name": created["name"],
        "subject": {"type": "SUBJECT_TYPE_USER", "id": world.user_ids["member"]},
        "role": "DEPLOYMENT_ROLE_READER",
    }
    assert (
        await connect.call(f"{EXTERNAL}/AddExternalModelPermission", grant, token=world.tokens["member"])
    ).code == "not_found"
    must(await connect.call(f"{EXTERNAL}/AddExternalModelPermission", grant, token=world.tokens["editor"]))
    listed = must(
        await connect.call(
            f"{EXTERNAL}/ListExternalModelPermissions",
            {"name": created["name"], "subjectType": "SUBJECT_TYPE_USER"},
            token=world.tokens["editor"],
        )
    )
    assert listed["permissions"] == [{"subject": grant["subject"], "role": "DEPLOYMENT_ROLE_READER"}]
    models = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=world.tokens["member"]))
    assert created["name"] in [m["name"] for m in models["externalModels"]]
    unset = await connect.call(
        f"{EXTERNAL}/AddExternalModelPermission",
        {**grant, "role": "DEPLOYMENT_ROLE_UNSPECIFIED"},
        token=world.tokens["editor"],
    )
    assert unset.code == "invalid_argument" and "role" in unset.message
    must(await connect.call(f"{EXTERNAL}/RemoveExternalModelPermission", grant, token=world.tokens["editor"]))


async def test_aliases(connect: ConnectJsonCaller, world: World) -> None:
    models = world.tokens["models"]
    target = await _deployment(connect, world)
    other = await _deployment(connect, world)
    ref = {"kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT", "name": target["name"]}
    alias = {"publicModelId": _id("chat"), "targetRef": ref, "unlisted": True}
    for person in ("admin", "tenants-only", "member"):
        refused = await connect.call(f"{ALIASES}/CreateModelAlias", {"alias": alias}, token=world.tokens[person])
        assert refused.code == "permission_denied", person
    created = must(await connect.call(f"{ALIASES}/CreateModelAlias", {"alias": alias}, token=models))
    handle = created["name"]
    assert created["alias"]["unlisted"] is True and created["alias"]["targetRef"] == ref
    chain = await connect.call(
        f"{ALIASES}/CreateModelAlias",
        {
            "alias": {
                "publicModelId": _id("chain"),
                "targetRef": {"kind": "MODEL_ALIAS_TARGET_KIND_UNSPECIFIED", "name": handle},
            }
        },
        token=models,
    )
    assert chain.code == "invalid_argument" and "target_ref" in chain.message
    missing = await connect.call(
        f"{ALIASES}/CreateModelAlias",
        {"alias": {"publicModelId": _id("m"), "targetRef": {**ref, "name": "no-such"}}},
        token=models,
    )
    assert missing.code == "not_found"
    repoint = {"name": handle, "alias": {**alias, "targetRef": {**ref, "name": other["name"]}}}
    moved = must(await connect.call(f"{ALIASES}/UpdateModelAlias", repoint, token=models))
    assert moved["alias"]["targetRef"]["name"] == other["name"] and moved["name"] == handle
    renamed = await connect.call(
        f"{ALIASES}/UpdateModelAlias",
        {"name": handle, "alias": {**alias, "publicModelId": "new-id", "targetRef": {**ref, "name": other["name"]}}},
        token=models,
    )
    assert renamed.code == "invalid_argument" and "public_model_id" in renamed.message
    # Deleting the target keeps the alias, which reports its target unresolved.
    must(await connect.call(f"{DEPLOYMENTS}/DeleteModelDeployment", {"name": other["name"]}, token=models))
    assert "targetUnresolved" not in moved["alias"]  # false while the target exists
    kept = must(await connect.call(f"{ALIASES}/GetModelAlias", {"name": handle}, token=models))["alias"]
    # The reference stays valid (its kind is kept, never UNSPECIFIED); a flag says the target is gone.
    assert kept["targetRef"] == {**ref, "name": other["name"]} and kept["targetUnresolved"] is True
    listed = must(await connect.call(f"{ALIASES}/ListModelAliases", {}, token=models))
    [item] = [item for item in listed["aliases"] if item["name"] == handle]
    assert item["alias"]["targetRef"] == kept["targetRef"] and item["alias"]["targetUnresolved"] is True
    back = {"name": handle, "alias": {**alias, "targetUnresolved": True}}  # output only: ignored in requests
    repointed = must(await connect.call(f"{ALIASES}/UpdateModelAlias", back, token=models))["alias"]
    assert repointed["targetRef"] == ref and "targetUnresolved" not in repointed
    seen_by_tenant_admin = must(await connect.call(f"{ALIASES}/ListModelAliases", {}, token=world.tokens["admin"]))
    assert handle not in [item["name"] for item in seen_by_tenant_admin.get("aliases", [])]  # not shared with it
    must(await connect.call(f"{ALIASES}/DeleteModelAlias", {"name": handle}, token=models))
    assert (await connect.call(f"{ALIASES}/GetModelAlias", {"name": handle}, token=models)).code == "not_found"


async def test_alias_gates_need_admin_on_the_target(connect: ConnectJsonCaller, world: World) -> None:
    tenant_model = must(await _tenant_external(connect, world, "editor"))["externalModel"]
    ref = {"kind": "MODEL_ALIAS_TARGET_KIND_EXTERNAL_MODEL", "name": tenant_model["name"]}
    refused = await connect.call(
        f"{ALIASES}/CreateModelAlias",
        {"alias": {"publicModelId": _id("a"), "targetRef": ref}},
        token=world.tokens["models"],
    )
    assert refused.code == "permission_denied" and "target" in refused.message


async def test_one_namespace_of_public_model_ids(connect: ConnectJsonCaller, world: World) -> None:
    deployment = await _deployment(connect, world)
    taken = deployment["publicModelId"]
    clash = await connect.call(
        f"{EXTERNAL}/CreateExternalModel",
        {"externalModel": _external(publicModelId=taken)},
        token=world.tokens["models"],
    )
    assert clash.code == "already_exists" and taken in clash.message
    ref = {"kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT", "name": deployment["name"]}
    alias = await connect.call(
        f"{ALIASES}/CreateModelAlias",
        {"alias": {"publicModelId": taken, "targetRef": ref}},
        token=world.tokens["models"],
    )
    assert alias.code == "already_exists"
    for bad in ("a", "-abc", "abc-", "a b", "x" * 129):
        result = await connect.call(
            f"{EXTERNAL}/CreateExternalModel",
            {"externalModel": _external(publicModelId=bad)},
            token=world.tokens["models"],
        )
        assert result.code == "invalid_argument" and "public_model_id" in result.message, bad
    # Deleting frees the id for reuse.
    must(
        await connect.call(
            f"{DEPLOYMENTS}/DeleteModelDeployment", {"name": deployment["name"]}, token=world.tokens["models"]
        )
    )
    assert (
        await connect.call(
            f"{EXTERNAL}/CreateExternalModel",
            {"externalModel": _external(publicModelId=taken)},
            token=world.tokens["models"],
        )
    ).ok


async def test_concurrent_creates_of_one_public_model_id(server: Any, connect: ConnectJsonCaller, world: World) -> None:
    public_id = _id("race")
    bodies = [{"externalModel": _external(publicModelId=public_id)} for _ in range(10)]
    results = await asyncio.gather(
        *(connect.call(f"{EXTERNAL}/CreateExternalModel", b, token=world.tokens["models"]) for b in bodies)
    )
    codes = sorted(r.code for r in results)
    assert codes == ["already_exists"] * 9 + ["ok"], codes


async def test_stored_api_keys_never_leave(database: Database) -> None:
    """Every method over Connect JSON; the secret is in no response, log line or trace."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-leak-"))
    env = server_env(database, var_dir, SWITCHBOARD_LOG_LEVEL="DEBUG", SWITCHBOARD_OTEL_EXPORTER="console")
    out = (var_dir / "server.log").open("wb")
    proc = await start_server(env, stdout=out, stderr=out)
    secret = f"sk-leak-canary-{secrets.token_hex(8)}"
    responses: list[str] = []
    try:
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        token = mint_token(settings, user_id="leak-ops", roles=PLATFORM_ROLES)
        connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")

        async def call(method: str, body: dict[str, Any]) -> None:
            result = await connect.call(f"{EXTERNAL}/{method}", body, token=token)
            responses.append(repr(result))

        model = _external(apiKey=secret)
        await call("CreateExternalModel", {"externalModel": model})
        await call("GetExternalModel", {"name": model["name"]})
        await call("UpdateExternalModel", {"externalModel": {"name": model["name"], "apiKey": secret + "-2"}})
        await call("UpdateExternalModelSharing", {"name": model["name"], "sharing": {"shareToAll": True}})
        await call("ListExternalModels", {})
        await call("ListExternalModelPermissions", {"name": model["name"]})
        await call("CreateExternalModel", {"externalModel": {**model, "baseUrl": "nope"}})  # a refusal, too
        await call("DeleteExternalModel", {"name": model["name"]})
        await asyncio.sleep(0.5)
    finally:
        await proc.stop()
        out.close()
    assert all(r.startswith("Result(code='ok'") for r in responses[:6]), responses
    logged = (var_dir / "server.log").read_text(errors="replace")
    assert "ExternalModelService" in logged  # the trace exporter did run
    assert secret not in "".join(responses) and secret not in logged
