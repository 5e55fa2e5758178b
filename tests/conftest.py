"""Fixtures: real databases (SQLite and PostgreSQL), the real server on loopback, and three kinds of client.

PostgreSQL: `SWITCHBOARD_TEST_PG_URL` (default postgresql://postgres@127.0.0.1:5432/test) is used only to create
and drop a database of this run's own; when it is unreachable the PostgreSQL half is skipped with that reason and
the run still passes on SQLite.

Parallel runs: `make test` runs the suite in several pytest-xdist worker processes at once (`-n 3 --dist loadgroup`),
and other runs may share the machine's PostgreSQL and Redis. Every name a test makes in a shared service comes from
`unique_name` (the worker's name and a random part); every test that must not overlap another is put in one
`SERIAL_GROUPS` group here, which xdist runs on one worker, one test after another. `pytest -q` without `-n` runs
everything in one process, as before.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
import pytest_asyncio

from server.launch import start_management
from server.settings import Settings, load_settings
from server.store.migrate import upgrade
from server.tokens import PLATFORM_ROLES, mint_token
from setup import compiled_sources
from tests.clients import CALLERS, Caller, ConnectJsonCaller
from tests.pg_urls import libpq_url, sqlalchemy_url

pytest_plugins = ["tests.gateway_fixtures", "tests.rag_fixtures", "tests.limits_world"]

PG_ADMIN_URL = os.environ.get("SWITCHBOARD_TEST_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")
BACKENDS = ["sqlite", "postgresql"]
T = TypeVar("T")
ROOT = Path(__file__).parent.parent
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")  # gw0, gw1, … under pytest-xdist; "main" without -n
# Every server a test starts inherits this environment. Small pools keep all xdist workers' servers within
# PostgreSQL's default max_connections (100); a test about pool sizes sets its own.
os.environ.setdefault("SWITCHBOARD_DB_POOL_SIZE", "4")
# Stopped servers and gateways stop accepting at once (production waits for load balancers to deregister them);
# tests of the deregistration delay set their own.
os.environ.setdefault("SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS", "0")

# Tests that must not overlap, by node id prefix: each group runs on one xdist worker, one test after another.
SERIAL_GROUPS: dict[str, tuple[str, ...]] = {
    # A whole `make run` demo each (both servers, dev-models loading the embedding model: memory and CPU), and each
    # first runs `make` on the repository's .venv stamps, which must never install twice at once.
    "make-run": (
        "tests/test_quickstart.py::",
        "tests/test_demo_walkthrough.py::",
        "tests/test_docs_examples.py::test_every_docs_example_runs_as_written",
    ),
    # One chromium at a time; their setup installs and builds into the repository tree (apt-get, npm ci,
    # buf generate, esbuild output under tests/browser/), which two workers must not do at once.
    "browser": ("tests/test_browser_cors.py::", "tests/console/"),
    # Fleets of replicas on PostgreSQL (25-40 connections each at their peak): two at once beside the other workers'
    # servers ran the server out of connections (max_connections, 100; docs/development.md).
    "postgresql-fleets": ("tests/test_topology.py::", "tests/test_invalidation.py::"),
}


def unique_name(kind: str) -> str:
    """A name of this test process's own in a shared service (a PostgreSQL database, a Redis key prefix): `kind`,
    the xdist worker, and a random part for other runs on the same server. Lowercase letters, digits and `_` only,
    so it needs no quoting anywhere."""
    return f"{kind}_{WORKER}_{secrets.token_hex(5)}"


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist registers this mark itself; without it installed, SERIAL_GROUPS must not warn.
    config.addinivalue_line("markers", "xdist_group(name): run on one pytest-xdist worker with the group's other tests")
    stale = stale_compiled_modules()
    if stale:
        pytest.exit(
            f"{', '.join(stale)} changed since it was compiled, and Python would import the old build: run "
            "`make compiled` (or `make test`)",
            returncode=2,
        )


def stale_compiled_modules(root: Path = ROOT) -> list[str]:
    """The compiled sources whose build (the .so beside them that Python imports first) is older than they are."""
    stale = []
    for source in compiled_sources(root):
        path = root / source
        builds = list(path.parent.glob(f"{path.stem}.*.so"))
        if builds and min(build.stat().st_mtime for build in builds) < path.stat().st_mtime:
            stale.append(source)
    return stale


def _xdist_group(item: pytest.Item) -> str | None:
    """The one group of this test (xdist joins several marks into a group of their own), or None: any worker."""
    for group, prefixes in SERIAL_GROUPS.items():
        if item.nodeid.startswith(prefixes):
            return group
    # A fixture set up once per module, or a session fixture of the module's own, usually starts processes (gateways,
    # a fleet behind Envoy): every worker that ran one of the module's tests would start its own. The module's tests
    # stay on one worker instead, so it is set up once, as without -n.
    module = item.nodeid.split("::", 1)[0]
    if isinstance(item, pytest.Function):
        for definitions in item._fixtureinfo.name2fixturedefs.values():
            used = definitions[-1]  # the closest definition is the one the test gets
            if used.scope == "module" or (used.scope in ("package", "session") and used.baseid == module):
                return module
    return None


@pytest.hookimpl(wrapper=True)  # marks before every other implementation: pytest-xdist's reads them
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> Iterator[None]:
    groups = {}
    for item in items:
        group = _xdist_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
            groups[item] = group
    yield
    if getattr(config.option, "loadgroup", False):  # an xdist worker under --dist loadgroup
        for item, group in groups.items():
            _tell_xdist_the_group(item, group)


def _tell_xdist_the_group(item: pytest.Item, group: str) -> None:
    """pytest-xdist's worker tells the scheduler a test's group by appending `@group` to its node id, which
    pytest-xdist 3.8 writes to the attribute pytest kept it in before 9.2; pytest 9.2's structured node ids ignore
    that, so grouping silently stops (pytest-xdist issue #1386, unfixed in a release as of 3.8.0). Until it is,
    the suffix is written here to the field pytest 9.2 reads, and a run where neither way worked stops at once
    rather than run `make run` tests side by side."""
    suffix = f"@{group}"
    if not item.nodeid.endswith(suffix):
        from _pytest.nodeid import NodeId  # pytest >= 9.2, the only case that gets here

        # In the last name, after the parameters: the id reads the same rebuilt from its parts (as in reports).
        old = item._id
        last = old.names[-1] + ("" if old.params is None else f"[{old.params}]") + suffix
        item._id = NodeId(path=old.path, names=(*old.names[:-1], last))
    if not item.nodeid.endswith(suffix):
        raise pytest.UsageError(f"pytest-xdist's group of {item.nodeid} ({group}) could not be set")


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
    url: str  # SQLAlchemy's

    @property
    def libpq_url(self) -> str:
        """The PostgreSQL database's URL as psycopg (libpq) takes it."""
        return libpq_url(self.url)


class Kept:
    """What the parametrized session fixtures make (a database per backend, its server, gateway and world), made
    once per test process and closed when the process's tests are done, last made first closed.

    Pytest keeps one value of a parametrized session fixture at a time: a test on the other backend tears it down.
    Without -n the tests run backend by backend, so that happens once; an xdist worker gets tests of both backends
    in turn and would stop and start its servers (seconds each, tens on a busy machine) at every switch.
    """

    def __init__(self, stack: contextlib.AsyncExitStack) -> None:
        self._stack = stack
        self._values: dict[tuple[str, str], Any] = {}

    def get(self, key: tuple[str, str], make: Callable[[], AbstractContextManager[T]]) -> T:
        if key not in self._values:
            self._values[key] = self._stack.enter_context(make())
        return cast(T, self._values[key])

    async def aget(self, key: tuple[str, str], make: Callable[[], AbstractAsyncContextManager[T]]) -> T:
        if key not in self._values:
            self._values[key] = await self._stack.enter_async_context(make())
        return cast(T, self._values[key])


@pytest_asyncio.fixture(scope="session")
async def kept() -> AsyncIterator[Kept]:
    async with contextlib.AsyncExitStack() as stack:
        yield Kept(stack)


@contextlib.contextmanager
def fresh_database(backend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A fresh, migrated database of this run's own on `backend`, dropped on the way out."""
    if backend == "sqlite":
        path = tmp_path_factory.mktemp("sqlite") / "switchboard.db"
        url = f"sqlite+aiosqlite:///{path}"
        upgrade(url)
        yield Database("sqlite", url)
        return
    reason = _pg_unreachable_reason()
    if reason:
        pytest.skip(reason)
    name = unique_name("sb_test")
    with _pg_admin_connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    url = sqlalchemy_url(PG_ADMIN_URL, name)
    try:
        upgrade(url)
        yield Database("postgresql", url)
    finally:
        with _pg_admin_connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# A slow test of what does not depend on the database (a process's lifecycle, a client's retries) runs on one
# backend: `@ONE_BACKEND`.
ONE_BACKEND = pytest.mark.parametrize("database", ["sqlite"], indirect=True)


@pytest.fixture(scope="session", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, kept: Kept) -> Database:
    """A fresh, migrated database of this run's own, on each backend."""
    backend = str(request.param)
    return kept.get(("database", backend), lambda: fresh_database(backend, tmp_path_factory))


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
            **extra,
        }
    )
    return env


async def start_server(env: dict[str, str], **kwargs: Any) -> Any:
    """Start the real management server with this environment (see server.launch)."""
    return await start_management(env, **kwargs)


@contextlib.asynccontextmanager
async def running_server(database: Database) -> AsyncIterator[Server]:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-var-"))
    env = server_env(database, var_dir)
    proc = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    try:
        yield Server(f"http://127.0.0.1:{proc.listener_port}", proc.listener_port, settings, database.backend)
    finally:
        await proc.stop()


@pytest_asyncio.fixture(scope="session")
async def server(database: Database, kept: Kept) -> Server:
    """The management server on this backend's database, one per test process (see Kept)."""
    return await kept.aget(("server", database.url), lambda: running_server(database))


@pytest.fixture(params=sorted(CALLERS))
def caller(request: pytest.FixtureRequest, server: Server) -> Caller:
    """The same calls through each independent client: Connect JSON over HTTP, grpcio stubs, and buf curl."""
    return CALLERS[request.param](server.base_url)


@pytest.fixture
def connect(server: Server) -> ConnectJsonCaller:
    return ConnectJsonCaller(server.base_url)
