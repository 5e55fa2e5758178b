"""A database that cannot serve a request is a 503 the client may retry (`unavailable`), never a 500, on both servers
(server.errors.unavailable): PostgreSQL refusing connections (its connection limit for the database reached), and
a server's own pool exhausted (SWITCHBOARD_DB_POOL_SIZE connections all held, none free within
SWITCHBOARD_DB_POOL_TIMEOUT_SECONDS). Real PostgreSQL, real servers: the database belongs to a role of its own
(superusers are exempt from a database's connection limit), whose connection limit the test fills itself."""

from __future__ import annotations

import asyncio
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import psycopg
import pytest

from server.settings import load_settings
from server.store.migrate import upgrade
from server.tokens import PLATFORM_ROLES, mint_token
from tests.conftest import PG_ADMIN_URL, Database, server_env, start_server
from tests.gateway_fixtures import start_gateway_process
from tests.pg_urls import libpq_url

pytestmark = pytest.mark.timeout(180)

LIMIT = 3  # the database's connection limit, all taken by the test while PostgreSQL is to refuse the servers


@dataclass
class Limited:
    """A database owned by a role of its own, which PostgreSQL's per-database connection limit applies to."""

    name: str
    role: str
    url: str  # the servers' (SQLAlchemy) URL

    @property
    def driver_url(self) -> str:
        return libpq_url(self.url)


def _admin() -> psycopg.Connection[Any]:
    return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)


@pytest.fixture(scope="module")
def limited() -> Iterator[Limited]:
    try:
        _admin().close()
    except Exception as exc:
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL} ({type(exc).__name__})")
    tag = secrets.token_hex(4)
    name, role = f"sb_limited_{tag}", f"sb_limited_{tag}"
    with _admin() as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{role}"')
    host = PG_ADMIN_URL.split("@", 1)[1].rsplit("/", 1)[0]
    database = Limited(name, role, f"postgresql+psycopg://{role}@{host}/{name}")
    try:
        upgrade(database.url)
        yield database
    finally:
        with _admin() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


@dataclass
class Servers:
    management: str
    gateway: str  # .../v1
    token: str  # a platform admin's session token


@pytest.fixture(scope="module")
async def servers(limited: Limited) -> AsyncIterator[Servers]:
    """Both servers on the limited database, each process with one pooled connection (and one overflow) for
    transactions, waited for one second at most."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-limited-"))
    extra = {"SWITCHBOARD_DB_POOL_SIZE": "1", "SWITCHBOARD_DB_POOL_TIMEOUT_SECONDS": "1"}
    env = server_env(Database("postgresql", limited.url), var_dir, **extra)
    management = await start_server(env)
    gateway = None
    try:
        gateway_env = {**env, "SWITCHBOARD_GATEWAY_HOST": "127.0.0.1", "SWITCHBOARD_GATEWAY_PORT": "0"}
        gateway = await start_gateway_process(gateway_env, workers=1)
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        token = mint_token(settings, user_id="limited-admin", roles=PLATFORM_ROLES)
        yield Servers(f"http://127.0.0.1:{management.listener_port}", gateway.base_url, token)
    finally:
        if gateway is not None:
            gateway.proc.terminate()
            await asyncio.wait_for(gateway.proc.wait(), 60)
        await management.stop()


async def _list_tenants(http: aiohttp.ClientSession, servers: Servers) -> tuple[int, dict[str, Any]]:
    async with http.post(
        f"{servers.management}/platform.tenants.v1.TenantService/ListTenants",
        json={},
        headers={"Authorization": f"Bearer {servers.token}"},
    ) as resp:
        return resp.status, await resp.json()


async def _create_tenant(http: aiohttp.ClientSession, servers: Servers) -> tuple[int, dict[str, Any]]:
    async with http.post(
        f"{servers.management}/platform.tenants.v1.TenantService/CreateTenant",
        json={"name": f"t-{secrets.token_hex(4)}"},
        headers={"Authorization": f"Bearer {servers.token}"},
    ) as resp:
        return resp.status, await resp.json()


async def _models(http: aiohttp.ClientSession, servers: Servers) -> tuple[int, str, dict[str, Any]]:
    """The gateway's model list with a key it has never seen: it must look the key up in the database."""
    headers = {"Authorization": f"Bearer sk-{secrets.token_hex(16)}"}
    async with http.get(f"{servers.gateway}/models", headers=headers) as resp:
        return resp.status, resp.headers.get("x-should-retry", ""), await resp.json()


