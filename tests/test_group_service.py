"""GroupService through three independent clients, on SQLite and PostgreSQL; every gate of the spec has a test."""

from __future__ import annotations

import asyncio
import gzip
import json
import secrets
from collections.abc import Awaitable, Callable

import aiohttp
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from server.domain import groups, tenants
from server.domain.groups import group_lists_info
from server.domain.principal import Principal
from server.errors import FailedPrecondition, NotFound
from server.permissions import TenantRole
from server.store.db import Database
from tests.clients import Caller, ConnectJsonCaller
from tests.conftest import Database as TestDatabase
from tests.conftest import Server
from tests.replicas import two_replicas
from tests.world import GROUPS, USERS, World, make_world, must


@pytest.fixture
async def world(server: object, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _group(connect: ConnectJsonCaller, world: World, name: str | None = None) -> dict:
    body = {"tenantId": world.tenant_id, "name": name or f"team-{secrets.token_hex(3)}"}
    return must(await connect.call(f"{GROUPS}/CreateGroup", body, token=world.tokens["admin"]))["group"]


async def test_admin_manages_groups_through_every_client(caller: Caller, world: World) -> None:
    admin = world.tokens["admin"]
    created = await caller.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "Research"}, token=admin)
    assert created.ok, created
    group = created.body["group"]
    assert group["name"] == "Research"
    assert group["tenantId"] == world.tenant_id
    assert "memberCount" not in group  # filled by list responses only

    add = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids["member"]}
    assert (await caller.call(f"{GROUPS}/AddGroupMember", add, token=admin)).ok

    listed = await caller.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=admin, get=True)
    assert listed.ok, listed
    assert [(g["name"], g.get("memberCount")) for g in listed.body["groups"]] == [("Research", 1)]

    members = await caller.call(
        f"{GROUPS}/ListGroupMembers", {"tenantId": world.tenant_id, "groupId": group["id"]}, token=admin, get=True
    )
    assert members.ok, members
    [member] = members.body["members"]
    assert member["userId"] == world.user_ids["member"]
    assert member["metadata"]["email"] == f"{world.user_ids['member']}@example.com"

    assert (await caller.call(f"{GROUPS}/RemoveGroupMember", add, token=admin)).ok
    delete = {"tenantId": world.tenant_id, "groupId": group["id"]}
    assert (await caller.call(f"{GROUPS}/DeleteGroup", delete, token=admin)).ok
    listed = await caller.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=admin)
    assert listed.body.get("groups", []) == []


async def test_connect_get_serves_reads(connect: ConnectJsonCaller, world: World) -> None:
    await _group(connect, world, "via-get")
    result = await connect.call(
        f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=world.tokens["admin"], get=True
    )
    assert result.ok and [g["name"] for g in result.body["groups"]] == ["via-get"]


async def test_get_is_refused_for_writes(connect: ConnectJsonCaller, world: World) -> None:
    result = await connect.call(
        f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "x"}, token=world.tokens["admin"], get=True
    )
    assert not result.ok


@pytest.mark.parametrize("person", ["editor", "member", "outsider"])
@pytest.mark.parametrize("method", ["CreateGroup", "DeleteGroup", "AddGroupMember", "RemoveGroupMember"])
async def test_writes_need_tenant_admin(connect: ConnectJsonCaller, world: World, person: str, method: str) -> None:
    group = await _group(connect, world)
    membership = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids["member"]}
    body = {
        "CreateGroup": {"tenantId": world.tenant_id, "name": "sneaky"},
        "DeleteGroup": {"tenantId": world.tenant_id, "groupId": group["id"]},
    }.get(method, membership)
    if method == "RemoveGroupMember":
        must(await connect.call(f"{GROUPS}/AddGroupMember", membership, token=world.tokens["admin"]))
    result = await connect.call(f"{GROUPS}/{method}", body, token=world.tokens[person])
    assert result.code == "permission_denied", result
    # Nothing was written by the refused call.
    listed = must(
        await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=world.tokens["admin"])
    )
    names = {g["name"]: g.get("memberCount", 0) for g in listed["groups"]}
    assert "sneaky" not in names
    assert names[group["name"]] == (1 if method == "RemoveGroupMember" else 0)


