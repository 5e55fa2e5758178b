"""Sharing by administrators who are plain Members, and tenant scoping of sessions (issue 9).

- Spec Authentication 8 says both "sharing is a tenant capability" (Members hold none) and "any tenant member can
  share resources they administer with other tenant members". Reconciled in server.permissions.resources: admin
  rights on a resource are enough to grant (or remove) an individual tenant member; sharing with the whole tenant or
  a group also needs the share capability.
- Updates take the whole resource, sharing included, so an administrator without the capability who sends back the
  sharing as read (unchanged) is not widening anything: only a change that widens needs the capability.
- X-Platform-Tenant-Id naming a tenant the caller does not belong to is refused (permission_denied) by every method,
  lists included, instead of an empty answer that reads as "this tenant has none".
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from server.app import generated_services
from tests.clients import ConnectJsonCaller
from tests.rag_helpers import RAGS, new_rag
from tests.schema import service_desc
from tests.world import GROUPS, World, make_world, must

EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
MCP = "platform.agents.v1.ExternalMcpServerService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"
KEYS = "platform.tenants.v1.ApiKeyService"


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _tenant_model(connect: ConnectJsonCaller, world: World) -> str:
    name = f"shr-{secrets.token_hex(4)}"
    model = {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "m",
        "baseUrl": "https://models.example.test/v1",
        "publicModelId": name,
    }
    body = {"tenantId": world.tenant_id, "externalModel": model}
    return str(
        must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=world.tokens["editor"]))[
            "externalModel"
        ]["name"]
    )


async def test_a_member_administering_through_a_group_shares_with_members(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    admin, editor = world.tokens["admin"], world.tokens["editor"]
    group = must(
        await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "owners"}, token=admin)
    )["group"]["id"]
    must(
        await connect.call(
            f"{GROUPS}/AddGroupMember",
            {"tenantId": world.tenant_id, "groupId": group, "userId": world.user_ids["member"]},
            token=admin,
        )
    )
    name = await _tenant_model(connect, world)
    to_group = {"name": name, "subject": {"type": "SUBJECT_TYPE_GROUP", "id": group}, "role": "DEPLOYMENT_ROLE_ADMIN"}
    must(await connect.call(f"{EXTERNAL}/AddExternalModelPermission", to_group, token=editor))

    # A colleague to share with: a plain Member who cannot see the model yet.
    colleague = f"colleague-{secrets.token_hex(3)}"
    colleague_token = server.token(colleague)
    must(
        await connect.call(
            "platform.tenants.v1.TenantService/AddTenantMember",
            {"tenantId": world.tenant_id, "userId": colleague, "role": "TENANT_ROLE_MEMBER"},
            token=admin,
        )
    )
    listed = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=colleague_token))
    assert name not in {m["name"] for m in listed.get("externalModels", [])}

    member = world.tokens["member"]  # a Member (no share capability), ADMIN on the model through the group
    to_colleague = {
        "name": name,
        "subject": {"type": "SUBJECT_TYPE_USER", "id": colleague},
        "role": "DEPLOYMENT_ROLE_READER",
    }
    must(await connect.call(f"{EXTERNAL}/AddExternalModelPermission", to_colleague, token=member))
    listed = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=colleague_token))
    assert name in {m["name"] for m in listed["externalModels"]}

    # Wider sharing still needs the capability: a group, or the whole tenant.
    wider = {**to_group, "role": "DEPLOYMENT_ROLE_READER"}
    refused = await connect.call(f"{EXTERNAL}/AddExternalModelPermission", wider, token=member)
    assert refused.code == "permission_denied" and "capability share" in refused.message
    to_all = {"name": name, "sharing": {"shareToAll": True}}
    refused = await connect.call(f"{EXTERNAL}/UpdateExternalModelSharing", to_all, token=member)
    assert refused.code == "permission_denied" and "capability share" in refused.message
    assert (await connect.call(f"{EXTERNAL}/UpdateExternalModelSharing", to_all, token=editor)).ok

    # Unsharing an individual member is the administrator's too; a member who administers nothing gets not_found.
    must(await connect.call(f"{EXTERNAL}/RemoveExternalModelPermission", to_colleague, token=member))
    stranger = await connect.call(f"{EXTERNAL}/AddExternalModelPermission", to_colleague, token=colleague_token)
    assert stranger.code == "permission_denied"  # reads it (shared to all now), administers nothing


async def test_a_member_administering_a_rag_shared_to_all_may_update_it_as_read(
    connect: ConnectJsonCaller, world: World, embedder: str
) -> None:
    """UpdateRag with the RAG as GetRag returned it (shareToAll unchanged) by a Member granted ADMIN was refused with
    "needs the tenant capability share", as if the Member had shared it: found by probing."""
    editor, member = world.tokens["editor"], world.tokens["member"]
    rag = await new_rag(connect, editor, world.tenant_id, embedder, sharing={"shareToAll": True})
    grant = {
        "id": rag["id"],
        "subject": {"type": "SUBJECT_TYPE_USER", "id": world.user_ids["member"]},
        "role": "DEPLOYMENT_ROLE_ADMIN",
    }
    must(await connect.call(f"{RAGS}/AddRagPermission", grant, token=editor))
    current = must(await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=member, get=True))["rag"]
    assert current["sharing"] == {"shareToAll": True}
    renamed = must(await connect.call(f"{RAGS}/UpdateRag", {"rag": {**current, "displayName": "B"}}, token=member))
    assert (renamed["rag"]["displayName"], renamed["rag"]["sharing"]) == ("B", {"shareToAll": True})


async def test_only_a_change_that_widens_sharing_needs_the_capability(connect: ConnectJsonCaller, world: World) -> None:
    """The same rule for another kind, through its update: a Member administering an MCP server may send its
    shareToAll back as it is, or turn it off, but not turn it on."""
    editor, member = world.tokens["editor"], world.tokens["member"]
    name = f"shr-{secrets.token_hex(4)}"
    server = {
        "name": name,
        "serverUrl": "https://tools.example.test/mcp",
        "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"},
        "sharing": {"shareToAll": True},
    }
    must(
        await connect.call(
            f"{MCP}/CreateExternalMcpServer", {"tenantId": world.tenant_id, "externalMcpServer": server}, token=editor
        )
    )
    grant = {"name": name, "subject": {"type": "SUBJECT_TYPE_USER", "id": world.user_ids["member"]}}
    must(
        await connect.call(
            f"{MCP}/AddExternalMcpServerPermission", {**grant, "role": "DEPLOYMENT_ROLE_ADMIN"}, token=editor
        )
    )

    def update(share_to_all: bool) -> dict[str, Any]:
        return {"externalMcpServer": {"name": name, "displayName": "T", "sharing": {"shareToAll": share_to_all}}}

    unchanged = must(await connect.call(f"{MCP}/UpdateExternalMcpServer", update(True), token=member))
    assert unchanged["externalMcpServer"]["sharing"] == {"shareToAll": True}
    must(await connect.call(f"{MCP}/UpdateExternalMcpServer", update(False), token=member))
    refused = await connect.call(f"{MCP}/UpdateExternalMcpServer", update(True), token=member)
    assert refused.code == "permission_denied" and "capability share" in refused.message, refused


def _list_methods() -> list[tuple[str, bool]]:
    return [
        (f"{svc.full_name}/{m.name}", str(m.idempotency) == "NO_SIDE_EFFECTS")
        for svc in generated_services()
        for m in service_desc(svc).methods
        if m.name.startswith("List")
    ]


async def test_a_tenant_header_of_a_non_member_is_refused_by_every_list(
    connect: ConnectJsonCaller, world: World
) -> None:
    methods = _list_methods()
    assert f"{MCP}/ListExternalMcpServers" in {path for path, _ in methods}
    failures = []
    for path, read in methods:
        result = await connect.call(path, {}, token=world.tokens["outsider"], tenant=world.tenant_id, get=read)
        if result.code != "permission_denied":
            failures.append(f"{path}: {result.code} {result.body}")
    assert failures == [], "\n".join(failures)


async def test_a_members_tenant_header_still_scopes_the_list(connect: ConnectJsonCaller, world: World) -> None:
    listed = await connect.call(
        f"{MCP}/ListExternalMcpServers", {}, token=world.tokens["member"], tenant=world.tenant_id
    )
    assert listed.ok, listed
    outsider = world.tokens["outsider"]
    own = await connect.call(f"{MCP}/ListExternalMcpServers", {}, token=outsider, tenant=world.other_tenant_id)
    assert own.ok, own


async def test_granting_another_tenants_subject_answers_as_an_unknown_id(
    connect: ConnectJsonCaller, world: World
) -> None:
    """A grant naming another tenant's group, service account, key or the tenant itself is refused exactly as an id
    that exists nowhere: a distinct answer told a tenant admin which of another tenant's ids exist."""
    admin, outsider, theirs = world.tokens["admin"], world.tokens["outsider"], world.other_tenant_id
    name = await _tenant_model(connect, world)
    group = must(await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": theirs, "name": "g"}, token=outsider))
    account = must(
        await connect.call(f"{ACCOUNTS}/CreateServiceAccount", {"tenantId": theirs, "name": "sa"}, token=outsider)
    )
    key = must(
        await connect.call(
            f"{KEYS}/CreateApiKey", {"tenantId": theirs, "type": "API_KEY_TYPE_PERSONAL", "name": "k"}, token=outsider
        )
    )
    subjects = {
        "SUBJECT_TYPE_GROUP": group["group"]["id"],
        "SUBJECT_TYPE_SERVICE_ACCOUNT": account["serviceAccount"]["id"],
        "SUBJECT_TYPE_API_KEY": key["apiKey"]["id"],
        "SUBJECT_TYPE_TENANT": theirs,
    }
    for subject_type, existing in subjects.items():
        answers = []
        for subject_id in (existing, f"{existing}0"):
            body = {"name": name, "subject": {"type": subject_type, "id": subject_id}, "role": "DEPLOYMENT_ROLE_READER"}
            result = await connect.call(f"{EXTERNAL}/AddExternalModelPermission", body, token=admin)
            answers.append((result.code, result.message.replace(subject_id, "<id>")))
        assert answers[0] == answers[1] == ("not_found", "subject '<id>' not found"), (subject_type, answers)
