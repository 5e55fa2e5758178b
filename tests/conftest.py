"""Fixtures: real databases (SQLite and PostgreSQL), the real server on loopback, and three kinds of client.

PostgreSQL: `SWITCHBOARD_TEST_PG_URL` (default postgresql://postgres@127.0.0.1:5432/test) is used only to create
and drop a database of this run's own; when it is unreachable the PostgreSQL half is skipped with that reason and
the run still passes on SQLite.
"""

from __future__ import annotations

import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.launch import start_management
from server.settings import Settings, load_settings
from server.store.migrate import upgrade
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import CALLERS, Caller, ConnectJsonCaller

pytest_plugins = ["tests.gateway_fixtures", "tests.rag_fixtures", "tests.limits_world"]

PG_ADMIN_URL = os.environ.get("SWITCHBOARD_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgresql"]


def _pg_admin_connect() -> Any:
    import psycopg

    return psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=3)


def _pg_unreachable_reason() -> str | None:
    try:
        _pg_admin_connect().close()
    except Exception as exc:
        return f"PostgreSQL unreachable at {PG_ADMIN_URL} ({type(exc).__name__}); ran on SQLite only"
    return None


@dataclass
class Database:
    __test__ = False
    backend: str
    url: str


@pytest.fixture(scope="session", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A fresh, migrated database of this run's own, on each backend."""
    if request.param == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "switchboard.db"
        url = f"sqlite+aiosqlite:///{path}"
        upgrade(url)
        yield Database("sqlite", url)
        return
    reason = _pg_unreachable_reason()
    if reason:
        pytest.skip(reason)
    name = f"sb_test_{secrets.token_hex(6)}"
    with _pg_admin_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    url = f"{base.replace('postgresql://', 'postgresql+psycopg://', 1)}/{name}"
    try:
        upgrade(url)
        yield Database("postgresql", url)
    finally:
        with _pg_admin_connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Server:
    """A running management server and what a test needs to talk to it."""

    base_url: str
    port: int
    settings: Settings
    backend: str
    _tokens: dict[tuple[str, tuple[str, ...], str], str] = field(default_factory=dict)

    def token(self, user: str, *, roles: tuple[str, ...] = (), email: str = "") -> str:
        key = (user, roles, email)
        if key not in self._tokens:
            self._tokens[key] = mint_token(
                self.settings, user_id=user, email=email or f"{user}@example.com", name=user.title(), roles=roles
            )
        return self._tokens[key]

    @property
    def admin_token(self) -> str:
        return self.token("platform-admin", roles=PLATFORM_ROLES)


async def insert_rows(database: Database, *rows: Any) -> None:
    """Write rows straight into the test database (for data only other processes write, such as metering)."""
    from server.store.db import Database as Db

    db = Db(database.url)
    try:
        async with db.transaction() as session:
            session.add_all(rows)
    finally:
        await db.close()


def server_env(database: Database, var_dir: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "SWITCHBOARD_DATABASE_URL": database.url,
            "SWITCHBOARD_VAR_DIR": str(var_dir),
            "SWITCHBOARD_LOG_LEVEL": "WARNING",
            "SWITCHBOARD_API_KEY_CACHE_SECONDS": "1",
            # Stand-in MCP servers and OAuth endpoints only ever listen on loopback (development/test setting).
            "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",
            # Stopped servers stop accepting at once; tests of the deregistration delay set their own.
            "SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS": "0",
            **extra,
        }
    )
    return env


async def start_server(env: dict[str, str], **kwargs: Any) -> Any:
    """Start the real management server with this environment (see server.launch)."""
    return await start_management(env, **kwargs)


@pytest_asyncio.fixture(scope="session")
async def server(database: Database) -> AsyncIterator[Server]:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-var-"))
    env = server_env(database, var_dir)
    proc = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    try:
        yield Server(f"http://127.0.0.1:{proc.listener_port}", proc.listener_port, settings, database.backend)
    finally:
        await proc.stop()


@pytest.fixture(params=sorted(CALLERS))
def caller(request: pytest.FixtureRequest, server: Server) -> Caller:
    """The same calls through each independent client: Connect JSON over HTTP, grpcio stubs, and buf curl."""
    return CALLERS[request.param](server.base_url)


@pytest.fixture
def connect(server: Server) -> ConnectJsonCaller:
    return ConnectJsonCaller(server.base_url)