async def test_unauthenticated_calls_are_refused(caller: Caller, world: World) -> None:
    result = await caller.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id})
    assert result.code == "unauthenticated"
    result = await caller.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token="not-a-jwt")
    assert result.code == "unauthenticated"


async def test_list_admits_members_and_narrows_to_readable_groups(connect: ConnectJsonCaller, world: World) -> None:
    mine = await _group(connect, world, "mine")
    await _group(connect, world, "not-mine")
    body = {"tenantId": world.tenant_id, "groupId": mine["id"], "userId": world.user_ids["member"]}
    must(await connect.call(f"{GROUPS}/AddGroupMember", body, token=world.tokens["admin"]))

    as_member = must(
        await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=world.tokens["member"])
    )
    assert [g["name"] for g in as_member["groups"]] == ["mine"]
    as_admin = must(
        await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=world.tokens["admin"])
    )
    assert [g["name"] for g in as_admin["groups"]] == ["mine", "not-mine"]
    as_editor = must(
        await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=world.tokens["editor"])
    )
    assert as_editor.get("groups", []) == []


async def test_list_refuses_non_members(connect: ConnectJsonCaller, world: World) -> None:
    result = await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=world.tokens["outsider"])
    assert result.code == "permission_denied"


async def test_api_key_attachable_lists_own_groups_or_all_for_admin(connect: ConnectJsonCaller, world: World) -> None:
    mine = await _group(connect, world, "attach-mine")
    await _group(connect, world, "attach-other")
    body = {"tenantId": world.tenant_id, "groupId": mine["id"], "userId": world.user_ids["editor"]}
    must(await connect.call(f"{GROUPS}/AddGroupMember", body, token=world.tokens["admin"]))
    query = {"tenantId": world.tenant_id, "apiKeyAttachable": True}
    as_editor = must(await connect.call(f"{GROUPS}/ListGroups", query, token=world.tokens["editor"]))
    assert [g["name"] for g in as_editor["groups"]] == ["attach-mine"]
    as_admin = must(await connect.call(f"{GROUPS}/ListGroups", query, token=world.tokens["admin"]))
    assert [g["name"] for g in as_admin["groups"]] == ["attach-mine", "attach-other"]


async def test_group_reads_need_group_can_read(connect: ConnectJsonCaller, world: World) -> None:
    group = await _group(connect, world)
    body = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids["member"]}
    must(await connect.call(f"{GROUPS}/AddGroupMember", body, token=world.tokens["admin"]))
    read = {"tenantId": world.tenant_id, "groupId": group["id"]}
    assert (await connect.call(f"{GROUPS}/ListGroupMembers", read, token=world.tokens["member"])).ok
    assert (await connect.call(f"{GROUPS}/ListGroupMembers", read, token=world.tokens["admin"])).ok
    refused = await connect.call(f"{GROUPS}/ListGroupMembers", read, token=world.tokens["editor"])
    assert refused.code == "permission_denied"
    outsider = await connect.call(f"{GROUPS}/ListGroupMembers", read, token=world.tokens["outsider"])
    assert outsider.code == "permission_denied"
    cross = {"tenantId": world.other_tenant_id, "groupId": group["id"]}
    as_outsider_admin = await connect.call(f"{GROUPS}/ListGroupMembers", cross, token=world.tokens["outsider"])
    assert as_outsider_admin.code == "not_found"  # the id exists, but not in the tenant the caller administers


