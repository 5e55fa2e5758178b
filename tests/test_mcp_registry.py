"""The external MCP server registry: registrations, write-only secrets, update rules, OAuth metadata, listing."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest

from server.crypto import SecretBox
from server.domain import mcp_servers
from server.errors import InvalidArgument
from server.store.db import Database as Db
from server.store.models import ExternalMcpServerRow
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database, Server
from tests.world import World, make_world, must

MCP = "platform.agents.v1.ExternalMcpServerService"
BEARER = "sk-mcp-SECRET-bearer-1"
HEADER_SECRET = "hdr-SECRET-value-2"
CLIENT_SECRET = "oauth-SECRET-client-3"
OAUTH = {
    "authorizationUrl": "https://auth.example.test/authorize",
    "tokenUrl": "https://auth.example.test/token",
    "clientId": "switchboard",
    "scopes": ["tools.read", "tools.write"],
    "authorizationParameters": {"prompt": "consent"},
    "tokenEndpointAuthMethod": "client_secret_post",
}


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


def _name(prefix: str = "mcp") -> str:
    return f"{prefix}-{secrets.token_hex(4)}_"


def _assert_no_secret(result: Result) -> None:
    text = json.dumps(result.body)
    for secret in (BEARER, HEADER_SECRET, CLIENT_SECRET):
        assert secret not in text


async def _platform_bearer(connect: ConnectJsonCaller, server: Server, **extra: Any) -> dict[str, Any]:
    body = {
        "externalMcpServer": {
            "name": _name(),
            "serverUrl": "https://tools.example.test/mcp",
            "displayName": "Tools",
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"},
            **extra,
        },
        "apiKey": BEARER,
        "staticHeaders": [{"name": "X-Team", "value": HEADER_SECRET}, {"name": "X-Api-Version", "value": "2"}],
    }
    result = await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token)
    _assert_no_secret(result)
    return must(result)["externalMcpServer"]


async def _stored(database: Database, server: Server, name: str) -> tuple[ExternalMcpServerRow, SecretBox]:
    db = Db(database.url)
    try:
        async with db.read() as s:
            row = await s.get(ExternalMcpServerRow, name)
    finally:
        await db.close()
    assert row is not None
    return row, SecretBox(server.settings)


async def test_secrets_are_write_only_and_stored_sealed(
    server: Server, connect: ConnectJsonCaller, database: Database
) -> None:
    created = await _platform_bearer(connect, server)
    assert created["auth"] == {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER", "apiKeySet": True}
    assert created["staticHeaderNames"] == ["X-Api-Version", "X-Team"]
    got = await connect.call(
        f"{MCP}/GetExternalMcpServer", {"name": created["name"]}, token=server.admin_token, get=True
    )
    _assert_no_secret(got)
    assert must(got)["externalMcpServer"] == created
    row, box = await _stored(database, server, created["name"])
    assert row.api_key_encrypted is not None and BEARER.encode() not in row.api_key_encrypted
    assert box.open(row.api_key_encrypted) == BEARER
    assert row.static_headers_encrypted is not None
    assert json.loads(box.open(row.static_headers_encrypted)) == {"X-Team": HEADER_SECRET, "X-Api-Version": "2"}


async def test_update_rules(server: Server, connect: ConnectJsonCaller, database: Database) -> None:
    created = await _platform_bearer(connect, server)
    name = created["name"]
    admin = server.admin_token

    async def update(body: dict[str, Any]) -> dict[str, Any]:
        result = await connect.call(f"{MCP}/UpdateExternalMcpServer", body, token=admin)
        _assert_no_secret(result)
        return must(result)["externalMcpServer"]

    # An empty apiKey keeps the stored token; omitted auth changes nothing; headers are kept when not given.
    kept = await update({"externalMcpServer": {"name": name, "displayName": "Renamed"}})
    assert kept["displayName"] == "Renamed"
    assert kept["auth"]["apiKeySet"] is True and kept["staticHeaderNames"] == created["staticHeaderNames"]
    row, box = await _stored(database, server, name)
    assert row.api_key_encrypted is not None and box.open(row.api_key_encrypted) == BEARER
    # A non-empty apiKey rotates it; static headers given replace the set.
    await update(
        {"externalMcpServer": {"name": name}, "apiKey": "rotated", "staticHeaders": [{"name": "X-B", "value": "b"}]}
    )
    row, box = await _stored(database, server, name)
    assert row.api_key_encrypted is not None and box.open(row.api_key_encrypted) == "rotated"
    assert row.static_header_names == ["X-B"]
    # clearStaticHeaders clears them; giving both is ambiguous and refused.
    both = await connect.call(
        f"{MCP}/UpdateExternalMcpServer",
        {
            "externalMcpServer": {"name": name},
            "staticHeaders": [{"name": "X-C", "value": "c"}],
            "clearStaticHeaders": True,
        },
        token=admin,
    )
    assert both.code == "invalid_argument" and "clear_static_headers" in both.message
    cleared = await update({"externalMcpServer": {"name": name}, "clearStaticHeaders": True})
    assert "staticHeaderNames" not in cleared
    # Switching to OAuth: a client secret omitted later is kept, an empty one clears it.
    oauth = {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": OAUTH}
    switched = await update({"externalMcpServer": {"name": name, "auth": oauth}, "oauthClientSecret": CLIENT_SECRET})
    assert switched["auth"]["oauth"]["clientSecretSet"] is True
    assert "apiKeySet" not in switched["auth"]  # the bearer token of the old auth type is dropped
    again = await update({"externalMcpServer": {"name": name, "displayName": "Again"}})
    assert again["auth"]["oauth"]["clientSecretSet"] is True
    unset_method = {**OAUTH, "tokenEndpointAuthMethod": ""}
    auth = {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": unset_method}
    cleared_secret = await update({"externalMcpServer": {"name": name, "auth": auth}, "oauthClientSecret": ""})
    assert "clientSecretSet" not in cleared_secret["auth"]["oauth"]
    # The name identifies the server: an unknown one is not found.
    unknown = await connect.call(
        f"{MCP}/UpdateExternalMcpServer", {"externalMcpServer": {"name": "nope-x"}}, token=admin
    )
    assert unknown.code == "not_found"


@pytest.mark.parametrize(
    ("server_fields", "extra", "field"),
    [
        ({"name": ""}, {}, "name"),
        ({"name": "bad name!"}, {}, "name"),
        ({"serverUrl": "ftp://x"}, {}, "server_url"),
        ({"serverUrl": "http://[::1"}, {}, "server_url"),  # urllib raises on it: was an internal error
        ({"serverUrl": "http://h:99999/mcp"}, {}, "server_url"),
        ({"serverUrl": "https://user:hunter2@h.example.test/mcp"}, {}, "server_url"),  # was returned by Get
        ({"serverUrl": "http://h.example.test:0/mcp"}, {}, "server_url"),
        ({"serverUrl": "http://a b.example.test/mcp"}, {}, "server_url"),
        ({"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_UNSPECIFIED"}}, {}, "auth.type"),
        ({"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE"}}, {}, "auth.oauth"),
        ({"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"}}, {}, "api_key"),
        ({"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"}}, {"apiKey": "x"}, "api_key"),
        ({"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"}}, {"apiKey": "line\nbreak"}, "api_key"),  # a header
        (
            {
                "auth": {
                    "type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE",
                    "oauth": {**OAUTH, "authorizationParameters": {"state": "x"}},
                }
            },
            {"oauthClientSecret": "s"},
            "authorization_parameters",
        ),
        (
            {"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": OAUTH}},
            {},
            "oauth_client_secret",
        ),
        (
            {"auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": {"tokenUrl": "https://t"}}},
            {},
            "authorization_url",
        ),
        ({}, {"staticHeaders": [{"name": "Bad Header", "value": "v"}]}, "static_headers.name"),
        ({}, {"staticHeaders": [{"name": "Authorization", "value": "v"}]}, "static_headers.name"),
        ({}, {"staticHeaders": [{"name": "X-A", "value": "line\nbreak"}]}, "static_headers.value"),
        ({}, {"staticHeaders": [{"name": "X-A", "value": "c1\x85nel"}]}, "static_headers.value"),  # C1 controls too
        ({}, {"staticHeaders": [{"name": "X-A", "value": "1"}, {"name": "x-a", "value": "2"}]}, "static_headers.name"),
    ],
)
async def test_invalid_registrations_name_the_field_and_write_nothing(
    server: Server, connect: ConnectJsonCaller, server_fields: dict[str, Any], extra: dict[str, Any], field: str
) -> None:
    name = _name()
    body = {"externalMcpServer": {"name": name, "serverUrl": "https://t.example.test/mcp", **server_fields}, **extra}
    result = await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token)
    assert result.code == "invalid_argument", result
    assert field in result.message
    assert "line\nbreak" not in result.message
    missing = await connect.call(f"{MCP}/GetExternalMcpServer", {"name": name}, token=server.admin_token, get=True)
    assert missing.code == "not_found"


@pytest.mark.parametrize("value", ["line\nbreak", "c1\x85nel", "c1\x9fapc"])
def test_per_request_headers_refuse_what_static_headers_refuse(value: str) -> None:
    """The Responses `mcp` tool's own headers are checked by the static headers' rule: no control character but tab,
    C1 (U+0080-U+009F) as much as C0."""
    with pytest.raises(InvalidArgument) as caught:
        mcp_servers.request_headers({"X-Note": value}, "tools[0].headers")
    assert caught.value.field == "tools[0].headers"
    assert mcp_servers.request_headers({"X-Note": "tab\tand é"}, "tools[0].headers")  # tab and Latin-1 letters pass
    with pytest.raises(InvalidArgument) as token:  # so is a per-user token, sent as a header too
        mcp_servers.bearer_token(f"token{value}", "tools[0].authorization")
    assert token.value.field == "tools[0].authorization"


async def test_platform_servers_are_created_from_platform_scope_only(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """Spec Auth 9: a platform resource is managed only from platform scope. A can_manage_tenants user acting in a
    tenant's scope (X-Platform-Tenant-Id) created platform MCP servers (and probed for them) from there."""
    ops = server.token(world.user_ids["editor"], roles=("can_manage_tenants",))
    name = _name("scoped")
    body = {"externalMcpServer": {"name": name, "serverUrl": "https://scoped.example.test/mcp"}}
    discover = {"serverUrl": "https://scoped.example.test/mcp"}
    for method, request in (("CreatePlatformExternalMcpServer", body), ("DiscoverPlatformExternalMcpServer", discover)):
        scoped = await connect.call(f"{MCP}/{method}", request, token=ops, tenant=world.tenant_id)
        assert scoped.code == "permission_denied" and "platform scope" in scoped.message, (method, scoped)
    missing = await connect.call(f"{MCP}/GetExternalMcpServer", {"name": name}, token=server.admin_token, get=True)
    assert missing.code == "not_found", missing
    must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=ops))  # from platform scope


