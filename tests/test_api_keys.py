"""API keys and service accounts through the real server, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from server import permissions
from server.domain.principal import Principal
from server.store.db import Database as Store
from server.store.models import ApiKeyRow
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database
from tests.replicas import two_replicas
from tests.world import GROUPS, TENANTS, USERS, World, make_world, must

KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"
PERSONAL, SERVICE_ACCOUNT, ALL_RESOURCES = (
    "API_KEY_TYPE_PERSONAL",
    "API_KEY_TYPE_SERVICE_ACCOUNT",
    "API_KEY_TYPE_PERSONAL_ALL_RESOURCES",
)


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _key(connect: ConnectJsonCaller, world: World, person: str, key_type: str = PERSONAL, **extra: Any) -> dict:
    body = {"tenantId": world.tenant_id, "type": key_type, "name": f"key-{secrets.token_hex(3)}", **extra}
    return must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens[person]))


async def _whoami(connect: ConnectJsonCaller, secret: str) -> Result:
    return await connect.call(f"{USERS}/GetCurrentUser", {}, token=secret, get=True)


async def _settles(connect: ConnectJsonCaller, secret: str, *, accepted: bool) -> Result:
    """Key changes reach a replica within the verifier's cache bound (1 s in tests): poll, bounded, for the outcome."""
    result = await _whoami(connect, secret)
    for _ in range(50):
        if result.ok == accepted:
            break
        await asyncio.sleep(0.1)
        result = await _whoami(connect, secret)
    return result


async def _key_call(
    connect: ConnectJsonCaller, world: World, method: str, key_id: str, person: str = "editor", **extra: Any
) -> Result:
    body = {"tenantId": world.tenant_id, "apiKeyId": key_id, **extra}
    return await connect.call(f"{KEYS}/{method}", body, token=world.tokens[person])


async def test_personal_key_is_shown_once_stored_hashed_and_authenticates(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    created = await _key(connect, world, "editor")
    secret, key = created["secret"], created["apiKey"]
    assert secret.startswith("sb_") and key["prefix"] == secret[:10]
    assert key["type"] == PERSONAL and key["state"] == "API_KEY_STATE_ACTIVE"
    assert key["ownerUserId"] == world.user_ids["editor"]
    got = must(await _key_call(connect, world, "GetApiKey", key["id"]))
    assert secret not in str(got) and "secret" not in got
    me = must(await _whoami(connect, secret))
    assert me["apiKeyId"] == key["id"] and me["tenantId"] == world.tenant_id
    assert me["user"]["userId"] == world.user_ids["editor"]
    store = Store(server.settings.database_url)
    try:
        async with store.read() as session:
            row = await session.scalar(select(ApiKeyRow).where(ApiKeyRow.id == key["id"]))
            assert row is not None
            assert secret.encode() not in row.secret_hash and all(secret not in str(v) for v in vars(row).values())
    finally:
        await store.close()


async def test_disable_enable_revoke(connect: ConnectJsonCaller, world: World) -> None:
    created = await _key(connect, world, "editor")
    secret, key_id = created["secret"], created["apiKey"]["id"]
    unknown = await _whoami(connect, "sb_" + secrets.token_urlsafe(32))
    assert unknown.code == "unauthenticated"
    assert must(await _key_call(connect, world, "DisableApiKey", key_id))["apiKey"]["state"] == "API_KEY_STATE_DISABLED"
    refused = await _settles(connect, secret, accepted=False)
    assert (refused.code, refused.message) == (unknown.code, unknown.message)  # no hint of why
    assert must(await _key_call(connect, world, "EnableApiKey", key_id))["apiKey"]["state"] == "API_KEY_STATE_ACTIVE"
    assert (await _settles(connect, secret, accepted=True)).ok  # the same secret works again
    must(await _key_call(connect, world, "RevokeApiKey", key_id))
    revoked = await _settles(connect, secret, accepted=False)
    assert (revoked.code, revoked.message) == (unknown.code, unknown.message)
    again = await _key_call(connect, world, "EnableApiKey", key_id)
    assert again.code == "failed_precondition"
    rename = await _key_call(connect, world, "UpdateApiKey", key_id, name="new name")
    assert rename.code == "failed_precondition" and "revoked" in rename.message
    listed = must(
        await connect.call(f"{KEYS}/ListApiKeys", {"tenantId": world.tenant_id}, token=world.tokens["editor"])
    )
    assert key_id not in [k["id"] for k in listed.get("apiKeys", [])]
    with_revoked = must(
        await connect.call(
            f"{KEYS}/ListApiKeys", {"tenantId": world.tenant_id, "includeRevoked": True}, token=world.tokens["editor"]
        )
    )
    assert key_id in [k["id"] for k in with_revoked["apiKeys"]]


async def test_metadata_updates(connect: ConnectJsonCaller, world: World) -> None:
    key_id = (await _key(connect, world, "editor"))["apiKey"]["id"]
    later = (datetime.now(UTC) + timedelta(days=30)).isoformat().replace("+00:00", "Z")
    updated = must(
        await _key_call(connect, world, "UpdateApiKey", key_id, name="renamed", description="ci", expireTime=later)
    )["apiKey"]
    assert (updated["name"], updated["description"]) == ("renamed", "ci") and "expireTime" in updated
    kept = must(await _key_call(connect, world, "UpdateApiKey", key_id, description="only this"))["apiKey"]
    assert kept["name"] == "renamed"


async def test_invalid_or_past_expiry_is_an_error_on_that_field(connect: ConnectJsonCaller, world: World) -> None:
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat().replace("+00:00", "Z")
    body = {"tenantId": world.tenant_id, "type": PERSONAL, "name": "old", "expireTime": past}
    result = await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["editor"])
    assert result.code == "invalid_argument" and "expire_time" in result.message
    bad = await connect.call(f"{KEYS}/CreateApiKey", {**body, "expireTime": "yesterday"}, token=world.tokens["editor"])
    assert bad.code == "invalid_argument"
    key_id = (await _key(connect, world, "editor"))["apiKey"]["id"]
    update = await _key_call(connect, world, "UpdateApiKey", key_id, expireTime=past)
    assert update.code == "invalid_argument" and "expire_time" in update.message


