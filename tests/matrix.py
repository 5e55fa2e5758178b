"""The authorization matrix: (operation, principal kind, expected Connect code), run against the real server.

Later issues add their own rows: build a list of `Row`s (the request comes from an async `body` builder that may
create what the call needs) and run them with `check_rows`. The cast of principals is built once per server through
the public API only:

    anonymous            no credential
    outsider             admin of another tenant
    member / editor / admin   tenant roles
    group_member         a Member who belongs to `cast.group_id`
    creator              an Editor who created the resources later rows are about
    platform_admin       a session with can_manage_tenants and can_manage_models
    key_personal         an admin's personal key granted one model (`cast.granted_model`);
                         key_disabled / key_revoked / key_expired: an admin's personal key, unusable
    key_granted          an Editor's personal key granted the same one model
    key_all              an admin's Personal (all resources) key
    key_sa               a service-account key

API keys use resources and never manage anything (server.permissions.credentials): every key kind is refused every
method but reads, its conversations and MCP OAuth, whoever owns it.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from tests.clients import ConnectJsonCaller
from tests.schema import only_request_fields
from tests.world import GROUPS, World, make_world, must

KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"
KINDS = (
    "anonymous",
    "outsider",
    "member",
    "editor",
    "admin",
    "group_member",
    "creator",
    "platform_admin",
    "key_personal",
    "key_disabled",
    "key_revoked",
    "key_expired",
    "key_granted",
    "key_all",
    "key_sa",
)
UNUSABLE = ("anonymous", "key_disabled", "key_revoked", "key_expired")
USABLE_KEYS = ("key_personal", "key_granted", "key_all", "key_sa")
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"


@dataclass
class Cast:
    world: World
    group_id: str
    tokens: dict[str, str | None] = field(default_factory=dict)
    granted_model: str = ""  # a platform deployment shared with the tenant, granted to key_personal and key_granted
    other_model: str = ""  # another one shared with the tenant, granted to no key
    key_ids: dict[str, str] = field(default_factory=dict)  # principal kind -> API key id
    service_account_id: str = ""  # the account behind key_sa

    @property
    def tenant_id(self) -> str:
        return self.world.tenant_id


Body = Callable[[Cast, ConnectJsonCaller], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Row:
    operation: str
    body: Body
    expect: dict[str, str]  # principal kind -> Connect code; unlisted usable kinds default to permission_denied
    get: bool = False

    def expected(self, kind: str) -> str:
        if kind in UNUSABLE:
            return "unauthenticated"
        return self.expect.get(kind, "permission_denied")


def fixed(**values: Any) -> Body:
    async def build(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
        return {"tenantId": cast.tenant_id, **values}

    return build


def allow(*kinds: str, code: str = "ok") -> dict[str, str]:
    return dict.fromkeys(kinds, code)


async def _key(
    connect: ConnectJsonCaller, cast: Cast, key_type: str, *, owner: str = "admin", **extra: Any
) -> dict[str, Any]:
    body = {"tenantId": cast.tenant_id, "type": key_type, "name": f"k-{secrets.token_hex(3)}", **extra}
    return must(await connect.call(f"{KEYS}/CreateApiKey", body, token=cast.world.tokens[owner]))


async def shared_model(server: Any, connect: ConnectJsonCaller, tenant_id: str) -> str:
    """A platform deployment shared read-only with the tenant; returns its name (also its publicModelId)."""
    name = f"mx-{secrets.token_hex(4)}"
    body = {
        "modelDeployment": {
            "name": name,
            "publicModelId": name,
            "endpointUrl": "http://127.0.0.1:9/v1",
            "sharing": {"sharedWith": [tenant_id]},
        }
    }
    must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=server.admin_token))
    return name


async def build_cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    world = await make_world(server, connect)
    admin = world.tokens["admin"]
    group = must(
        await connect.call(f"{GROUPS}/CreateGroup", {"tenantId": world.tenant_id, "name": "matrix"}, token=admin)
    )["group"]
    cast = Cast(world=world, group_id=group["id"])
    # First, so that the rest of the cast is made while its second runs out.
    expiry = datetime.now(UTC) + timedelta(seconds=1)
    expiring = await _key(connect, cast, "API_KEY_TYPE_PERSONAL", expireTime=expiry.isoformat().replace("+00:00", "Z"))
    for person, role in (("group_member", "TENANT_ROLE_MEMBER"), ("creator", "TENANT_ROLE_EDITOR")):
        user_id = f"{person}-{secrets.token_hex(3)}"
        world.user_ids[person] = user_id
        world.tokens[person] = server.token(user_id)
        must(
            await connect.call(
                "platform.tenants.v1.TenantService/AddTenantMember",
                {"tenantId": world.tenant_id, "userId": user_id, "role": role},
                token=admin,
            )
        )
    must(
        await connect.call(
            f"{GROUPS}/AddGroupMember",
            {"tenantId": world.tenant_id, "groupId": group["id"], "userId": world.user_ids["group_member"]},
            token=admin,
        )
    )
    cast.tokens = {kind: world.tokens.get(kind) for kind in KINDS}
    cast.tokens["anonymous"] = None
    cast.tokens["platform_admin"] = server.admin_token
    cast.granted_model = await shared_model(server, connect, world.tenant_id)
    cast.other_model = await shared_model(server, connect, world.tenant_id)
    grant = [{"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": cast.granted_model}]
    made = {
        "key_personal": await _key(connect, cast, "API_KEY_TYPE_PERSONAL", grants=grant),
        "key_granted": await _key(connect, cast, "API_KEY_TYPE_PERSONAL", owner="editor", grants=grant),
        "key_all": await _key(connect, cast, "API_KEY_TYPE_PERSONAL_ALL_RESOURCES"),
    }
    account = must(
        await connect.call(
            f"{ACCOUNTS}/CreateServiceAccount", {"tenantId": world.tenant_id, "name": "matrix-bot"}, token=admin
        )
    )
    cast.service_account_id = account["serviceAccount"]["id"]
    made["key_sa"] = await _key(
        connect, cast, "API_KEY_TYPE_SERVICE_ACCOUNT", serviceAccountId=cast.service_account_id, grants=grant
    )
    for kind, created in made.items():
        cast.tokens[kind] = created["secret"]
        cast.key_ids[kind] = created["apiKey"]["id"]
    for kind, method in (("key_disabled", "DisableApiKey"), ("key_revoked", "RevokeApiKey")):
        created = await _key(connect, cast, "API_KEY_TYPE_PERSONAL")
        must(
            await connect.call(
                f"{KEYS}/{method}", {"tenantId": world.tenant_id, "apiKeyId": created["apiKey"]["id"]}, token=admin
            )
        )
        cast.tokens[kind] = created["secret"]
    cast.tokens["key_expired"] = expiring["secret"]
    await asyncio.sleep((expiry - datetime.now(UTC)).total_seconds() + 0.1)  # never presented, so never cached
    return cast


async def check_rows(connect: ConnectJsonCaller, cast: Cast, rows: list[Row]) -> list[str]:
    """Run every row for every principal kind; return the mismatches (empty when the matrix holds).

    Body builders give the context a row needs (`fixed()` adds the tenant to every row); only the fields the
    operation's request has are sent, since the server refuses unknown fields."""
    failures = []
    for row in rows:
        for kind in KINDS:
            body = only_request_fields(row.operation, await row.body(cast, connect))
            result = await connect.call(row.operation, body, token=cast.tokens[kind], get=row.get)
            if result.code != row.expected(kind):
                failures.append(
                    f"{row.operation} as {kind}: expected {row.expected(kind)}, got {result.code} ({result.message})"
                )
    return failures
