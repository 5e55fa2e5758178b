"""The engine's connection handling on both databases: the one-trip SQLite cursor keeps DB-API behaviour (rows,
rowcount, executemany, commit and rollback), and a PostgreSQL connection the server closed while it sat in the pool
is replaced at checkout, without a failed request and without a ping round trip."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import (
    Integer,
    String,
    TypeDecorator,
    bindparam,
    column,
    exc,
    func,
    literal_column,
    make_url,
    select,
    table,
    text,
    type_coerce,
)

from server.store.db import Database, KeyLookup, lone_rows, lone_value
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


@pytest.mark.parametrize("pool", ["transactions", "lone reads"])
async def test_a_pooled_connection_closed_by_the_server_is_replaced_at_checkout(
    database: TestDatabase, pool: str
) -> None:
    """Both pools: lone reads on PostgreSQL have their own, of autocommit connections."""
    if database.backend != "postgresql":
        pytest.skip("a PostgreSQL server closing an idle connection")
    if _pg_unreachable_reason():
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")
    db = Database(database.url)
    session = db.read if pool == "transactions" else db.lone_read
    try:
        async with session() as s:
            pid = await s.scalar(text("SELECT pg_backend_pid()"))
        with _pg_admin_connect() as admin:  # what a restart or an idle timeout does to that pooled connection
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.2)
        async with session() as s:
            assert await s.scalar(text("SELECT pg_backend_pid()")) != pid
    finally:
        await db.close()


_BACKEND_PID = select(literal_column("pg_backend_pid()"))
_SLEEP = select(literal_column("1")).select_from(func.pg_sleep(bindparam("seconds", type_=Integer)))


def _postgresql(database: TestDatabase) -> None:
    if database.backend != "postgresql":
        pytest.skip("a PostgreSQL server's connections")
    if _pg_unreachable_reason():
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")


def _tagged(database: TestDatabase) -> str:
    """The test database's URL, its PostgreSQL connections named for this test alone: other tests' servers may still
    be closing theirs."""
    if database.backend != "postgresql":
        return database.url
    tag = {"application_name": f"probe-{secrets.token_hex(4)}"}
    return make_url(database.url).update_query_dict(tag).render_as_string(hide_password=False)


def _server_connections(db: Database) -> int:
    with _pg_admin_connect() as admin:
        row = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (make_url(db.url).query["application_name"],),
        ).fetchone()
    assert row is not None
    return int(row[0])


async def _all_closed(db: Database) -> bool:
    """The server drops a connection's backend a moment after the client closed it."""
    for _ in range(50):
        if _server_connections(db) == 0:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_held_lone_statement_connection_closed_by_the_server_is_replaced(database: TestDatabase) -> None:
    """Lone statements keep their connections between reads: one the server closed meanwhile is replaced before
    it is used, and the read answers."""
    _postgresql(database)
    db = Database(database.url)
    try:
        async with db.lone_read() as s:
            [(pid,)] = await lone_rows(s, _BACKEND_PID, {})
        async with db.lone_read() as s:
            assert await lone_rows(s, _BACKEND_PID, {}) == [(pid,)]  # held, not a new connection
        with _pg_admin_connect() as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        await asyncio.sleep(0.2)
        async with db.lone_read() as s:
            [(replacement,)] = await lone_rows(s, _BACKEND_PID, {})
        assert replacement != pid
    finally:
        await db.close()


async def test_a_cancelled_lone_statement_leaves_no_connection_behind(database: TestDatabase) -> None:
    """A caller cancelled mid-statement (a client gone): its connection is closed, not lent to the next read
    halfway through a statement; concurrent reads never hold more connections than the bound; closing the database
    closes every connection it kept."""
    _postgresql(database)
    db = Database(_tagged(database))
    try:

        async def sleep(seconds: int) -> list[Any]:
            async with db.lone_read() as s:
                return await lone_rows(s, _SLEEP, {"seconds": seconds})

        stuck = asyncio.create_task(sleep(30))
        await asyncio.sleep(0.3)
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        assert await asyncio.wait_for(sleep(0), 5) == [(1,)]
        await asyncio.gather(*(sleep(0) for _ in range(40)))
        assert _server_connections(db) <= 16
    finally:
        await db.close()
    assert await _all_closed(db)