async def test_expired_keys_stop_working(connect: ConnectJsonCaller, world: World) -> None:
    soon = (datetime.now(UTC) + timedelta(seconds=2)).isoformat().replace("+00:00", "Z")
    secret = (await _key(connect, world, "editor", expireTime=soon))["secret"]
    assert (await _whoami(connect, secret)).ok
    assert (await _settles(connect, secret, accepted=False)).code == "unauthenticated"


async def test_personal_all_resources_keys_read_but_never_administer(connect: ConnectJsonCaller, world: World) -> None:
    secret = (await _key(connect, world, "admin", ALL_RESOURCES))["secret"]
    assert (await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=secret)).ok
    create = await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "nope"}, token=secret)
    assert create.code == "permission_denied"  # its owner is a tenant admin, the key still may not administer
    body = {"tenantId": world.tenant_id, "type": PERSONAL, "name": "child"}
    assert (await connect.call(f"{KEYS}/CreateApiKey", body, token=secret)).code == "permission_denied"
    with_grants = await connect.call(
        f"{KEYS}/CreateApiKey",
        {**body, "type": ALL_RESOURCES, "grants": [{"kind": "RESOURCE_KIND_RAG", "name": "r"}]},
        token=world.tokens["admin"],
    )
    assert with_grants.code == "invalid_argument" and "grants" in with_grants.message


async def test_keys_act_only_in_their_tenant(connect: ConnectJsonCaller, world: World) -> None:
    secret = (await _key(connect, world, "admin"))["secret"]
    other = await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.other_tenant_id}, token=secret)
    assert other.code == "permission_denied"
    scoped = await connect.call(f"{GROUPS}/ListGroups", {}, token=secret)
    assert scoped.ok  # the key's own tenant is implied


async def test_service_accounts_and_their_keys(connect: ConnectJsonCaller, world: World) -> None:
    body = {"tenantId": world.tenant_id, "name": "ci-bot", "description": "builds"}
    assert (
        await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=world.tokens["editor"])
    ).code == "permission_denied"
    account = must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=world.tokens["admin"]))[
        "serviceAccount"
    ]
    dup = await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=world.tokens["admin"])
    assert dup.code == "already_exists"
    refused = await connect.call(
        f"{KEYS}/CreateApiKey",
        {"tenantId": world.tenant_id, "type": SERVICE_ACCOUNT, "name": "k", "serviceAccountId": account["id"]},
        token=world.tokens["editor"],
    )
    assert refused.code == "permission_denied"
    created = await _key(connect, world, "admin", SERVICE_ACCOUNT, serviceAccountId=account["id"])
    me = must(await _whoami(connect, created["secret"]))
    assert me["apiKeyId"] == created["apiKey"]["id"] and "userId" not in me.get("user", {})
    update = {"tenantId": world.tenant_id, "serviceAccountId": account["id"], "description": "deploys"}
    updated = must(await connect.call(f"{ACCOUNTS}/UpdateServiceAccount", update, token=world.tokens["admin"]))
    assert updated["serviceAccount"]["description"] == "deploys"
    listed = must(
        await connect.call(
            f"{ACCOUNTS}/ListServiceAccounts", {"tenantId": world.tenant_id}, token=world.tokens["admin"]
        )
    )
    assert [a["name"] for a in listed["serviceAccounts"]] == ["ci-bot"]
    delete = {"tenantId": world.tenant_id, "serviceAccountId": account["id"]}
    must(await connect.call(f"{ACCOUNTS}/DeleteServiceAccount", delete, token=world.tokens["admin"]))
    assert (await _settles(connect, created["secret"], accepted=False)).code == "unauthenticated"


