"""The per-process caches on the authentication path keep their bounds.

- A verified session token is remembered until its `exp`, never after: an expired token is refused even though the
  process verified it a moment before.
- Tenant roles are cached for the key-cache bound (1 s in tests): a removed member is refused at once by the process
  that removed them and within the bound by every other replica; a lowered role stops granting admin rights the same
  way.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from server.tokens import mint_token
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database, Server
from tests.replicas import two_replicas
from tests.world import GROUPS, TENANTS, USERS, make_world, must


async def _settles(call: Any, *, accepted: bool) -> Result:
    """Poll, bounded (5 s, five times the 1 s bound), until the call's outcome is `accepted`."""
    result: Result = await call()
    for _ in range(50):
        if result.ok == accepted:
            break
        await asyncio.sleep(0.1)
        result = await call()
    return result


async def test_a_verified_token_is_refused_once_it_expires(server: Server, connect: ConnectJsonCaller) -> None:
    token = mint_token(server.settings, user_id="short-lived", ttl_seconds=2)
    for _ in range(3):  # verified, then served from the cache
        assert (await connect.call(f"{USERS}/GetCurrentUser", {}, token=token, get=True)).ok
    expires = time.time() + 2
    await asyncio.sleep(max(0.0, expires - time.time()) + 0.1)
    refused = await connect.call(f"{USERS}/GetCurrentUser", {}, token=token, get=True)
    assert refused.code == "unauthenticated", refused


async def test_removed_member_is_refused_at_once_by_the_process_that_removed_them(
    server: Server, connect: ConnectJsonCaller
) -> None:
    world = await make_world(server, connect)
    editor = world.tokens["editor"]
    listed = await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=editor)
    assert listed.ok, listed  # the editor's role is now cached
    body = {"tenantId": world.tenant_id, "userId": world.user_ids["editor"]}
    must(await connect.call(f"{TENANTS}/RemoveTenantMember", body, token=server.admin_token))
    refused = await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=editor)
    assert refused.code == "permission_denied", refused
    # And a member made admin can act as one at once.
    promote = {"tenantId": world.tenant_id, "userId": world.user_ids["member"], "role": "TENANT_ROLE_ADMIN"}
    group = {"tenantId": world.tenant_id, "name": "made-by-a-new-admin"}
    assert (await connect.call(f"{GROUPS}/CreateGroup", group, token=world.tokens["member"])).code == (
        "permission_denied"
    )
    must(await connect.call(f"{TENANTS}/UpdateTenantMemberRole", promote, token=server.admin_token))
    must(await connect.call(f"{GROUPS}/CreateGroup", group, token=world.tokens["member"]))


async def test_get_current_user_shows_membership_changes_at_once_in_the_process_that_made_them(
    server: Server, connect: ConnectJsonCaller
) -> None:
    """GetCurrentUser's memberships come from the same per-process cache as the roles the gates check."""
    world = await make_world(server, connect)
    admin, user = server.admin_token, world.user_ids["member"]

    async def roles() -> dict[str, str]:
        me = must(await connect.call(f"{USERS}/GetCurrentUser", {}, token=world.tokens["member"], get=True))
        return {m["tenantId"]: m["role"] for m in me.get("memberships", [])}

    assert (await roles())[world.tenant_id] == "TENANT_ROLE_MEMBER"  # now cached
    promote = {"tenantId": world.tenant_id, "userId": user, "role": "TENANT_ROLE_EDITOR"}
    must(await connect.call(f"{TENANTS}/UpdateTenantMemberRole", promote, token=admin))
    assert (await roles())[world.tenant_id] == "TENANT_ROLE_EDITOR"
    second = {"name": f"second-{time.monotonic_ns()}"}
    tenant = must(await connect.call(f"{TENANTS}/CreateTenant", second, token=admin))["tenant"]["id"]
    join = {"tenantId": tenant, "userId": user, "role": "TENANT_ROLE_ADMIN"}
    must(await connect.call(f"{TENANTS}/AddTenantMember", join, token=admin))
    assert (await roles())[tenant] == "TENANT_ROLE_ADMIN"
    must(await connect.call(f"{TENANTS}/DeleteTenant", {"tenantId": tenant}, token=admin))
    assert tenant not in await roles()
    leave = {"tenantId": world.tenant_id, "userId": user}
    must(await connect.call(f"{TENANTS}/RemoveTenantMember", leave, token=admin))
    assert await roles() == {}


async def test_membership_changes_reach_every_replica_within_the_bound(database: Database) -> None:
    """Two server processes on one PostgreSQL: change a membership through one, the other follows within 1 s."""
    async with two_replicas(database) as r:
        editor, admin = r.world.tokens["editor"], r.world.tokens["admin"]

        async def editor_lists() -> Result:
            return await r.b.call(f"{GROUPS}/ListGroups", {"tenantId": r.world.tenant_id}, token=editor)

        async def admin_creates() -> Result:
            body = {"tenantId": r.world.tenant_id, "name": f"g-{time.monotonic_ns()}"}
            return await r.b.call(f"{GROUPS}/CreateGroup", body, token=admin)

        async def editor_sees_the_tenant() -> Result:
            me = must(await r.b.call(f"{USERS}/GetCurrentUser", {}, token=editor, get=True))
            tenants = [m["tenantId"] for m in me.get("memberships", [])]
            return Result("ok" if r.world.tenant_id in tenants else "not_found", me)

        assert (await editor_lists()).ok  # replica B has cached the editor's role
        assert (await editor_sees_the_tenant()).ok  # and memberships
        assert (await admin_creates()).ok  # and the admin's role
        must(
            await r.a.call(
                f"{TENANTS}/RemoveTenantMember",
                {"tenantId": r.world.tenant_id, "userId": r.world.user_ids["editor"]},
                token=r.admin_token,
            )
        )
        promote = {"tenantId": r.world.tenant_id, "userId": r.world.user_ids["member"], "role": "TENANT_ROLE_ADMIN"}
        must(await r.a.call(f"{TENANTS}/UpdateTenantMemberRole", promote, token=r.admin_token))  # keeps an admin
        demote = {"tenantId": r.world.tenant_id, "userId": r.world.user_ids["admin"], "role": "TENANT_ROLE_MEMBER"}
        must(await r.a.call(f"{TENANTS}/UpdateTenantMemberRole", demote, token=r.admin_token))
        started = time.monotonic()
        assert (await _settles(editor_lists, accepted=False)).code == "permission_denied"
        assert not (await _settles(editor_sees_the_tenant, accepted=False)).ok
        assert (await _settles(admin_creates, accepted=False)).code == "permission_denied"
        assert time.monotonic() - started < 3  # the bound is 1 s; the rest is slack for a loaded machine
