"""TenantService and UserService: members by id, invites by email, capabilities, the last admin."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.world import TENANTS, USERS, World, make_world, must


@pytest.fixture
async def world(server: Any, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def test_an_invite_becomes_a_membership_at_first_sign_in(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    email = f"new-{secrets.token_hex(3)}@Example.com"
    invited = must(
        await connect.call(
            f"{TENANTS}/InviteTenantMember", {"tenantId": world.tenant_id, "email": email}, token=world.tokens["admin"]
        )
    )["member"]
    assert invited == {"role": "TENANT_ROLE_EDITOR", "pending": True, "email": email.lower()}  # Editor by default
    user_id = f"newcomer-{secrets.token_hex(3)}"
    before = await connect.call(
        f"{TENANTS}/GetTenant", {"tenantId": world.tenant_id}, token=server.token(user_id, email=email.lower())
    )
    assert before.ok, before  # the first signed-in call turned the invite into a membership
    me = must(await connect.call(f"{USERS}/GetCurrentUser", {}, token=server.token(user_id, email=email.lower())))
    assert me["memberships"] == [
        {"tenantId": world.tenant_id, "tenantName": me["memberships"][0]["tenantName"], "role": "TENANT_ROLE_EDITOR"}
    ]
    members = must(
        await connect.call(f"{TENANTS}/ListTenantMembers", {"tenantId": world.tenant_id}, token=world.tokens["admin"])
    )["members"]
    assert [m for m in members if m.get("pending")] == []
    assert any(m["userId"] == user_id and m["role"] == "TENANT_ROLE_EDITOR" for m in members)


async def test_invites_can_name_a_role_and_be_withdrawn(connect: ConnectJsonCaller, world: World) -> None:
    email = f"viewer-{secrets.token_hex(3)}@example.com"
    body = {"tenantId": world.tenant_id, "email": email, "role": "TENANT_ROLE_MEMBER"}
    assert (
        must(await connect.call(f"{TENANTS}/InviteTenantMember", body, token=world.tokens["admin"]))["member"]["role"]
        == "TENANT_ROLE_MEMBER"
    )
    again = await connect.call(f"{TENANTS}/InviteTenantMember", body, token=world.tokens["admin"])
    assert again.code == "already_exists"
    bad = await connect.call(
        f"{TENANTS}/InviteTenantMember", {**body, "email": "not-an-email"}, token=world.tokens["admin"]
    )
    assert bad.code == "invalid_argument" and "email" in bad.message
    must(
        await connect.call(
            f"{TENANTS}/RemoveTenantMember", {"tenantId": world.tenant_id, "email": email}, token=world.tokens["admin"]
        )
    )
    members = must(
        await connect.call(f"{TENANTS}/ListTenantMembers", {"tenantId": world.tenant_id}, token=world.tokens["admin"])
    )["members"]
    assert email not in [m.get("email") for m in members]


async def test_listing_members_is_a_capability(connect: ConnectJsonCaller, world: World) -> None:
    body = {"tenantId": world.tenant_id}
    assert (await connect.call(f"{TENANTS}/ListTenantMembers", body, token=world.tokens["editor"])).ok
    refused = await connect.call(f"{TENANTS}/ListTenantMembers", body, token=world.tokens["member"])
    assert refused.code == "permission_denied" and "list_members" in refused.message


async def test_members_by_id_roles_and_the_last_admin(connect: ConnectJsonCaller, world: World) -> None:
    admin = world.tokens["admin"]
    user = f"joiner-{secrets.token_hex(3)}"
    added = must(
        await connect.call(f"{TENANTS}/AddTenantMember", {"tenantId": world.tenant_id, "userId": user}, token=admin)
    )["member"]
    assert added["role"] == "TENANT_ROLE_EDITOR"
    dup = await connect.call(f"{TENANTS}/AddTenantMember", {"tenantId": world.tenant_id, "userId": user}, token=admin)
    assert dup.code == "already_exists"
    promoted = must(
        await connect.call(
            f"{TENANTS}/UpdateTenantMemberRole",
            {"tenantId": world.tenant_id, "userId": user, "role": "TENANT_ROLE_MEMBER"},
            token=admin,
        )
    )["member"]
    assert promoted["role"] == "TENANT_ROLE_MEMBER"
    last = await connect.call(
        f"{TENANTS}/UpdateTenantMemberRole",
        {"tenantId": world.tenant_id, "userId": world.user_ids["admin"], "role": "TENANT_ROLE_EDITOR"},
        token=admin,
    )
    assert last.code == "failed_precondition" and "admin" in last.message
    leave = await connect.call(
        f"{TENANTS}/RemoveTenantMember", {"tenantId": world.tenant_id, "userId": world.user_ids["admin"]}, token=admin
    )
    assert leave.code == "failed_precondition"
    must(
        await connect.call(f"{TENANTS}/RemoveTenantMember", {"tenantId": world.tenant_id, "userId": user}, token=admin)
    )
    gone = await connect.call(
        f"{TENANTS}/RemoveTenantMember", {"tenantId": world.tenant_id, "userId": user}, token=admin
    )
    assert gone.code == "not_found"


async def test_tenants_are_created_by_platform_operators_with_valid_names(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    bad = await connect.call(f"{TENANTS}/CreateTenant", {"name": "Not Valid!"}, token=server.admin_token)
    assert bad.code == "invalid_argument" and "name" in bad.message
    tenant = must(await connect.call(f"{TENANTS}/GetTenant", {"tenantId": world.tenant_id}, token=server.admin_token))[
        "tenant"
    ]
    dup = await connect.call(f"{TENANTS}/CreateTenant", {"name": tenant["name"]}, token=server.admin_token)
    assert dup.code == "already_exists"
    mine = must(await connect.call(f"{TENANTS}/ListTenants", {}, token=world.tokens["member"]))["tenants"]
    assert [t["id"] for t in mine] == [world.tenant_id]
    unknown = await connect.call(f"{TENANTS}/GetTenant", {"tenantId": "ten_missing"}, token=server.admin_token)
    assert unknown.code == "not_found"


async def test_a_new_users_concurrent_first_requests_all_succeed(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    email = f"rush-{secrets.token_hex(3)}@example.com"
    must(
        await connect.call(
            f"{TENANTS}/InviteTenantMember", {"tenantId": world.tenant_id, "email": email}, token=world.tokens["admin"]
        )
    )
    token = server.token(f"rush-{secrets.token_hex(3)}", email=email)
    results = await asyncio.gather(*(connect.call(f"{USERS}/GetCurrentUser", {}, token=token) for _ in range(10)))
    assert [r.code for r in results] == ["ok"] * 10
    memberships = must(await connect.call(f"{USERS}/GetCurrentUser", {}, token=token))["memberships"]
    assert [m["tenantId"] for m in memberships] == [world.tenant_id]


async def test_concurrent_removals_cannot_remove_the_last_admin(server: Any, connect: ConnectJsonCaller) -> None:
    """The last-admin rule counts admins and then deletes: without the tenant locked first, two concurrent removals
    of a tenant's two admins both counted two, and the tenant was left with none (both backends, every round)."""
    operator = server.admin_token
    outcomes = []
    for _ in range(2):
        tag = secrets.token_hex(3)
        tenant = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": f"race-{tag}"}, token=operator))
        tenant_id = tenant["tenant"]["id"]
        admins = [f"a-{tag}", f"b-{tag}"]
        for user in admins:
            body = {"tenantId": tenant_id, "userId": user, "role": "TENANT_ROLE_ADMIN"}
            must(await connect.call(f"{TENANTS}/AddTenantMember", body, token=operator))
        removals = await asyncio.gather(
            *(
                connect.call(f"{TENANTS}/RemoveTenantMember", {"tenantId": tenant_id, "userId": u}, token=operator)
                for u in admins
            )
        )
        members = must(await connect.call(f"{TENANTS}/ListTenantMembers", {"tenantId": tenant_id}, token=operator))
        left = [m["userId"] for m in members.get("members", []) if m["role"] == "TENANT_ROLE_ADMIN"]
        outcomes.append(([r.code for r in removals], left))
    assert all(left for _, left in outcomes), f"tenants left without an admin: {outcomes}"