async def test_member_metadata_is_absent_once_the_user_no_longer_resolves(
    server: object, connect: ConnectJsonCaller, world: World
) -> None:
    group = await _group(connect, world)
    for person in ("member", "editor"):
        body = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids[person]}
        must(await connect.call(f"{GROUPS}/AddGroupMember", body, token=world.tokens["admin"]))
    must(await connect.call(f"{USERS}/DeleteUser", {"userId": world.user_ids["editor"]}, token=server.admin_token))  # type: ignore[attr-defined]
    read = {"tenantId": world.tenant_id, "groupId": group["id"]}
    members = must(await connect.call(f"{GROUPS}/ListGroupMembers", read, token=world.tokens["admin"]))["members"]
    by_user = {m["userId"]: m for m in members}
    assert "metadata" not in by_user[world.user_ids["editor"]]
    assert by_user[world.user_ids["member"]]["metadata"]["userId"] == world.user_ids["member"]


async def test_duplicate_names_unknown_and_cross_tenant_ids(connect: ConnectJsonCaller, world: World) -> None:
    admin = world.tokens["admin"]
    group = await _group(connect, world, "dupe")
    dup = await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "dupe"}, token=admin)
    assert dup.code == "already_exists" and "dupe" in dup.message
    blank = await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "  "}, token=admin)
    assert blank.code == "invalid_argument" and "name" in blank.message

    unknown = {"tenantId": world.tenant_id, "groupId": "grp_missing", "userId": world.user_ids["member"]}
    assert (await connect.call(f"{GROUPS}/AddGroupMember", unknown, token=admin)).code == "not_found"
    missing_group = {"tenantId": world.tenant_id, "groupId": "grp_missing"}
    assert (await connect.call(f"{GROUPS}/DeleteGroup", missing_group, token=admin)).code == "not_found"

    not_member = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids["outsider"]}
    result = await connect.call(f"{GROUPS}/AddGroupMember", not_member, token=admin)
    assert result.code == "failed_precondition" and "not a member" in result.message

    add = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids["member"]}
    must(await connect.call(f"{GROUPS}/AddGroupMember", add, token=admin))
    assert (await connect.call(f"{GROUPS}/AddGroupMember", add, token=admin)).code == "already_exists"
    not_in_group = {**add, "userId": world.user_ids["editor"]}
    assert (await connect.call(f"{GROUPS}/RemoveGroupMember", not_in_group, token=admin)).code == "not_found"

    outsider = world.tokens["outsider"]
    cross_group = {"tenantId": world.other_tenant_id, "groupId": group["id"]}
    assert (await connect.call(f"{GROUPS}/DeleteGroup", cross_group, token=outsider)).code == "not_found"
    missing_tenant = await connect.call(f"{GROUPS}/CreateGroup", {"name": "x"}, token=admin)
    assert missing_tenant.code == "invalid_argument" and "tenant_id" in missing_tenant.message


async def test_tenant_header_scopes_the_session(connect: ConnectJsonCaller, world: World) -> None:
    await _group(connect, world, "scoped")
    admin = world.tokens["admin"]
    scoped = await connect.call(f"{GROUPS}/ListGroups", {}, token=admin, tenant=world.tenant_id)
    assert [g["name"] for g in scoped.body["groups"]] == ["scoped"]
    mismatch = await connect.call(
        f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=admin, tenant=world.other_tenant_id
    )
    assert mismatch.code == "permission_denied"


async def test_a_created_group_is_listed_by_the_very_next_read(connect: ConnectJsonCaller, world: World) -> None:
    """Lone reads (on SQLite served from separate read-only connections) see each write committed before them."""
    admin, listing = world.tokens["admin"], {"tenantId": world.tenant_id}
    for n in range(25):
        created = await _group(connect, world, f"seen-{n}")
        listed = must(await connect.call(f"{GROUPS}/ListGroups", listing, token=admin, get=True))
        assert created["id"] in {g["id"] for g in listed["groups"]}
        assert len(listed["groups"]) == n + 1


