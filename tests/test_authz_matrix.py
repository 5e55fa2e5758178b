"""Authorization matrix rows for GroupService, TenantService, ApiKeyService and ServiceAccountService."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import ACCOUNTS, KEYS, Cast, Row, allow, build_cast, check_rows, fixed
from tests.world import GROUPS, TENANTS, USERS, must

# Only sessions administer: a tenant admin's own keys (key_personal, key_all) are refused every write.
ADMINS = ("admin", "platform_admin")
TENANT_USERS = ("admin", "editor", "member", "group_member", "creator")
READERS = (*TENANT_USERS, "platform_admin", "key_personal", "key_granted", "key_all")


def _name() -> str:
    return f"m-{secrets.token_hex(4)}"


async def _new_group(cast: Cast, connect: ConnectJsonCaller, *, with_member: bool = False) -> dict[str, Any]:
    group = must(
        await connect.call(
            f"{GROUPS}/CreateGroup", {"tenantId": cast.tenant_id, "name": _name()}, token=cast.world.tokens["admin"]
        )
    )["group"]
    body = {"tenantId": cast.tenant_id, "groupId": group["id"], "userId": cast.world.user_ids["member"]}
    if with_member:
        must(await connect.call(f"{GROUPS}/AddGroupMember", body, token=cast.world.tokens["admin"]))
    return body


async def create_group(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "name": _name()}


async def fresh_group(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return await _new_group(cast, connect)


async def group_with_member(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return await _new_group(cast, connect, with_member=True)


async def matrix_group(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "groupId": cast.group_id}


async def new_tenant(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"name": _name()}


async def new_user(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "userId": f"u-{secrets.token_hex(4)}", "role": "TENANT_ROLE_MEMBER"}


async def new_invite(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "email": f"{secrets.token_hex(4)}@example.com"}


async def personal_key(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": _name()}


async def editors_key(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    created = must(
        await connect.call(f"{KEYS}/CreateApiKey", await personal_key(cast, connect), token=cast.world.tokens["editor"])
    )
    return {"tenantId": cast.tenant_id, "apiKeyId": created["apiKey"]["id"]}


async def new_account(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "name": _name()}


ROWS = [
    # GroupService: writes need tenant admin; reads need group can_read.
    Row(f"{GROUPS}/CreateGroup", create_group, allow(*ADMINS)),
    Row(f"{GROUPS}/DeleteGroup", fresh_group, allow(*ADMINS)),
    Row(f"{GROUPS}/AddGroupMember", fresh_group, allow(*ADMINS)),
    Row(f"{GROUPS}/RemoveGroupMember", group_with_member, allow(*ADMINS)),
    Row(f"{GROUPS}/ListGroups", fixed(), allow(*READERS), get=True),
    Row(
        f"{GROUPS}/ListGroupMembers",
        matrix_group,
        allow("admin", "group_member", "platform_admin"),  # no key lists people, not even an admin's key_all
        get=True,
    ),
    # TenantService.
    Row(f"{TENANTS}/CreateTenant", new_tenant, allow("platform_admin")),
    Row(f"{TENANTS}/GetTenant", fixed(), allow(*READERS), get=True),
    Row(f"{TENANTS}/ListTenants", fixed(), allow(*READERS, "outsider", "key_sa"), get=True),
    Row(f"{TENANTS}/UpdateTenant", fixed(displayName="Renamed"), allow(*ADMINS)),
    Row(f"{TENANTS}/AddTenantMember", new_user, allow(*ADMINS)),
    Row(f"{TENANTS}/InviteTenantMember", new_invite, allow(*ADMINS)),
    Row(
        f"{TENANTS}/ListTenantMembers",
        fixed(),
        allow("admin", "editor", "creator", "platform_admin"),  # sessions only: a key never lists people
        get=True,
    ),
    Row(f"{USERS}/GetCurrentUser", fixed(), allow(*READERS, "outsider", "key_sa"), get=True),
    # ApiKeyService: personal keys for any member; never from any key (keys never manage keys, nor read them).
    Row(f"{KEYS}/CreateApiKey", personal_key, allow(*TENANT_USERS)),
    Row(f"{KEYS}/ListApiKeys", fixed(), allow(*TENANT_USERS, "platform_admin"), get=True),
    Row(
        f"{KEYS}/GetApiKey",
        editors_key,
        {
            **allow("editor", "admin", "platform_admin"),
            **allow("member", "group_member", "creator", "outsider", code="not_found"),
        },
        get=True,
    ),
    Row(
        f"{KEYS}/DisableApiKey",
        editors_key,
        {
            **allow("editor", "admin", "platform_admin"),
            **allow("member", "group_member", "creator", "outsider", code="not_found"),
        },
    ),
    # ServiceAccountService: tenant admins only.
    Row(f"{ACCOUNTS}/CreateServiceAccount", new_account, allow(*ADMINS)),
    Row(f"{ACCOUNTS}/ListServiceAccounts", fixed(), allow(*ADMINS), get=True),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)
