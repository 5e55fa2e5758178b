"""The databases a benchmark runs on: SQLite (a file of the run's own) and, when reachable, PostgreSQL (a database of
the run's own, dropped afterwards). `SWITCHBOARD_BENCH_PG_URL` names the PostgreSQL server (default: the local one
the tests use). A `SWITCHBOARD_BENCH_DATABASE_URL` set by the caller is used instead, as the only backend."""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.embedded_pg import embedded_pgvector_server
from tests.pg_urls import sqlalchemy_url

__all__ = ["backends", "database_url", "embedded_pgvector_url", "using"]

PG_ADMIN_URL = os.environ.get("SWITCHBOARD_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test")


def _pg_admin() -> Any:
    return _connect(PG_ADMIN_URL)


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=3)


def backends() -> list[str]:
    """SQLite always; PostgreSQL when its server answers (otherwise say so and skip it)."""
    if os.environ.get("SWITCHBOARD_BENCH_DATABASE_URL"):
        return ["given"]
    try:
        _pg_admin().close()
    except Exception as exc:
        print(f"PostgreSQL unreachable at {PG_ADMIN_URL} ({type(exc).__name__}): SQLite only")
        return ["sqlite"]
    return ["sqlite", "postgresql"]


@contextlib.contextmanager
def using(backend: str) -> Iterator[None]:
    """Point `bench.common.running_server` at a fresh database of `backend` for the block."""
    if backend == "given":
        yield
        return
    previous = os.environ.pop("SWITCHBOARD_BENCH_DATABASE_URL", None)
    name = f"sb_bench_{secrets.token_hex(4)}"
    try:
        if backend == "postgresql":
            with _pg_admin() as conn:
                conn.execute(f'CREATE DATABASE "{name}"')
            os.environ["SWITCHBOARD_BENCH_DATABASE_URL"] = sqlalchemy_url(PG_ADMIN_URL, name)
        yield
    finally:
        os.environ.pop("SWITCHBOARD_BENCH_DATABASE_URL", None)
        if previous is not None:
            os.environ["SWITCHBOARD_BENCH_DATABASE_URL"] = previous
        if backend == "postgresql":
            with _pg_admin() as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def database_url(backend: str, name: str) -> Iterator[str]:
    """`using(backend)` for a benchmark that opens the database itself: its URL (PostgreSQL's, or the caller's), or a
    SQLite file `name` in a directory of the block's own."""
    with using(backend), tempfile.TemporaryDirectory(prefix="switchboard-bench-") as directory:
        yield os.environ.get("SWITCHBOARD_BENCH_DATABASE_URL") or f"sqlite+aiosqlite:///{Path(directory) / name}"


@contextlib.contextmanager
def embedded_pgvector_url(name: str) -> Iterator[str]:
    """A fresh database `name` on an embedded PostgreSQL with pgvector (the one the tests use), its SQLAlchemy URL;
    the server and its data are gone after the block."""
    with embedded_pgvector_server() as server:
        with _connect(server.get_uri()) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        yield sqlalchemy_url(server.get_uri(), name)
