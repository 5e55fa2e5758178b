"""API keys on the management API (issue 9): keys use resources, they never manage anything.

The rule (server.permissions.credentials): a key of any type — personal, service-account, Personal (all resources),
a tenant admin's included — may call reads (answered within its reach), its conversations and the invoker's side of
MCP OAuth; every other method is refused before the body is read. The first test runs every method the server offers
with every usable key kind, so a method added later is covered without anyone adding a row; the others are the
escalations an attacker tried with a key, each with every key type, checking that nothing changed afterwards.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from server.app import generated_services
from tests.clients import ConnectJsonCaller, GrpcioCaller
from tests.gateway_fixtures import Gateway
from tests.matrix import ACCOUNTS, KEYS, USABLE_KEYS, Cast, build_cast
from tests.schema import service_desc
from tests.world import GROUPS, TENANTS, must

CONVERSATIONS = "platform.conversations.v1.ConversationService"
ITEMS = "platform.conversations.v1.ConversationItemService"
MCP = "platform.agents.v1.ExternalMcpServerService"
EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
REFUSAL = "API keys may not call"

# The only methods with side effects a key may call: its conversations and the invoker's side of MCP OAuth.
KEY_WRITES = {
    f"{CONVERSATIONS}/CreateConversation",
    f"{CONVERSATIONS}/UpdateConversation",
    f"{CONVERSATIONS}/DeleteConversation",
    f"{ITEMS}/CreateItems",
    f"{ITEMS}/DeleteItem",
    f"{ITEMS}/TruncateConversation",
    f"{MCP}/GetExternalMcpServerOAuthMetadata",
    f"{MCP}/ExchangeExternalMcpOAuthToken",
}
# Services closed to keys, reads included.
KEY_CLOSED = {
    KEYS,
    ACCOUNTS,
    "switchboard.audit.v1.AuditService",  # the audit trail: sessions only
    "switchboard.console.v1.ConsoleService",  # the console describes signed-in sessions only
    "switchboard.capture.v1.CaptureService",  # content capture: sessions only
    "switchboard.usage.v1.UsageService",  # the usage aggregates: sessions only
}
# Reads closed to keys: the tenant's people (members and invites, a group's members) are never within a key's reach.
PAGES = "switchboard.tenants.v1.TenantListService"  # their pages too, and the pages of the closed services' lists
KEY_CLOSED_READS = {f"{TENANTS}/ListTenantMembers", f"{GROUPS}/ListGroupMembers"} | {
    f"{PAGES}/{m}" for m in ("ListTenantMembers", "ListGroupMembers", "ListApiKeys", "ListServiceAccounts")
}


def _every_method() -> list[tuple[str, str, bool]]:
    return [
        (svc.full_name, m.name, str(m.idempotency) == "NO_SIDE_EFFECTS")
        for svc in generated_services()
        for m in service_desc(svc).methods
    ]


def _key_may_call(service: str, method: str, read: bool) -> bool:
    path = f"{service}/{method}"
    if service in KEY_CLOSED:
        return False
    return path not in KEY_CLOSED_READS if read else path in KEY_WRITES


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


@pytest_asyncio.fixture(scope="module")
async def escalation_cast(server: Any) -> Cast:
    """One cast for every escalation attempt: each is refused, and each test compares the tenant before and after
    its own attempts, so what another test did cannot hide a change."""
    return await build_cast(server, ConnectJsonCaller(server.base_url))


async def test_every_management_method_refuses_keys_but_reads_conversations_and_mcp_oauth(
    connect: ConnectJsonCaller, cast: Cast
) -> None:
    methods = _every_method()
    assert len(methods) > 100  # every service of the contract, found in the generated code
    failures = []
    for service, method, read in methods:
        for kind in USABLE_KEYS:
            path = f"{service}/{method}"
            result = await connect.call(path, {"tenantId": cast.tenant_id}, token=cast.tokens[kind], get=read)
            refused = result.code == "permission_denied" and REFUSAL in result.message
            if _key_may_call(service, method, read) == refused or result.code == "internal":
                failures.append(f"{path} as {kind}: {result.code} ({result.message})")
    assert failures == [], "\n".join(failures)


async def test_sessions_are_not_refused_by_the_key_rule(connect: ConnectJsonCaller, cast: Cast) -> None:
    """The rule is about keys: the same calls in their owners' sessions reach the methods' own gates."""
    for service, method, read in _every_method():
        result = await connect.call(
            f"{service}/{method}", {"tenantId": cast.tenant_id}, token=cast.tokens["admin"], get=read
        )
        assert REFUSAL not in result.message, f"{service}/{method}"


# --- escalations, each tried with every key type -------------------------------------------------------------------

Attempt = Callable[[Cast, ConnectJsonCaller, str], Awaitable[tuple[str, dict[str, Any]]]]


async def _own_key(cast: Cast, kind: str) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "apiKeyId": cast.key_ids[kind]}


async def create_all_resources_key(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    body = {"tenantId": cast.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "escape"}
    return f"{KEYS}/CreateApiKey", body


async def create_sibling_key(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    grant = [{"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": cast.granted_model}]
    body: dict[str, Any] = {"tenantId": cast.tenant_id, "name": "sibling", "grants": grant}
    if kind == "key_sa":
        body |= {"type": "API_KEY_TYPE_SERVICE_ACCOUNT", "serviceAccountId": cast.service_account_id}
    else:
        body["type"] = "API_KEY_TYPE_PERSONAL"
    return f"{KEYS}/CreateApiKey", body


async def extend_own_expiry(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    return f"{KEYS}/UpdateApiKey", {**await _own_key(cast, kind), "expireTime": "2099-01-01T00:00:00Z"}


async def grant_itself_more(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    grant = {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": cast.other_model}
    return f"{KEYS}/AddApiKeyGrant", {**await _own_key(cast, kind), "grant": grant}


async def attach_itself_to_group(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    return f"{KEYS}/AttachApiKeyToGroup", {**await _own_key(cast, kind), "groupId": cast.group_id}


async def add_outsider_as_admin(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    user = cast.world.user_ids["outsider"]
    return f"{TENANTS}/AddTenantMember", {"tenantId": cast.tenant_id, "userId": user, "role": "TENANT_ROLE_ADMIN"}


async def create_service_account(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    return f"{ACCOUNTS}/CreateServiceAccount", {"tenantId": cast.tenant_id, "name": f"sa-{secrets.token_hex(3)}"}


async def disable_someone_elses_key(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    victim = "key_granted" if kind != "key_granted" else "key_personal"
    return f"{KEYS}/DisableApiKey", await _own_key(cast, victim)


async def join_a_group(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    user = cast.world.user_ids["editor"]
    return f"{GROUPS}/AddGroupMember", {"tenantId": cast.tenant_id, "groupId": cast.group_id, "userId": user}


async def create_tenant_model(cast: Cast, connect: ConnectJsonCaller, kind: str) -> tuple[str, dict[str, Any]]:
    name = f"esc-{secrets.token_hex(4)}"
    model = {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "m",
        "baseUrl": "https://models.example.test/v1",
        "publicModelId": name,
    }
    return f"{EXTERNAL}/CreateTenantExternalModel", {"tenantId": cast.tenant_id, "externalModel": model}


ATTEMPTS = [
    create_all_resources_key,
    create_sibling_key,
    extend_own_expiry,
    grant_itself_more,
    attach_itself_to_group,
    add_outsider_as_admin,
    create_service_account,
    disable_someone_elses_key,
    join_a_group,
    create_tenant_model,
]


async def _state(connect: ConnectJsonCaller, cast: Cast) -> dict[str, Any]:
    """What an escalation could change, read in the tenant admin's session."""
    admin = cast.world.tokens["admin"]
    listed = must(await connect.call(f"{KEYS}/ListApiKeys", {"tenantId": cast.tenant_id}, token=admin, get=True))
    keys = [{k: v for k, v in key.items() if k != "lastUsedTime"} for key in listed["apiKeys"]]  # using a key is fine
    members = must(
        await connect.call(f"{TENANTS}/ListTenantMembers", {"tenantId": cast.tenant_id}, token=admin, get=True)
    )
    accounts = must(
        await connect.call(f"{ACCOUNTS}/ListServiceAccounts", {"tenantId": cast.tenant_id}, token=admin, get=True)
    )
    group = {"tenantId": cast.tenant_id, "groupId": cast.group_id}
    group_members = must(await connect.call(f"{GROUPS}/ListGroupMembers", group, token=admin, get=True))
    models = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=admin, get=True))
    return {"keys": keys, "members": members, "accounts": accounts, "group": group_members, "models": models}