async def test_a_lone_read_session_returns_what_it_checked_out(database: TestDatabase) -> None:
    """Lone-read sessions that never touched the database close without SQLAlchemy's close task; the ones that did
    still return their connection, also when their caller fails."""
    db = Database(database.url)
    engine = db._read_engine or db.engine
    try:
        for _ in range(3):
            async with db.lone_read():
                pass
            async with db.lone_read() as s:
                assert await s.scalar(text("SELECT 1")) == 1
            with pytest.raises(RuntimeError):
                async with db.lone_read() as s:
                    await s.scalar(text("SELECT 1"))
                    raise RuntimeError("the caller failed")
        assert engine.pool.checkedout() == 0  # type: ignore[attr-defined]
    finally:
        await db.close()


@contextlib.asynccontextmanager
async def _scratch_table(database: TestDatabase, definition: str, rows: str) -> AsyncIterator[Database]:
    """A store on the test database with a table of its own, dropped again: the PostgreSQL database is the run's."""
    db = Database(_tagged(database))
    name = definition.split(" ", 1)[0]
    try:
        async with db.transaction() as s:
            await s.execute(text(f"DROP TABLE IF EXISTS {name}"))
            await s.execute(text(f"CREATE TABLE {definition}"))
            await s.execute(text(f"INSERT INTO {name} VALUES {rows}"))  # noqa: S608 -- the tests' own literals
        yield db
    finally:
        async with db.transaction() as s:
            await s.execute(text(f"DROP TABLE IF EXISTS {name}"))
        await db.close()


_PROBE = table("lookup_probe", column("k", String), column("v", Integer))
_PROBE_VALUE = KeyLookup(_PROBE.c.k, _PROBE.c.v)


async def test_key_lookups_answer_each_key_and_see_every_commit_before_them(database: TestDatabase) -> None:
    """`lone_value`: each caller gets its key's value (None without a row), also inside a transaction; on PostgreSQL
    the lookups asked for in one turn of the event loop go as one statement (one connection serves thirty callers),
    a caller cancelled while waiting leaves the others their answers, and a lookup sees what committed before it."""
    async with _scratch_table(
        database, "lookup_probe (k VARCHAR(10) PRIMARY KEY, v INTEGER)", "('a', 1), ('b', 2)"
    ) as db:
        async with db.transaction() as s:
            assert await lone_value(s, _PROBE_VALUE, "b") == 2

        async def value(key: str) -> Any:
            async with db.lone_read() as s:
                return await lone_value(s, _PROBE_VALUE, key)

        before = _server_connections(db) if database.backend == "postgresql" else 0
        assert await asyncio.gather(*(value(k) for k in "abc" * 10)) == [1, 2, None] * 10
        if database.backend == "postgresql":  # SQLite answers each on the loop at once, without a round trip
            assert _server_connections(db) - before == 1
            waiting = [asyncio.create_task(value("a")) for _ in range(3)]
            await asyncio.sleep(0)  # all three asked; the statement is not sent yet
            waiting[1].cancel()
            assert await waiting[0] == await waiting[2] == 1
            with pytest.raises(asyncio.CancelledError):
                await waiting[1]
        async with db.transaction() as s:
            await s.execute(text("UPDATE lookup_probe SET v = 5 WHERE k = 'a'"))
        assert await value("a") == 5


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


def _sqlite_path(database: TestDatabase) -> str:
    if database.backend != "sqlite":
        pytest.skip("SQLite's lone reads are served on the event loop from read-only connections")
    return database.url.split("///", 1)[1]


