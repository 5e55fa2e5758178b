"""Deleting what owns keys or sessions (a service account, a tenant, a user) reaches every replica's caches at once: a
second management server on the same database, whose caches keep entries 60 s, must refuse at once what the first
deleted."""

from __future__ import annotations

import secrets
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Database, Server, server_env, start_server
from tests.gateway_fixtures import own_var_dir
from tests.world import TENANTS, USERS, make_world, must

KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"


@pytest_asyncio.fixture(scope="module")
async def replica(database: Database, server: Server) -> AsyncIterator[str]:
    """A second management server on the session server's database and keys (its tokens work here), whose caches
    keep entries 60 s: only an invalidation can make a change visible within a test."""
    var_dir = own_var_dir(server, Path(tempfile.mkdtemp(prefix="switchboard-replica-")) / "var")
    proc = await start_server(server_env(database, var_dir, SWITCHBOARD_API_KEY_CACHE_SECONDS="60"))
    try:
        yield f"http://127.0.0.1:{proc.listener_port}"
    finally:
        await proc.stop()


def _postgresql_only(database: Database) -> None:
    if database.backend != "postgresql":
        pytest.skip("on SQLite every commit drops every cache (the stamp); notifications are PostgreSQL's")


async def _whoami(connect: ConnectJsonCaller, secret: str) -> Result:
    return await connect.call(f"{USERS}/GetCurrentUser", {}, token=secret, get=True)


async def test_a_deleted_service_accounts_key_is_refused_at_once(
    database: Database, server: Server, replica: str
) -> None:
    """The account's keys were deleted by foreign-key cascade, which no invalidation hears: the key's cached lookup
    went on authenticating it for the whole cache bound."""
    _postgresql_only(database)
    connect = ConnectJsonCaller(replica)
    world = await make_world(server, connect)
    admin = world.tokens["admin"]
    account = must(
        await connect.call(
            f"{ACCOUNTS}/CreateServiceAccount",
            {"tenantId": world.tenant_id, "name": f"sa-{secrets.token_hex(3)}"},
            token=admin,
        )
    )["serviceAccount"]
    created = must(
        await connect.call(
            f"{KEYS}/CreateApiKey",
            {
                "tenantId": world.tenant_id,
                "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
                "name": "ci",
                "serviceAccountId": account["id"],
            },
            token=admin,
        )
    )
    must(await _whoami(connect, created["secret"]))  # cached now
    body = {"tenantId": world.tenant_id, "serviceAccountId": account["id"]}
    must(await connect.call(f"{ACCOUNTS}/DeleteServiceAccount", body, token=admin))
    after = await _whoami(connect, created["secret"])
    assert after.code == "unauthenticated", after


async def test_a_deleted_tenants_key_is_refused_at_once(database: Database, server: Server, replica: str) -> None:
    """The same for a deleted tenant's keys: the membership invalidation DeleteTenant sent left key lookups cached."""
    _postgresql_only(database)
    connect = ConnectJsonCaller(replica)
    world = await make_world(server, connect)
    created = must(
        await connect.call(
            f"{KEYS}/CreateApiKey",
            {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "laptop"},
            token=world.tokens["editor"],
        )
    )
    must(await _whoami(connect, created["secret"]))  # cached now
    must(await connect.call(f"{TENANTS}/DeleteTenant", {"tenantId": world.tenant_id}, token=server.admin_token))
    after = await _whoami(connect, created["secret"])
    assert after.code == "unauthenticated", after


async def test_a_deprovisioned_user_cannot_revive_their_keys_through_another_replica(
    server: Server, replica: str
) -> None:
    """Each process signs a user in (clearing deleted_at) the first time it sees their session token: one call with
    a token issued before the deletion, to a replica that had not seen them, undid the deprovisioning and their keys
    worked again. Such a token is now refused everywhere; the keys stay refused."""
    a, b = ConnectJsonCaller(server.base_url), ConnectJsonCaller(replica)
    world = await make_world(server, a)  # replica b has never seen these users
    editor = world.tokens["editor"]
    created = must(
        await a.call(
            f"{KEYS}/CreateApiKey",
            {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "laptop"},
            token=editor,
        )
    )
    must(await _whoami(a, created["secret"]))
    must(await a.call(f"{USERS}/DeleteUser", {"userId": world.user_ids["editor"]}, token=server.admin_token))
    assert (await _whoami(a, created["secret"])).code == "unauthenticated"
    await b.call(f"{USERS}/GetCurrentUser", {}, token=editor, get=True)  # the user's own session, on replica b
    revived = await _whoami(b, created["secret"])
    assert revived.code == "unauthenticated", revived