async def test_list_answers_gzip_when_asked_and_identity_otherwise(server: Server, world: World) -> None:
    """Responses are compressed by our own gzip settings (server.codecs.QuickGzip): any gzip reader must decode them
    to the same answer a client that accepts no compression gets."""
    connect = ConnectJsonCaller(server.base_url)
    for i in range(30):
        await _group(connect, world, f"team-{i:02d}")
    url = f"{server.base_url}/{GROUPS}/ListGroups"
    headers = {"Authorization": f"Bearer {world.tokens['admin']}", "Content-Type": "application/json"}
    body = json.dumps({"tenantId": world.tenant_id})
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        async with http.post(url, data=body, headers={**headers, "Accept-Encoding": "gzip"}) as resp:
            assert resp.status == 200
            assert resp.headers.get("Content-Encoding") == "gzip"
            packed = await resp.read()
        async with http.post(url, data=body, headers={**headers, "Accept-Encoding": "identity"}) as resp:
            assert resp.status == 200
            assert resp.headers.get("Content-Encoding") in (None, "identity")
            plain = await resp.read()
    assert len(packed) < len(plain) / 4
    answer = json.loads(gzip.decompress(packed))
    assert answer == json.loads(plain)
    assert {f"team-{i:02d}" for i in range(30)} <= {g["name"] for g in answer["groups"]}


async def test_lists_follow_every_write_including_those_made_outside_the_serving_process(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """The server answers a tenant's list again while the tenant's list version in the database is unchanged
    (server.domain.groups.GroupLists). Every change to a group or a member moves it, whoever makes it: here plain
    SQL, as another replica or an operator would, and the very next read answers the change."""
    admin, member = world.tokens["admin"], world.tokens["member"]
    team = await _group(connect, world, "team-a")

    async def listed(token: str = admin) -> dict[str, int]:
        found = must(await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=token))
        return {g["name"]: g.get("memberCount", 0) for g in found.get("groups", [])}

    store = Database(server.settings.database_url)

    async def write(sql: str, **params: str) -> None:
        async with store.transaction() as s:
            await s.execute(text(sql), params)

    try:
        assert await listed() == await listed() == {"team-a": 0}
        assert await listed(member) == {}
        outside = f"grp_outside{secrets.token_hex(4)}"
        added = "INSERT INTO groups (id, tenant_id, name, created_at) VALUES (:id, :tenant, :name, CURRENT_TIMESTAMP)"
        await write(added, id=outside, tenant=world.tenant_id, name="team-b")
        assert await listed() == {"team-a": 0, "team-b": 0}
        await write("UPDATE groups SET name = 'team-c' WHERE id = :id", id=outside)
        assert await listed() == {"team-a": 0, "team-c": 0}
        joined = "INSERT INTO group_members (group_id, user_id, created_at) VALUES (:id, :user, CURRENT_TIMESTAMP)"
        await write(joined, id=outside, user=world.user_ids["member"])
        assert await listed() == {"team-a": 0, "team-c": 1}
        assert await listed(member) == {"team-c": 1}
        await write("DELETE FROM groups WHERE id = :id", id=outside)  # its member row goes by cascade
        assert await listed() == {"team-a": 0}
        assert await listed(member) == {}
        await write("DELETE FROM groups WHERE id = :id", id=team["id"])
        assert await listed() == {}
    finally:
        await store.close()


async def test_lists_follow_writes_made_through_another_replica(database: TestDatabase) -> None:
    """Read-your-writes across replicas: a group created through one process is listed by the other at once, not
    after a cache bound."""
    async with two_replicas(database) as r:
        admin, listing = r.world.tokens["admin"], {"tenantId": r.world.tenant_id}
        for n in range(3):
            assert len(must(await r.a.call(f"{GROUPS}/ListGroups", listing, token=admin)).get("groups", [])) == n
            body = {"tenantId": r.world.tenant_id, "name": f"replicated-{n}"}
            must(await r.b.call(f"{GROUPS}/CreateGroup", body, token=admin))
        assert len(must(await r.a.call(f"{GROUPS}/ListGroups", listing, token=admin))["groups"]) == 3