async def test_moving_the_token_endpoint_needs_the_client_secret_again(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """The client secret is sent to the token endpoint, which token_url or issuer_url decide as much as server_url:
    a co-administrator (a member granted ADMIN, who never held the secret) moving either kept the stored secret, and
    the next exchange sent it to the new host. Like a server_url change, it must be given again (or cleared)."""
    name = _name("tok")
    auth = {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": OAUTH}
    body = {
        "tenantId": world.tenant_id,
        "externalMcpServer": {"name": name, "serverUrl": "https://tok.example.test/mcp", "auth": auth},
        "oauthClientSecret": CLIENT_SECRET,
    }
    must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=world.tokens["editor"]))
    grant = {
        "name": name,
        "subject": {"type": "SUBJECT_TYPE_USER", "id": world.user_ids["member"]},
        "role": "DEPLOYMENT_ROLE_ADMIN",
    }
    must(await connect.call(f"{MCP}/AddExternalMcpServerPermission", grant, token=world.tokens["editor"]))
    member = world.tokens["member"]
    moves = {
        "token_url": {**OAUTH, "tokenUrl": "https://attacker.example.test/token"},
        "issuer_url": {**OAUTH, "issuerUrl": "https://attacker.example.test"},
    }
    for field, moved in moves.items():
        update = {"externalMcpServer": {"name": name, "auth": {**auth, "oauth": moved}}}
        refused = await connect.call(f"{MCP}/UpdateExternalMcpServer", update, token=member)
        assert refused.code == "invalid_argument", (field, refused)
        assert refused.message.startswith("oauth_client_secret") and field in refused.message, refused
        got = must(await connect.call(f"{MCP}/GetExternalMcpServer", {"name": name}, token=member, get=True))
        assert got["externalMcpServer"]["auth"]["oauth"] == {**OAUTH, "clientSecretSet": True}  # nothing written
    # No URL moved: the secret stays. Given again, it may go to the new endpoint.
    scopes = {"externalMcpServer": {"name": name, "auth": {**auth, "oauth": {**OAUTH, "scopes": ["tools.read"]}}}}
    must(await connect.call(f"{MCP}/UpdateExternalMcpServer", scopes, token=member))
    given = {
        "externalMcpServer": {"name": name, "auth": {**auth, "oauth": moves["token_url"]}},
        "oauthClientSecret": "s",
    }
    must(await connect.call(f"{MCP}/UpdateExternalMcpServer", given, token=member))