@pytest.mark.parametrize("attempt", ATTEMPTS, ids=lambda a: a.__name__)
async def test_no_key_escalates(connect: ConnectJsonCaller, escalation_cast: Cast, attempt: Attempt) -> None:
    """Each attempt, with every key type (a tenant admin's personal and all-resources keys, an Editor's key granted
    one model, a service-account key), is refused and leaves the tenant exactly as it was."""
    cast = escalation_cast
    before = await _state(connect, cast)
    for kind in USABLE_KEYS:
        path, body = await attempt(cast, connect, kind)
        result = await connect.call(path, body, token=cast.tokens[kind])
        assert result.code == "permission_denied", (kind, result)
        assert REFUSAL in result.message, (kind, result)
    assert await _state(connect, cast) == before


async def test_a_session_still_does_what_its_keys_may_not(connect: ConnectJsonCaller, cast: Cast) -> None:
    """The same attempts are legitimate for the owners' sessions (so the refusals above are the key rule's)."""
    admin = cast.world.tokens["admin"]
    for attempt in (create_all_resources_key, extend_own_expiry, attach_itself_to_group, create_service_account):
        path, body = await attempt(cast, connect, "key_personal")
        assert (await connect.call(path, body, token=admin)).ok, path


async def test_keys_keep_their_gateway_reach(gateway: Gateway, connect: ConnectJsonCaller, cast: Cast) -> None:
    """The rule changes nothing on the gateway: a key granted one model lists exactly that model."""
    for kind in ("key_personal", "key_granted", "key_sa"):
        headers = {"Authorization": f"Bearer {cast.tokens[kind]}"}
        async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/models", headers=headers) as resp:
            assert resp.status == 200, kind
            ids = {m["id"] for m in (await resp.json())["data"]}
        assert ids == {cast.granted_model}, kind
    headers = {"Authorization": f"Bearer {cast.tokens['key_all']}"}
    async with aiohttp.ClientSession() as http, http.get(f"{gateway.base_url}/models", headers=headers) as resp:
        ids = {m["id"] for m in (await resp.json())["data"]}
    assert {cast.granted_model, cast.other_model} <= ids


