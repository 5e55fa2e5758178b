"""A populated tenant for tests: people in every role, created through the public API only."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from tests.clients import ConnectJsonCaller, Result

TENANTS = "platform.tenants.v1.TenantService"
GROUPS = "platform.tenants.v1.GroupService"
USERS = "platform.tenants.v1.UserService"


def must(result: Result) -> dict[str, Any]:
    assert result.ok, result
    return result.body


@dataclass
class World:
    """tenant: admin (ADMIN), editor (EDITOR), member (MEMBER); other_tenant: outsider (ADMIN there)."""

    tenant_id: str
    other_tenant_id: str
    tokens: dict[str, str] = field(default_factory=dict)
    user_ids: dict[str, str] = field(default_factory=dict)


async def make_world(server: object, connect: ConnectJsonCaller) -> World:
    tag = secrets.token_hex(4)
    admin = server.admin_token  # type: ignore[attr-defined]
    tenant = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": f"acme-{tag}"}, token=admin))["tenant"]
    other = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": f"other-{tag}"}, token=admin))["tenant"]
    world = World(tenant_id=tenant["id"], other_tenant_id=other["id"])
    roles = {"admin": "TENANT_ROLE_ADMIN", "editor": "TENANT_ROLE_EDITOR", "member": "TENANT_ROLE_MEMBER"}
    for person, role in roles.items():
        user_id = f"{person}-{tag}"
        world.user_ids[person] = user_id
        world.tokens[person] = server.token(user_id)  # type: ignore[attr-defined]
        body = {"tenantId": world.tenant_id, "userId": user_id, "role": role}
        must(await connect.call(f"{TENANTS}/AddTenantMember", body, token=admin))
    outsider = f"outsider-{tag}"
    world.user_ids["outsider"] = outsider
    world.tokens["outsider"] = server.token(outsider)  # type: ignore[attr-defined]
    body = {"tenantId": world.other_tenant_id, "userId": outsider, "role": "TENANT_ROLE_ADMIN"}
    must(await connect.call(f"{TENANTS}/AddTenantMember", body, token=admin))
    for token in world.tokens.values():  # everyone signs in once, so their metadata resolves
        must(await connect.call(f"{USERS}/GetCurrentUser", {}, token=token, get=True))
    return world