async def test_a_lone_read_sees_the_last_commit_and_does_not_wait_for_an_open_write(database: TestDatabase) -> None:
    """WAL: a lone read runs beside another connection's uncommitted write and answers the committed state at once;
    each lone read starts a new read transaction, so it sees what was committed just before it."""
    path = _sqlite_path(database)
    db = Database(database.url)
    writer = sqlite3.connect(path, isolation_level=None)
    try:
        async with db.transaction() as s:
            await s.execute(text("DROP TABLE IF EXISTS lone_probe"))
            await s.execute(text("CREATE TABLE lone_probe (id INTEGER PRIMARY KEY)"))
        for n in range(1, 6):
            async with db.transaction() as s:
                await s.execute(text("INSERT INTO lone_probe VALUES (:n)"), {"n": n})
            async with db.lone_read() as s:
                assert await s.scalar(text("SELECT count(*) FROM lone_probe")) == n
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("INSERT INTO lone_probe VALUES (100)")
        started = time.perf_counter()
        async with db.lone_read() as s:
            assert await s.scalar(text("SELECT max(id) FROM lone_probe")) == 5
        assert time.perf_counter() - started < 0.5
        writer.execute("COMMIT")
        async with db.lone_read() as s:
            assert await s.scalar(text("SELECT max(id) FROM lone_probe")) == 100
    finally:
        if writer.in_transaction:
            writer.execute("ROLLBACK")
        writer.close()
        async with db.transaction() as s:
            await s.execute(text("DROP TABLE IF EXISTS lone_probe"))
        await db.close()


async def test_a_lone_read_refuses_writes(database: TestDatabase) -> None:
    _sqlite_path(database)
    db = Database(database.url)
    try:
        with pytest.raises(exc.OperationalError, match="readonly"):
            async with db.lone_read() as s:
                await s.execute(text("CREATE TABLE lone_write_probe (id INTEGER)"))
    finally:
        await db.close()


@pytest.mark.parametrize("through", ["session", "lone statement"])
async def test_a_busy_lone_read_waits_on_the_driver_thread_not_the_loop(tmp_path: Path, through: str) -> None:
    """A database not in WAL mode, exclusively locked by another connection: SQLite answers the read busy, and the
    read is retried on the driver's thread with the usual timeout while the loop keeps serving."""
    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("CREATE TABLE t (id INTEGER)")
    holder.execute("INSERT INTO t VALUES (1)")
    db = Database(f"sqlite+aiosqlite:///{path}")  # only lone reads: the main engine (which sets WAL) never connects
    try:
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO t VALUES (2)")

        async def read() -> int | None:
            async with db.lone_read() as s:
                if through == "lone statement":
                    [(count,)] = await lone_rows(s, _COUNT_T, {})
                    return int(count)
                return await s.scalar(text("SELECT count(*) FROM t"))

        task = asyncio.create_task(read())
        started = time.perf_counter()
        await asyncio.sleep(0.3)
        assert time.perf_counter() - started < 0.6  # the loop was not held by the waiting read
        assert not task.done()
        holder.execute("COMMIT")
        assert await asyncio.wait_for(task, 5) == 2
    finally:
        holder.close()
        await db.close()


_COUNT_T = select(func.count()).select_from(table("t"))


class _Shouted(TypeDecorator[str]):
    """A column type that converts what the driver returns, which the driver alone would not do."""

    impl = String
    cache_ok = True

    def process_result_value(self, value: str | None, dialect: Any) -> str | None:
        return None if value is None else value.upper()


async def test_lone_rows_answer_what_core_answers_and_refuse_statements_that_need_conversion(
    database: TestDatabase,
) -> None:
    """Lone reads run their statement on the pooled connection's driver; the rows are those Core returns, in a
    lone-read session and in a transaction (where the session runs it), and a statement whose values Core would
    convert is refused rather than answered unconverted."""
    columns, rows = "lone_rows_probe (id INTEGER PRIMARY KEY, name VARCHAR(20))", "(1, 'b'), (2, 'a'), (3, 'c')"
    async with _scratch_table(database, columns, rows) as db:
        probe = table("lone_rows_probe", column("id", Integer), column("name", String))
        statement = select(probe.c.id, probe.c.name).where(probe.c.id < bindparam("below")).order_by(probe.c.name)
        for _ in range(7):  # past psycopg's threshold for preparing a statement on its connection
            async with db.lone_read() as s:
                assert await lone_rows(s, statement, {"below": 3}) == [(2, "a"), (1, "b")]
        async with db.transaction() as s:
            assert await lone_rows(s, statement, {"below": 4}) == [(2, "a"), (1, "b"), (3, "c")]
        shouted = select(type_coerce(probe.c.name, _Shouted()))
        with pytest.raises(TypeError, match="no conversion"):
            async with db.lone_read() as s:
                await lone_rows(s, shouted, {})