async def test_tenant_servers_need_the_capability_and_listing_needs_a_tenant(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    body = {
        "tenantId": world.tenant_id,
        "externalMcpServer": {"name": _name("team"), "serverUrl": "https://team.example.test/mcp"},
    }
    refused = await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=world.tokens["member"])
    assert refused.code == "permission_denied"
    mine = must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=world.tokens["editor"]))
    mine = mine["externalMcpServer"]
    shared = await _platform_bearer(connect, server, sharing={"shareToAll": True})
    private = await _platform_bearer(connect, server)

    no_tenant = await connect.call(f"{MCP}/ListExternalMcpServers", {}, token=world.tokens["editor"], get=True)
    assert no_tenant.code == "permission_denied" and "tenant" in no_tenant.message
    listed = must(
        await connect.call(
            f"{MCP}/ListExternalMcpServers", {}, token=world.tokens["editor"], tenant=world.tenant_id, get=True
        )
    )["externalMcpServers"]
    names = {s["name"]: s for s in listed}
    assert mine["name"] in names and shared["name"] in names and private["name"] not in names
    assert names[mine["name"]]["tenantId"] == world.tenant_id
    assert names[shared["name"]].get("tenantId", "") == "" and names[shared["name"]]["shareToAll"] is True
    # The creator administers it without being a tenant admin; a plain member may not even see it.
    got = await connect.call(
        f"{MCP}/GetExternalMcpServer", {"name": mine["name"]}, token=world.tokens["editor"], get=True
    )
    assert got.ok
    hidden = await connect.call(
        f"{MCP}/GetExternalMcpServer", {"name": mine["name"]}, token=world.tokens["member"], get=True
    )
    assert hidden.code == "not_found"
    # The outsider's tenant sees platform servers shared with everyone, never this tenant's.
    outside = must(
        await connect.call(
            f"{MCP}/ListExternalMcpServers", {}, token=world.tokens["outsider"], tenant=world.other_tenant_id, get=True
        )
    )["externalMcpServers"]
    assert mine["name"] not in {s["name"] for s in outside} and shared["name"] in {s["name"] for s in outside}