async def test_owners_and_admins_manage_keys_others_cannot_see_them(connect: ConnectJsonCaller, world: World) -> None:
    key_id = (await _key(connect, world, "editor"))["apiKey"]["id"]
    assert (await _key_call(connect, world, "GetApiKey", key_id, person="member")).code == "not_found"
    assert (await _key_call(connect, world, "DisableApiKey", key_id, person="member")).code == "not_found"
    assert (await _key_call(connect, world, "GetApiKey", key_id, person="admin")).ok
    mine = must(await connect.call(f"{KEYS}/ListApiKeys", {"tenantId": world.tenant_id}, token=world.tokens["member"]))
    assert key_id not in [k["id"] for k in mine.get("apiKeys", [])]
    everyone = must(
        await connect.call(f"{KEYS}/ListApiKeys", {"tenantId": world.tenant_id}, token=world.tokens["admin"])
    )
    assert key_id in [k["id"] for k in everyone["apiKeys"]]
    outsider = await connect.call(
        f"{KEYS}/CreateApiKey",
        {"tenantId": world.tenant_id, "type": PERSONAL, "name": "x"},
        token=world.tokens["outsider"],
    )
    assert outsider.code == "permission_denied"


async def test_group_attachment_follows_list_groups_api_key_attachable(
    connect: ConnectJsonCaller, world: World
) -> None:
    admin = world.tokens["admin"]
    mine = must(
        await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "editors"}, token=admin)
    )["group"]
    other = must(
        await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "others"}, token=admin)
    )["group"]
    must(
        await connect.call(
            f"{GROUPS}/AddGroupMember",
            {"tenantId": world.tenant_id, "groupId": mine["id"], "userId": world.user_ids["editor"]},
            token=admin,
        )
    )
    key_id = (await _key(connect, world, "editor"))["apiKey"]["id"]
    attached = must(await _key_call(connect, world, "AttachApiKeyToGroup", key_id, groupId=mine["id"]))
    assert attached["apiKey"]["groupIds"] == [mine["id"]]
    refused = await _key_call(connect, world, "AttachApiKeyToGroup", key_id, groupId=other["id"])
    assert refused.code == "permission_denied"
    assert (await _key_call(connect, world, "AttachApiKeyToGroup", key_id, person="admin", groupId=other["id"])).ok
    detached = must(await _key_call(connect, world, "DetachApiKeyFromGroup", key_id, groupId=mine["id"]))
    assert detached["apiKey"]["groupIds"] == [other["id"]]


async def test_grants_name_readable_resources(server: Any, connect: ConnectJsonCaller, world: World) -> None:
    store = Store(server.settings.database_url)
    shared = permissions.ResourceRef(permissions.ResourceKind.MODEL_ALIAS, f"alias-{secrets.token_hex(3)}")
    hidden = permissions.ResourceRef(permissions.ResourceKind.MODEL_ALIAS, f"alias-{secrets.token_hex(3)}")
    operator = Principal(user_id="ops", can_manage_models=True)
    try:
        async with store.transaction() as session:
            await permissions.create_resource(
                session, operator, shared, tenant_id=None, sharing=permissions.Sharing(share_to_all=True)
            )
            await permissions.create_resource(session, operator, hidden, tenant_id=None)
    finally:
        await store.close()
    grant = {"kind": "RESOURCE_KIND_MODEL_ALIAS", "name": shared.name}
    key = (await _key(connect, world, "editor", grants=[grant]))["apiKey"]
    assert key["grants"] == [grant]
    must(await _key_call(connect, world, "DisableApiKey", key["id"]))
    enabled = must(await _key_call(connect, world, "EnableApiKey", key["id"]))["apiKey"]
    assert enabled["grants"] == [grant] and enabled["prefix"] == key["prefix"]  # disable/enable keep grants, secret
    invisible = await _key_call(
        connect, world, "AddApiKeyGrant", key["id"], grant={"kind": "RESOURCE_KIND_MODEL_ALIAS", "name": hidden.name}
    )
    assert invisible.code == "not_found"
    removed = must(await _key_call(connect, world, "RemoveApiKeyGrant", key["id"], grant=grant))
    assert removed["apiKey"].get("grants", []) == []
    unset = await _key_call(connect, world, "AddApiKeyGrant", key["id"], grant={"name": shared.name})
    assert unset.code == "invalid_argument"


