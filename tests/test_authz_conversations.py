"""Authorization matrix rows for ConversationItemService and ConversationService.

The rule (server.permissions.conversations): the caller must belong to the tenant (platform roles grant nothing);
only a conversation's owner sees it — the user (through a session or the user's personal and Personal (all
resources) keys) or the service account (through its keys). Tenant members who are not the owner, tenant admins
included, are told the conversation does not exist.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.conversation_helpers import CONVERSATIONS, ITEMS, create_conversation, message
from tests.matrix import Body, Cast, Row, allow, build_cast, check_rows

TENANT_MEMBERS = ("admin", "editor", "member", "group_member", "creator")
ALL_IN_TENANT = (*TENANT_MEMBERS, "key_personal", "key_granted", "key_all", "key_sa")
NOT_IN_TENANT = allow("outsider", "platform_admin", code="permission_denied")
# key_personal and key_all are the admin's keys: they act as the admin.
ADMINS = ("admin", "key_personal", "key_all")


def owned_by(owner: str, **extra: Any) -> Body:
    """A body naming a fresh conversation of `owner` with two items (extra values may be callables of the items)."""

    async def build(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
        token = cast.tokens[owner]
        assert token is not None
        conv = await create_conversation(connect, token, cast.tenant_id, [message("one"), message("two")])
        listed = await connect.call(
            f"{ITEMS}/ListItems",
            {"tenantId": cast.tenant_id, "conversationId": conv["id"], "order": "SORT_ORDER_ASC"},
            token=token,
        )
        item_ids = [i["id"] for i in listed.body["items"]]
        values = {k: v(item_ids) if callable(v) else v for k, v in extra.items()}
        return {"tenantId": cast.tenant_id, "conversationId": conv["id"], **values}

    return build


def expect(owners: tuple[str, ...]) -> dict[str, str]:
    return {
        **allow(*ALL_IN_TENANT, code="not_found"),
        **NOT_IN_TENANT,
        **allow(*owners),
    }


def first(item_ids: list[str]) -> str:
    return item_ids[0]


def rows_for(owner: str, owners: tuple[str, ...]) -> list[Row]:
    return [
        Row(f"{ITEMS}/CreateItems", owned_by(owner, items=[message("three")]), expect(owners)),
        Row(f"{ITEMS}/ListItems", owned_by(owner, limit=1), expect(owners), get=True),
        Row(f"{ITEMS}/GetItem", owned_by(owner, itemId=first), expect(owners), get=True),
        Row(f"{ITEMS}/DeleteItem", owned_by(owner, itemId=first), expect(owners)),
        Row(f"{ITEMS}/TruncateConversation", owned_by(owner, fromItemId=first), expect(owners)),
        Row(f"{CONVERSATIONS}/GetConversation", owned_by(owner), expect(owners), get=True),
        Row(f"{CONVERSATIONS}/UpdateConversation", owned_by(owner, metadata={"k": "v"}), expect(owners)),
        Row(f"{CONVERSATIONS}/DeleteConversation", owned_by(owner), expect(owners)),
    ]


async def tenant_only(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id}


ROWS = [
    *rows_for("admin", ADMINS),
    *rows_for("key_sa", ("key_sa",)),
    *rows_for("key_granted", ("editor", "key_granted")),  # an Editor's key acts as the Editor
    Row(f"{CONVERSATIONS}/CreateConversation", tenant_only, {**allow(*ALL_IN_TENANT), **NOT_IN_TENANT}),
    Row(f"{CONVERSATIONS}/ListConversations", tenant_only, {**allow(*ALL_IN_TENANT), **NOT_IN_TENANT}, get=True),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_conversations_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)


async def test_platform_operators_are_outsiders_unless_members(
    server: Any, connect: ConnectJsonCaller, cast: Cast
) -> None:
    """A platform operator reading a member's item: outside the tenant, the tenant gate refuses it
    (permission_denied, even with X-Platform-Tenant-Id naming the tenant, which operators may send); once a member
    (here an Admin), the operator is one more non-owner, told the item does not exist (not_found)."""
    operator_id = f"ops-{cast.tenant_id}"
    operator = server.token(operator_id, roles=("can_manage_tenants", "can_manage_models"))
    body = await owned_by("member", itemId=first)(cast, connect)
    outside = await connect.call(f"{ITEMS}/GetItem", body, token=operator, get=True)
    scoped = await connect.call(f"{ITEMS}/GetItem", body, token=operator, tenant=cast.tenant_id, get=True)
    for refused in (outside, scoped):
        assert refused.code == "permission_denied" and "not a member" in refused.message, refused
    added = {"tenantId": cast.tenant_id, "userId": operator_id, "role": "TENANT_ROLE_ADMIN"}
    assert (await connect.call("platform.tenants.v1.TenantService/AddTenantMember", added, token=operator)).ok
    inside = await connect.call(f"{ITEMS}/GetItem", body, token=operator, get=True)
    assert inside.code == "not_found", inside
    owner = await connect.call(f"{ITEMS}/GetItem", body, token=cast.tokens["member"], get=True)
    assert owner.ok, owner