async def test_a_list_read_in_a_rolled_back_transaction_is_never_answered_again(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """A transaction's own writes move the list version before they commit; a list read there must not be kept,
    or a later commit reaching the same version number would answer the rolled-back groups."""
    store = Database(server.settings.database_url, session_info=group_lists_info())
    operator = Principal(user_id="operator", can_manage_tenants=True)
    try:
        with pytest.raises(RuntimeError):
            async with store.transaction() as s:
                await groups.create_group(s, operator, world.tenant_id, "rolled-back")
                assert [g.name for g in await groups.list_groups(s, operator, world.tenant_id)] == ["rolled-back"]
                raise RuntimeError("the transaction fails after its read")
        async with store.transaction() as s:
            await groups.create_group(s, operator, world.tenant_id, "committed")
        async with store.lone_read() as s:
            assert [g.name for g in await groups.list_groups(s, operator, world.tenant_id)] == ["committed"]
    finally:
        await store.close()


async def _one_after_the_other(
    store: Database, first: Callable[[AsyncSession], Awaitable[None]], second: Callable[[AsyncSession], Awaitable[None]]
) -> BaseException | None:
    """`first` written but not committed while `second` runs in a transaction of its own; what `second` raised."""

    async def then() -> None:
        async with store.transaction() as s:
            await second(s)

    async with store.transaction() as s:
        await first(s)
        running = asyncio.ensure_future(then())
        await asyncio.sleep(0.5)  # long enough for `second` to reach whatever `first` holds
    try:
        await running
    except Exception as exc:
        return exc
    return None


async def _tenant_with_alice_and_a_group(store: Database, operator: Principal) -> tuple[tenants.Tenant, groups.Group]:
    async with store.transaction() as s:
        tenant = await tenants.create_tenant(s, operator, f"race-{secrets.token_hex(3)}", "")
        await tenants.add_member(s, operator, tenant.id, "alice", int(TenantRole.EDITOR))
        return tenant, await groups.create_group(s, operator, tenant.id, "team")


@pytest.mark.parametrize("removed_first", [False, True])
async def test_a_member_removed_from_the_tenant_while_added_to_a_group_is_in_no_group(
    server: Server, removed_first: bool
) -> None:
    """Leaving the tenant means leaving its groups: an add committed around the removal (PostgreSQL) must not leave
    the user in the group, listed there and back in it with its grants if ever made a member again."""
    store = Database(server.settings.database_url)
    operator = Principal(user_id="operator", can_manage_tenants=True)
    try:
        tenant, group = await _tenant_with_alice_and_a_group(store, operator)

        async def add(s: AsyncSession) -> None:
            await groups.add_group_member(s, operator, tenant.id, group.id, "alice")

        async def remove(s: AsyncSession) -> None:
            await tenants.remove_member(s, operator, tenant.id, "alice", "")

        raised = await (
            _one_after_the_other(store, remove, add) if removed_first else _one_after_the_other(store, add, remove)
        )
        if removed_first:
            assert isinstance(raised, FailedPrecondition) and "not a member" in str(raised)
        else:
            assert raised is None
        async with store.transaction() as s:
            assert await groups.list_group_members(s, operator, tenant.id, group.id) == []
    finally:
        await store.close()


async def test_a_member_added_to_a_group_being_deleted_is_not_found(server: Server) -> None:
    """The add waits for the delete and answers not_found, not an unmapped foreign-key failure (an internal error)."""
    store = Database(server.settings.database_url)
    operator = Principal(user_id="operator", can_manage_tenants=True)
    try:
        tenant, group = await _tenant_with_alice_and_a_group(store, operator)

        async def delete(s: AsyncSession) -> None:
            await groups.delete_group(s, operator, tenant.id, group.id)

        async def add(s: AsyncSession) -> None:
            await groups.add_group_member(s, operator, tenant.id, group.id, "alice")

        raised = await _one_after_the_other(store, delete, add)
        assert isinstance(raised, NotFound) and raised.field == "group_id", raised
    finally:
        await store.close()