async def test_revocation_reaches_every_replica_within_the_cache_bound(database: Database) -> None:
    """Two server processes on one PostgreSQL: revoke through one, the other refuses within the bound (1 s here)."""
    async with two_replicas(database) as r:
        created = await _key(r.a, r.world, "editor")
        secret = created["secret"]
        assert (await _whoami(r.b, secret)).ok  # replica B has now cached the key as valid
        must(await _key_call(r.a, r.world, "RevokeApiKey", created["apiKey"]["id"]))
        assert (await _settles(r.b, secret, accepted=False)).code == "unauthenticated"
        assert (await _settles(r.a, secret, accepted=False)).code == "unauthenticated"


async def test_a_removed_member_cannot_re_enable_a_key_the_admin_disabled(
    connect: ConnectJsonCaller, world: World
) -> None:
    """Owning a key is not enough once the owner has left the tenant: a removed member turned back on the key the
    admin disabled after removing them (removal now disables it)."""
    admin = world.tokens["admin"]
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "laptop"}
    key_id = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens["editor"]))["apiKey"]["id"]
    leave = {"tenantId": world.tenant_id, "userId": world.user_ids["editor"]}
    must(await connect.call(f"{TENANTS}/RemoveTenantMember", leave, token=admin))
    ref = {"tenantId": world.tenant_id, "apiKeyId": key_id}
    listed = await connect.call(f"{KEYS}/ListApiKeys", {"tenantId": world.tenant_id}, token=world.tokens["editor"])
    assert listed.code == "permission_denied"  # the ex-member is no longer let into the tenant's keys...
    enabled = await connect.call(f"{KEYS}/EnableApiKey", ref, token=world.tokens["editor"])
    assert enabled.code in ("not_found", "permission_denied"), enabled  # ...but still turns this one back on


async def test_a_deprovisioned_users_keys_stop_working(server: Any, connect: ConnectJsonCaller, world: World) -> None:
    """DeleteUser models deprovisioning at the identity provider: the user's personal keys (which act as them) stop
    with them, while their memberships stay for an admin to remove. They went on working."""
    secret = (await _key(connect, world, "editor"))["secret"]
    assert (await _whoami(connect, secret)).ok
    gone = {"userId": world.user_ids["editor"]}
    must(await connect.call(f"{USERS}/DeleteUser", gone, token=server.admin_token))
    assert (await _whoami(connect, secret)).code == "unauthenticated"
    blank = await connect.call(f"{USERS}/DeleteUser", {"userId": ""}, token=server.admin_token)
    assert (blank.code, blank.message) == ("invalid_argument", "user_id is required")


async def test_grants_and_groups_of_a_new_key_are_bounded(connect: ConnectJsonCaller, world: World) -> None:
    """Each grant and group of CreateApiKey costs queries of its own: their numbers are bounded before any."""
    grant = {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "any"}
    for extra, field in (({"grants": [grant] * 1001}, "grants"), ({"groupIds": ["grp_x"] * 101}, "group_ids")):
        result = await connect.call(
            f"{KEYS}/CreateApiKey",
            {"tenantId": world.tenant_id, "type": PERSONAL, "name": "many", **extra},
            token=world.tokens["admin"],
        )
        assert result.code == "invalid_argument" and field in result.message, result


async def test_a_removed_members_keys_stop_and_can_be_turned_back_on_if_they_return(
    connect: ConnectJsonCaller, world: World
) -> None:
    """Leaving a tenant stops the keys one owns there: a Personal (all resources) key went on reaching what was granted
    to its owner directly, acting in a tenant they had left. Disabled, not revoked: back as a member, they may turn
    them on again."""
    created = await _key(connect, world, "editor", ALL_RESOURCES)
    assert (await _whoami(connect, created["secret"])).ok
    member = {"tenantId": world.tenant_id, "userId": world.user_ids["editor"]}
    must(await connect.call(f"{TENANTS}/RemoveTenantMember", member, token=world.tokens["admin"]))
    assert (await _whoami(connect, created["secret"])).code == "unauthenticated"
    ref = {"tenantId": world.tenant_id, "apiKeyId": created["apiKey"]["id"]}
    got = must(await connect.call(f"{KEYS}/GetApiKey", ref, token=world.tokens["admin"]))["apiKey"]
    assert got["state"] == "API_KEY_STATE_DISABLED"
    again = {**member, "role": "TENANT_ROLE_EDITOR"}
    must(await connect.call(f"{TENANTS}/AddTenantMember", again, token=world.tokens["admin"]))
    must(await connect.call(f"{KEYS}/EnableApiKey", ref, token=world.tokens["editor"]))
    assert (await _whoami(connect, created["secret"])).ok