async def test_invite_email_is_bounded(connect: ConnectJsonCaller, world: World) -> None:
    """An email is at most 254 characters (RFC 5321), checked before the pattern: a 16 KB address was stored
    (SQLite) or internal (PostgreSQL), and a malformed one cost seconds of the server's loop (quadratic)."""
    admin = world.tokens["admin"]
    long_email = "a@b.example." + secrets.token_hex(8000)
    stored = await connect.call(
        f"{TENANTS}/InviteTenantMember", {"tenantId": world.tenant_id, "email": long_email}, token=admin
    )
    assert stored.code == "invalid_argument" and "email" in stored.message, (stored.code, stored.message[:120])
    slow = await connect.call(
        f"{TENANTS}/InviteTenantMember", {"tenantId": world.tenant_id, "email": "a@" + "." * 16000 + " x"}, token=admin
    )
    assert (slow.code, slow.message) == ("invalid_argument", "email must be at most 254 characters"), slow


async def test_member_user_id_is_bounded(connect: ConnectJsonCaller, world: World) -> None:
    """A user id is at most 128 characters, as the tables keep it: 10,000 were stored on SQLite and internal on
    PostgreSQL."""
    body = {"tenantId": world.tenant_id, "userId": secrets.token_hex(5000), "role": "TENANT_ROLE_MEMBER"}
    result = await connect.call(f"{TENANTS}/AddTenantMember", body, token=world.tokens["admin"])
    assert result.code == "invalid_argument" and "user_id" in result.message, (result.code, result.message[:120])


async def test_tenant_fields_a_scoped_list_and_a_members_invite(
    server: Any, connect: ConnectJsonCaller, world: World
) -> None:
    """CreateTenant refuses the display names UpdateTenant refuses (a control character was stored); a scoped
    session lists its tenant alone, an operator's too; inviting a member's email again names `email`."""
    body = {"name": f"dn-{secrets.token_hex(3)}", "displayName": "Acme\nCorp"}
    bad = await connect.call(f"{TENANTS}/CreateTenant", body, token=server.admin_token)
    assert bad.code == "invalid_argument" and "display_name" in bad.message, bad
    scoped = must(await connect.call(f"{TENANTS}/ListTenants", {}, token=server.admin_token, tenant=world.tenant_id))
    assert [t["id"] for t in scoped["tenants"]] == [world.tenant_id]
    email = f"twice-{secrets.token_hex(3)}@example.com"
    token = server.token(f"twice-{secrets.token_hex(3)}", email=email)
    must(await connect.call(f"{USERS}/GetCurrentUser", {}, token=token))  # signed in: known by email
    invite = {"tenantId": world.tenant_id, "email": email}
    must(await connect.call(f"{TENANTS}/InviteTenantMember", invite, token=world.tokens["admin"]))
    again = await connect.call(f"{TENANTS}/InviteTenantMember", invite, token=world.tokens["admin"])
    assert (again.code, again.message) == ("already_exists", f"{email} is already a member of this tenant"), again
