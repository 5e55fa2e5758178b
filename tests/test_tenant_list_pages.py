"""switchboard.tenants.v1.TenantListService: the tenant lists a page at a time, on SQLite and PostgreSQL.

Walking every page gives exactly what the platform's unpaged list answers, in the same order, for every page size
(including sizes that divide the list evenly); tokens are refused on the wrong list or when forged; items added and
removed between pages never make the walk repeat or skip an item that stayed; and each page answers only what the
caller may read, as the unpaged list does.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.world import GROUPS, TENANTS, World, make_world, must

PAGES = "switchboard.tenants.v1.TenantListService"
KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    world = await make_world(server, connect)
    admin = world.tokens["admin"]
    for i in range(7):
        body = {"tenantId": world.tenant_id, "name": f"g{i}-{secrets.token_hex(2)}"}
        group = must(await connect.call(f"{GROUPS}/CreateGroup", body, token=admin))["group"]
        for person in ("member", "editor", "admin")[: i % 4]:
            body = {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids[person]}
            must(await connect.call(f"{GROUPS}/AddGroupMember", body, token=admin))
    for person in ("admin", "admin", "admin", "member", "member", "editor"):
        body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": f"k-{secrets.token_hex(2)}"}
        must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens[person]))
    for i in range(5):
        body = {"tenantId": world.tenant_id, "name": f"sa-{i}-{secrets.token_hex(2)}"}
        must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=admin))
    for i in range(3):
        body = {"tenantId": world.tenant_id, "email": f"invitee{i}-{secrets.token_hex(2)}@example.com"}
        must(await connect.call(f"{TENANTS}/InviteTenantMember", body, token=admin))
    return world


# (paged method, unpaged method, list field, extra request fields)
LISTS = [
    ("ListApiKeys", f"{KEYS}/ListApiKeys", "apiKeys", {}),
    ("ListApiKeys", f"{KEYS}/ListApiKeys", "apiKeys", {"includeRevoked": True}),
    ("ListGroups", f"{GROUPS}/ListGroups", "groups", {}),
    ("ListTenantMembers", f"{TENANTS}/ListTenantMembers", "members", {}),
    ("ListServiceAccounts", f"{ACCOUNTS}/ListServiceAccounts", "serviceAccounts", {}),
]


async def _walk(
    connect: ConnectJsonCaller, token: str, method: str, field: str, size: int, **body: Any
) -> tuple[list[dict[str, Any]], int]:
    items: list[dict[str, Any]] = []
    page_token = ""
    calls = 0
    while True:
        page = {"pageSize": size, "pageToken": page_token}
        answer = must(await connect.call(f"{PAGES}/{method}", {**body, "page": page}, token=token, get=True))
        calls += 1
        assert len(answer.get(field, [])) <= size
        items += answer.get(field, [])
        page_token = answer.get("nextPageToken", "")
        if not page_token:
            return items, calls
        assert calls < 100


@pytest.mark.parametrize("case", LISTS, ids=lambda case: f"{case[0]}{'+revoked' if case[3] else ''}")
async def test_every_page_size_walks_the_whole_list_in_order(
    connect: ConnectJsonCaller, world: World, case: tuple[str, str, str, dict[str, Any]]
) -> None:
    method, unpaged, field, extra = case
    admin = world.tokens["admin"]
    body = {"tenantId": world.tenant_id, **extra}
    whole = must(await connect.call(unpaged, body, token=admin, get=True))[field]
    assert len(whole) >= 5
    for size in (1, 2, 3, len(whole), len(whole) + 1, 500):
        items, calls = await _walk(connect, admin, method, field, size, **body)
        assert items == whole, size
        assert calls == max(1, -(-len(whole) // size)), size  # a full last page carries no token: no empty page


async def test_group_members_and_a_members_own_keys_and_groups(connect: ConnectJsonCaller, world: World) -> None:
    admin = world.tokens["admin"]
    groups = must(await connect.call(f"{GROUPS}/ListGroups", {"tenantId": world.tenant_id}, token=admin, get=True))
    big = max(groups["groups"], key=lambda g: int(g.get("memberCount", 0)))
    body = {"tenantId": world.tenant_id, "groupId": big["id"]}
    whole = must(await connect.call(f"{GROUPS}/ListGroupMembers", body, token=admin, get=True))["members"]
    assert len(whole) == 3
    assert (await _walk(connect, admin, "ListGroupMembers", "members", 2, **body))[0] == whole
    # A member: their own keys, and the groups they belong to, as the unpaged lists answer them.
    member = world.tokens["member"]
    for method, unpaged, field in (
        ("ListApiKeys", f"{KEYS}/ListApiKeys", "apiKeys"),
        ("ListGroups", f"{GROUPS}/ListGroups", "groups"),
    ):
        mine = must(await connect.call(unpaged, {"tenantId": world.tenant_id}, token=member, get=True))[field]
        assert (await _walk(connect, member, method, field, 1, tenantId=world.tenant_id))[0] == mine
    keys, _ = await _walk(connect, member, "ListApiKeys", "apiKeys", 2, tenantId=world.tenant_id)
    assert {k["ownerUserId"] for k in keys} == {world.user_ids["member"]}


async def test_who_may_page_what(connect: ConnectJsonCaller, world: World) -> None:
    own = {"tenantId": world.tenant_id}
    member = world.tokens["member"]
    refused = await connect.call(f"{PAGES}/ListServiceAccounts", own, token=member, get=True)
    assert refused.code == "permission_denied"  # service accounts are the admin's, as in ServiceAccountService
    outsider = world.tokens["outsider"]
    for method in ("ListApiKeys", "ListGroups", "ListTenantMembers", "ListServiceAccounts"):
        result = await connect.call(f"{PAGES}/{method}", own, token=outsider, get=True)
        assert result.code == "permission_denied", method


async def test_bad_sizes_and_tokens_are_refused(connect: ConnectJsonCaller, world: World) -> None:
    admin = world.tokens["admin"]
    own = {"tenantId": world.tenant_id}
    for size in (-1, 501):
        result = await connect.call(f"{PAGES}/ListGroups", {**own, "page": {"pageSize": size}}, token=admin, get=True)
        assert result.code == "invalid_argument" and "page_size" in result.message
    first = must(await connect.call(f"{PAGES}/ListGroups", {**own, "page": {"pageSize": 1}}, token=admin, get=True))
    groups_token = first["nextPageToken"]
    for method in ("ListApiKeys", "ListServiceAccounts", "ListTenantMembers"):  # another list's token
        body = {**own, "page": {"pageToken": groups_token}}
        result = await connect.call(f"{PAGES}/{method}", body, token=admin, get=True)
        assert result.code == "invalid_argument" and "page_token" in result.message, method
    for forged in ("not-a-token", "W10", "WyJncm91cHMiLDFd"):  # garbage, [], ["groups", 1]
        body = {**own, "page": {"pageToken": forged}}
        result = await connect.call(f"{PAGES}/ListGroups", body, token=admin, get=True)
        assert result.code == "invalid_argument" and "page_token" in result.message, forged


async def test_changes_between_pages_neither_repeat_nor_skip_what_stayed(
    connect: ConnectJsonCaller, world: World
) -> None:
    admin = world.tokens["admin"]
    own = {"tenantId": world.tenant_id}
    first = must(await connect.call(f"{PAGES}/ListGroups", {**own, "page": {"pageSize": 3}}, token=admin, get=True))
    seen = first["groups"]
    # Remove a group already seen, and add one before the position reached and one after it.
    must(await connect.call(f"{GROUPS}/DeleteGroup", {**own, "groupId": seen[0]["id"]}, token=admin))
    for name in ("a-before", "zz-after"):
        must(await connect.call(f"{GROUPS}/CreateGroup", {**own, "name": name}, token=admin))
    rest, _ = await _walk(connect, admin, "ListGroups", "groups", 2, **own)  # a fresh walk, for comparison
    page_token = first["nextPageToken"]
    after: list[dict[str, Any]] = []
    while page_token:
        body = {**own, "page": {"pageSize": 2, "pageToken": page_token}}
        answer = must(await connect.call(f"{PAGES}/ListGroups", body, token=admin, get=True))
        after += answer["groups"]
        page_token = answer.get("nextPageToken", "")
    names = [g["name"] for g in seen + after]
    assert len(names) == len(set(names))  # nothing twice
    stayed = [g["name"] for g in rest if g["name"] != "a-before"]
    assert [n for n in names if n != seen[0]["name"]] == stayed  # nothing that stayed skipped; the new later one in