async def test_oauth_metadata_for_invokers(server: Server, connect: ConnectJsonCaller, world: World) -> None:
    name = _name("oauth")
    oauth_auth = {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": OAUTH}
    body = {
        "externalMcpServer": {
            "name": name,
            "serverUrl": "https://oauth.example.test/mcp",
            "displayName": "Calendar",
            "auth": oauth_auth,
            "sharing": {"shareToAll": True},
        },
        "oauthClientSecret": CLIENT_SECRET,
    }
    must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
    member = world.tokens["member"]
    listed = must(
        await connect.call(f"{MCP}/ListExternalMcpServers", {}, token=member, tenant=world.tenant_id, get=True)
    )["externalMcpServers"]
    assert {"name": name, "userAuthRequired": True}.items() <= next(s for s in listed if s["name"] == name).items()
    # A reader (not an admin) gets the non-secret bootstrap data, never the client secret.
    denied = await connect.call(f"{MCP}/GetExternalMcpServer", {"name": name}, token=member, get=True)
    assert denied.code == "permission_denied"
    result = await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=member)
    _assert_no_secret(result)
    meta = must(result)
    assert meta["oauth"]["clientId"] == "switchboard" and meta["oauth"]["clientSecretSet"] is True
    assert meta["redirectUri"] == server.settings.mcp_oauth_redirect_uri
    assert meta["serverDisplayName"] == "Calendar" and meta["metadataVersion"]
    # The version changes with the configuration, so a client holding an old one can tell.
    changed = {**OAUTH, "scopes": ["tools.read"]}
    update = {"externalMcpServer": {"name": name, "auth": {**oauth_auth, "oauth": changed}}}
    must(await connect.call(f"{MCP}/UpdateExternalMcpServer", update, token=server.admin_token))
    again = must(await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=member))
    assert again["metadataVersion"] != meta["metadataVersion"]
    # Servers without OAuth have no such metadata; servers out of reach do not exist for the caller.
    bearer = await _platform_bearer(connect, server, sharing={"shareToAll": True})
    none = await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": bearer["name"]}, token=member)
    assert none.code == "failed_precondition"
    private = await _platform_bearer(connect, server)
    hidden = await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": private["name"]}, token=member)
    assert hidden.code == "not_found"