def _fill(limited: Limited) -> list[psycopg.Connection[Any]]:
    """Take every connection the database allows its role, and end the servers' (pooled and listening) ones: from
    now on PostgreSQL refuses the servers every connection ("too many connections for database")."""
    held = [psycopg.connect(limited.driver_url, autocommit=True, connect_timeout=3) for _ in range(LIMIT)]
    mine = [c.info.backend_pid for c in held]
    with _admin() as conn:
        conn.execute(f'ALTER DATABASE "{limited.name}" CONNECTION LIMIT {LIMIT}')
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND NOT pid = ANY(%s)",
            (limited.name, mine),
        )
    return held


def _release(limited: Limited, held: list[psycopg.Connection[Any]]) -> None:
    for conn in held:
        conn.close()
    with _admin() as conn:
        conn.execute(f'ALTER DATABASE "{limited.name}" CONNECTION LIMIT -1')


async def test_postgresql_refusing_connections_is_a_retryable_503_on_both_servers(
    limited: Limited, servers: Servers
) -> None:
    async with aiohttp.ClientSession() as http:
        assert (await _list_tenants(http, servers))[0] == 200
        assert (await _models(http, servers))[0] == 401  # looked up, not found
        held = await asyncio.to_thread(_fill, limited)
        try:
            for _ in range(3):
                status, body = await _list_tenants(http, servers)
                assert (status, body["code"]) == (503, "unavailable"), body
                assert "database is unavailable" in body["message"]
                status, retry, error = await _models(http, servers)
                assert (status, retry, error["error"]["type"]) == (503, "true", "server_error"), error
        finally:
            await asyncio.to_thread(_release, limited, held)
        # Once PostgreSQL accepts connections again, both serve again (their pools reconnect).
        for _ in range(50):
            if (await _list_tenants(http, servers))[0] == 200 and (await _models(http, servers))[0] == 401:
                break
            await asyncio.sleep(0.2)
        else:
            raise AssertionError("the servers did not recover")


def _lock_tenants(limited: Limited, locked: asyncio.Event, release: asyncio.Event, loop: Any) -> None:
    """Hold an exclusive lock on the tenants table until `release` is set: every write to it waits, holding its
    pooled connection."""
    with psycopg.connect(limited.driver_url, connect_timeout=3) as conn:
        conn.execute("LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE")
        loop.call_soon_threadsafe(locked.set)
        asyncio.run_coroutine_threadsafe(release.wait(), loop).result(60)
        conn.rollback()


async def test_an_exhausted_pool_is_a_retryable_503(limited: Limited, servers: Servers) -> None:
    """One pooled connection and one overflow connection (SWITCHBOARD_DB_POOL_SIZE=1), both held by creates waiting
    on a lock: further creates wait a second for a connection, then are refused 503; the held ones complete."""
    async with aiohttp.ClientSession() as http:
        assert (await _create_tenant(http, servers))[0] == 200
        locked, release = asyncio.Event(), asyncio.Event()
        holder = asyncio.ensure_future(
            asyncio.to_thread(_lock_tenants, limited, locked, release, asyncio.get_running_loop())
        )
        await locked.wait()
        calls = [asyncio.ensure_future(_create_tenant(http, servers)) for _ in range(4)]
        await asyncio.sleep(3)  # the pool's wait (1 s) is over for the calls that found no connection
        release.set()
        await holder
        results = await asyncio.gather(*calls)
    statuses = sorted(status for status, _ in results)
    assert 503 in statuses and set(statuses) <= {200, 503}, results
    assert 200 in statuses  # the calls that had a connection completed once the lock went
    for status, body in results:
        if status == 503:
            assert body["code"] == "unavailable", body