async def test_keys_read_within_their_reach(connect: ConnectJsonCaller, cast: Cast) -> None:
    """Reads stay open to keys, answered within the key's grants: the granted model, never the other one."""
    for kind in ("key_personal", "key_granted", "key_sa"):
        token = cast.tokens[kind]
        granted = await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", {"name": cast.granted_model}, token=token)
        other = await connect.call(f"{DEPLOYMENTS}/GetModelDeployment", {"name": cast.other_model}, token=token)
        assert (granted.code, other.code) == ("ok", "not_found"), kind
    owned = await connect.call(f"{CONVERSATIONS}/CreateConversation", {}, token=cast.tokens["key_sa"])
    assert owned.ok  # a service account's key owns its conversations


async def test_no_key_lists_the_tenants_people(connect: ConnectJsonCaller, cast: Cast) -> None:
    """A tenant admin's personal key with no grants, like every other key, reads no member list (emails, roles,
    pending invites, group members), although its owner's session does: people are never granted to a key."""
    admin = cast.world.tokens["admin"]
    must(
        await connect.call(
            f"{TENANTS}/InviteTenantMember", {"tenantId": cast.tenant_id, "email": "new@example.com"}, token=admin
        )
    )
    bare = await connect.call(
        f"{KEYS}/CreateApiKey",
        {"tenantId": cast.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "bare"},
        token=admin,
    )
    tokens = {"bare": must(bare)["secret"], **{kind: cast.tokens[kind] for kind in USABLE_KEYS}}
    members = {"tenantId": cast.tenant_id}
    group = {"tenantId": cast.tenant_id, "groupId": cast.group_id}
    for path, body in ((f"{TENANTS}/ListTenantMembers", members), (f"{GROUPS}/ListGroupMembers", group)):
        listed = must(await connect.call(path, body, token=admin, get=True))
        assert listed.get("members"), path  # there is something to see, and the owner's session sees it
        for kind, token in tokens.items():
            refused = await connect.call(path, body, token=token, get=True)
            assert refused.code == "permission_denied" and REFUSAL in refused.message, (path, kind, refused)
            assert "example.com" not in str(refused.body)


async def test_the_rule_holds_over_grpc(server: Any, cast: Cast) -> None:
    """The rule lives in the interceptor chain every protocol shares, not in the Connect JSON path."""
    grpc = GrpcioCaller(server.base_url)
    for attempt in (create_sibling_key, add_outsider_as_admin):
        path, body = await attempt(cast, grpc, "key_personal")  # type: ignore[arg-type]
        refused = await grpc.call(path, body, token=cast.tokens["key_personal"])
        assert refused.code == "permission_denied" and REFUSAL in refused.message, refused
    read = await grpc.call(
        f"{DEPLOYMENTS}/GetModelDeployment", {"name": cast.granted_model}, token=cast.tokens["key_sa"]
    )
    assert read.ok, read