async def test_permissions_and_delete(server: Server, connect: ConnectJsonCaller, world: World) -> None:
    body = {
        "tenantId": world.tenant_id,
        "externalMcpServer": {"name": _name("perm"), "serverUrl": "https://perm.example.test/mcp"},
    }
    name = must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=world.tokens["editor"]))[
        "externalMcpServer"
    ]["name"]
    grant = {"name": name, "subject": {"type": "SUBJECT_TYPE_USER", "id": world.user_ids["member"]}}
    grant["role"] = "DEPLOYMENT_ROLE_READER"
    must(await connect.call(f"{MCP}/AddExternalMcpServerPermission", grant, token=world.tokens["editor"]))
    listed = must(
        await connect.call(
            f"{MCP}/ListExternalMcpServerPermissions", {"name": name}, token=world.tokens["editor"], get=True
        )
    )
    assert listed["permissions"] == [{"subject": grant["subject"], "role": "DEPLOYMENT_ROLE_READER"}]
    servers = must(
        await connect.call(
            f"{MCP}/ListExternalMcpServers", {}, token=world.tokens["member"], tenant=world.tenant_id, get=True
        )
    )["externalMcpServers"]
    assert name in {s["name"] for s in servers}  # the grant makes it invokable for the member
    must(await connect.call(f"{MCP}/RemoveExternalMcpServerPermission", grant, token=world.tokens["editor"]))
    must(await connect.call(f"{MCP}/DeleteExternalMcpServer", {"name": name}, token=world.tokens["editor"]))
    gone = await connect.call(f"{MCP}/GetExternalMcpServer", {"name": name}, token=world.tokens["editor"], get=True)
    assert gone.code == "not_found"
    again = await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=world.tokens["editor"])
    assert again.ok  # the name is free again


async def test_names_are_unique(server: Server, connect: ConnectJsonCaller) -> None:
    created = await _platform_bearer(connect, server)
    body = {
        "externalMcpServer": {"name": created["name"], "serverUrl": "https://x.example.test/mcp"},
    }
    duplicate = await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token)
    assert duplicate.code == "already_exists"
