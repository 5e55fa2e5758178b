"""The engine's connection handling on both databases: the one-trip SQLite cursor keeps DB-API behaviour (rows,
rowcount, executemany, commit and rollback), and a PostgreSQL connection the server closed while it sat in the pool
is replaced at checkout, without a failed request and without a ping round trip."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from server.store.db import Database
from tests.conftest import PG_ADMIN_URL, _pg_admin_connect, _pg_unreachable_reason
from tests.conftest import Database as TestDatabase


async def test_statements_commit_and_rollback_behave_as_the_driver_would(database: TestDatabase) -> None:
    db = Database(database.url)
    try:
        async with db.transaction() as s:
            await s.execute(text("DROP TABLE IF EXISTS engine_probe"))
            await s.execute(text("CREATE TABLE engine_probe (id INTEGER PRIMARY KEY, name VARCHAR(20))"))
        async with db.transaction() as s:
            inserted = await s.execute(text("INSERT INTO engine_probe VALUES (1, 'a'), (2, 'b')"))
            assert inserted.rowcount == 2
            connection = await s.connection()
            await connection.exec_driver_sql(
                "INSERT INTO engine_probe VALUES (?, ?)"
                if database.backend == "sqlite"
                else "INSERT INTO engine_probe VALUES (%s, %s)",
                [(3, "c"), (4, "d")],
            )
        with pytest.raises(RuntimeError):
            async with db.transaction() as s:
                await s.execute(text("UPDATE engine_probe SET name = 'z'"))
                raise RuntimeError("refused: nothing of this transaction is kept")
        async with db.read() as s:
            rows = (await s.execute(text("SELECT id, name FROM engine_probe ORDER BY id"))).all()
            assert [tuple(r) for r in rows] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
            assert await s.scalar(text("SELECT name FROM engine_probe WHERE id = 3")) == "c"
            assert (await s.execute(text("SELECT id FROM engine_probe WHERE id > 10"))).first() is None
        async with db.transaction() as s:
            updated = await s.execute(text("UPDATE engine_probe SET name = 'y' WHERE id > 2"))
            assert updated.rowcount == 2
    finally:
        async with db.transaction() as s:  # the PostgreSQL database is the whole run's: leave its schema as found
            await s.execute(text("DROP TABLE IF EXISTS engine_probe"))
        await db.close()


async def test_a_pooled_connection_closed_by_the_server_is_replaced_at_checkout(database: TestDatabase) -> None:
    if database.backend != "postgresql":
        pytest.skip("a PostgreSQL server closing an idle connection")
    if _pg_unreachable_reason():
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")
    db = Database(database.url)
    try:
        async with db.read() as s:
            pid = await s.scalar(text("SELECT pg_backend_pid()"))
        with _pg_admin_connect() as admin:  # what a restart or an idle timeout does to that pooled connection
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.2)
        async with db.read() as s:
            assert await s.scalar(text("SELECT pg_backend_pid()")) != pid
    finally:
        await db.close()


async def test_a_lone_read_runs_outside_a_transaction_and_leaves_transactions_whole(database: TestDatabase) -> None:
    """PostgreSQL: a lone read saves the BEGIN and COMMIT round trips, and the pooled connection it used is back in
    transaction mode for the next RPC (txid_current() is one per transaction)."""
    if database.backend != "postgresql":
        pytest.skip("SQLite's lone reads use the engine's own connections unchanged")
    if _pg_unreachable_reason():
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")
    db = Database(database.url)
    try:
        for _ in range(3):  # alternate on the same pooled connections
            async with db.lone_read() as s:
                first, second = (
                    await s.scalar(text("SELECT txid_current()")),
                    await s.scalar(text("SELECT txid_current()")),
                )
                assert first != second
            async with db.transaction() as s:
                first, second = (
                    await s.scalar(text("SELECT txid_current()")),
                    await s.scalar(text("SELECT txid_current()")),
                )
                assert first == second
    finally:
        await db.close()
