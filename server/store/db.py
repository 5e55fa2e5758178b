"""Engine and unit of work. One transaction per RPC/request: a refused request writes nothing.

Repositories take an `AsyncSession`, flush but never commit; `Database.transaction()` commits once at the end or
rolls everything back when anything raised. The one exception, `Database.lone_read()`, is for read-only RPCs
answered by a single statement, which need no transaction around it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import secrets
import select
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import aiosqlite
from sqlalchemy import bindparam, event, exc, func, make_url
from sqlalchemy import select as select_rows
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.sql import Select

from server.errors import AlreadyExists
from server.invalidation import Invalidations, Listener, StampWatcher, invalidations_info
from server.settings import Settings

__all__ = [
    "Database",
    "KeyLookup",
    "Pool",
    "as_utc",
    "insert_ignoring_duplicates",
    "integrity_as",
    "lone_rows",
    "lone_value",
    "new_id",
    "transaction_memo",
]


def as_utc(value: datetime | None) -> datetime | None:
    """Stored times are UTC; SQLite hands them back naive."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


async def insert_ignoring_duplicates(session: AsyncSession, table: type[Any], values: dict[str, Any]) -> bool:
    """INSERT … ON CONFLICT DO NOTHING, for rows that concurrent requests may both try to create; whether this one
    created it."""
    dialect = session.get_bind().dialect.name
    insert = sqlite_insert if dialect == "sqlite" else postgresql_insert
    # SQLAlchemy keeps an INSERT's row count only when asked (psycopg's is gone once the result is read).
    statement = insert(table).values(**values).on_conflict_do_nothing().execution_options(preserve_rowcount=True)
    result = await session.execute(statement)
    return int(getattr(result, "rowcount", 0)) > 0  # -1, "unknown", is no proof of a new row


def transaction_memo(session: AsyncSession, name: str) -> dict[Any, Any]:
    """A dict named `name` that lives as long as the session's current transaction: for what a transaction need
    learn or lock only once however many writes it carries (the gateway stores concurrent uploads in one)."""
    transaction = session.sync_session.get_transaction()
    memos: dict[str, tuple[Any, dict[Any, Any]]] = session.info.setdefault(_MEMOS, {})
    held = memos.get(name)
    if held is None or held[0] is not transaction:
        held = memos[name] = (transaction, {})
    return held[1]


_MEMOS = "switchboard_transaction_memos"  # session.info: name -> (the transaction, its memo)


def new_id(prefix: str) -> str:
    """A short, unguessable, prefixed id (the prefix tells a human what kind of thing it is)."""
    return f"{prefix}_{secrets.token_hex(8)}"


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


@dataclass(frozen=True)
class Pool:
    """Connections kept open per process (`size`, SWITCHBOARD_DB_POOL_SIZE), and how long a request waits for one
    (`timeout`, SWITCHBOARD_DB_POOL_TIMEOUT_SECONDS) before it fails with SQLAlchemy's TimeoutError, which the
    servers answer 503 `unavailable` (server.errors). A request holds a connection for its whole transaction, so the
    pool must cover the requests in flight: when it is smaller, every request past it opens a connection and closes
    it on return (for PostgreSQL a new backend process, for SQLite a new file handle and worker thread), which cost
    more than the query. As many again may open in a burst (overflow)."""

    size: int = 32
    timeout: float = 30.0

    @property
    def lone(self) -> int:
        """Lone reads on PostgreSQL hold a connection for one round trip, not a transaction: fewer cover the same
        load."""
        return max(1, self.size // 2)


def _idle_connection_alive(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    """Checkout check for PostgreSQL without a round trip (pool_pre_ping sends one per checkout, every request)."""
    if not _idle_driver_alive(dbapi_connection.driver_connection):
        raise exc.DisconnectionError("connection closed by the server while idle")


def _idle_driver_alive(driver: Any) -> bool:
    """An idle psycopg connection has nothing to read: when its socket is readable, the server closed it or sent a
    termination notice (restart, failover, idle timeout), and it must be replaced before a request uses it."""
    if driver.closed or driver.broken:
        return False
    poller = select.poll()
    poller.register(driver.pgconn.socket, select.POLLIN | select.POLLERR | select.POLLHUP)
    return not poller.poll(0)


class _OneTripCursor(aiosqlite.Cursor):
    """An aiosqlite cursor that creates, runs, reads and closes its sqlite3 cursor in one call on the connection's
    thread. Plain aiosqlite makes four (cursor, execute, fetchall, close), and each costs a thread hand-off and the
    GIL trip back to the event loop, which under load was most of a short read's time. Rows are read in that call
    for server-side cursors too (nothing streams results from SQLite here)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._cursor: sqlite3.Cursor | None = None  # type: ignore[assignment]
        self._rows: list[Any] = []

    async def execute(self, sql: str, parameters: Iterable[Any] | None = None) -> _OneTripCursor:
        connection: sqlite3.Connection = self._conn._conn

        def run() -> tuple[sqlite3.Cursor, list[Any]]:
            cursor = connection.cursor()
            try:
                cursor.execute(sql, [] if parameters is None else parameters)  # type: ignore[arg-type]
                return cursor, cursor.fetchall() if cursor.description else []
            finally:
                cursor.close()  # description, rowcount and lastrowid stay readable

        self._cursor, self._rows = await self._conn._execute(run)  # type: ignore[no-untyped-call]
        return self

    async def executemany(self, sql: str, parameters: Iterable[Iterable[Any]]) -> _OneTripCursor:
        connection: sqlite3.Connection = self._conn._conn

        def run() -> sqlite3.Cursor:
            cursor = connection.cursor()
            try:
                cursor.executemany(sql, parameters)  # type: ignore[arg-type]
                return cursor
            finally:
                cursor.close()

        self._cursor = await self._conn._execute(run)  # type: ignore[no-untyped-call]
        self._rows = []
        return self

    async def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    async def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    async def fetchmany(self, size: int | None = None) -> list[Any]:
        count = len(self._rows) if size is None else size
        rows, self._rows = self._rows[:count], self._rows[count:]
        return rows

    async def close(self) -> None:
        self._rows = []

    @property
    def description(self) -> Any:
        return self._cursor.description if self._cursor is not None else None

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount if self._cursor is not None else -1

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid if self._cursor is not None else None


class _OneTripConnection(aiosqlite.Connection):
    def cursor(self) -> Any:  # awaited or entered by SQLAlchemy's adapter; makes no trip to the thread
        return _Ready(_OneTripCursor(self))

    # sqlite3 opens a transaction only before a write, so a read-only request has nothing to commit, and the pool's
    # rollback on return follows every commit: without an open transaction both are no-ops, skipped without a trip.
    # (in_transaction is a flag read; nothing else uses the connection between statements.)
    async def commit(self) -> None:
        if self._conn.in_transaction:
            await super().commit()

    async def rollback(self) -> None:
        if self._conn.in_transaction:
            await super().rollback()


class _Ready:
    """An awaitable, async-context-managed value that is already there (what aiosqlite's cursor() returns)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def __await__(self) -> Generator[Any, None, Any]:
        return self._value
        yield  # makes this a generator: nothing is awaited

    async def __aenter__(self) -> Any:
        return self._value

    async def __aexit__(self, *_: object) -> None:
        await self._value.close()


_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def _is_busy(error: sqlite3.OperationalError) -> bool:
    return getattr(error, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)


class _InlineReadConnection(_OneTripConnection):
    """A read-only connection whose statements run on the event loop itself, not on aiosqlite's thread.

    A lone read's query takes tens of microseconds, but the hand-off to the driver thread and the wait for the GIL
    to come back from a busy loop cost far more. In WAL mode readers never wait for writers, and the connection's
    busy timeout is 0, so a statement cannot block the loop: when SQLite still answers busy (a checkpoint resetting
    the WAL, a database not in WAL mode) the statement is rerun on the thread with the usual timeout. Each SELECT is
    its own read transaction (sqlite3 opens none for reads), so every statement sees what was committed before it.
    """

    _pending = 0  # calls queued on the thread: later ones must follow them there, in order, never beside them

    async def _execute(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._pending and self._running and self._connection is not None:
            try:
                return fn(*args, **kwargs)
            except sqlite3.OperationalError as error:
                if not _is_busy(error):
                    raise
        # Counted until the thread has finished, even when the caller is cancelled: the loop must not use the
        # sqlite3 connection beside the thread.
        self._pending += 1
        call = asyncio.ensure_future(super()._execute(_with_busy_timeout, self._conn, fn, *args, **kwargs))  # type: ignore[no-untyped-call]
        call.add_done_callback(self._thread_call_done)
        return await asyncio.shield(call)

    def _thread_call_done(self, call: asyncio.Future[Any]) -> None:
        self._pending -= 1
        if not call.cancelled():
            call.exception()  # retrieved: a cancelled caller's failure is not logged as never retrieved


def _with_busy_timeout(connection: sqlite3.Connection, fn: Any, *args: Any, **kwargs: Any) -> Any:
    connection.execute("PRAGMA busy_timeout=10000")
    try:
        return fn(*args, **kwargs)
    finally:
        connection.execute("PRAGMA busy_timeout=0")


def _read_only_sqlite(path: str) -> sqlite3.Connection:
    # Opened on aiosqlite's thread, used from the loop's: the pool lends it to one session at a time.
    connection = sqlite3.connect(path, timeout=0, check_same_thread=False)
    connection.execute("PRAGMA query_only=1")  # a write through a lone read fails instead of committing alone
    return connection


def _sqlite_creator(path: str, *, inline_reads: bool = False) -> Callable[[], Awaitable[aiosqlite.Connection]]:
    async def connect() -> aiosqlite.Connection:
        connection = (
            _InlineReadConnection(lambda: _read_only_sqlite(path), iter_chunk_size=64)
            if inline_reads
            else _OneTripConnection(lambda: sqlite3.connect(path, timeout=10), iter_chunk_size=64)
        )
        # As SQLAlchemy does: an unclosed connection must not hold up exit (before aiosqlite 0.22 it is the thread).
        thread: Any = getattr(connection, "_thread", connection)
        thread.daemon = True
        return await connection

    return connect


def _sqlite_file(url: str) -> str | None:
    parsed = make_url(url)
    return str(parsed.database) if parsed.database not in (None, "", ":memory:") and not parsed.query else None


def _inline_read_engine(path: str, pool: Pool) -> AsyncEngine:
    """SQLite file: the engine behind `lone_read()`, its statements served on the loop (see `_InlineReadConnection`)."""
    return create_async_engine(
        f"sqlite+aiosqlite:///{path}",  # the file: not an in-memory database, which SQLAlchemy pools statically
        hide_parameters=True,
        pool_size=pool.size,
        max_overflow=pool.size,
        pool_timeout=pool.timeout,
        async_creator=_sqlite_creator(path, inline_reads=True),
    )


# SQLite's lone statements run on the event loop, one at a time: more connections only serve while one is rerun on
# its thread (a busy database).
_SQLITE_HELD = 4


def make_engine(url: str, pool: Pool | None = None) -> AsyncEngine:
    pool = pool or Pool()
    if url.startswith("sqlite"):
        path = _sqlite_file(url)
        engine = create_async_engine(
            url,
            connect_args={"timeout": 10},
            hide_parameters=True,
            pool_size=pool.size,
            max_overflow=pool.size,
            pool_timeout=pool.timeout,
            **({"async_creator": _sqlite_creator(path)} if path is not None else {}),
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        return engine
    return _server_engine(url, pool_size=pool.size, pool_timeout=pool.timeout)


def _server_engine(url: str, *, pool_size: int, pool_timeout: float, **options: Any) -> AsyncEngine:
    """A database server's engine (PostgreSQL), with as many overflow connections as `pool_size`; `options` go to
    create_async_engine."""
    # hide_parameters: a logged database error must not carry the statement's values (model input, items).
    psycopg = make_url(url).get_driver_name() == "psycopg"
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_timeout=pool_timeout,
        pool_pre_ping=not psycopg,  # another driver: the generic ping
        hide_parameters=True,
        **options,
    )
    if psycopg:
        event.listen(engine.sync_engine.pool, "checkout", _idle_connection_alive)
    return engine


def _autocommit_engine(url: str, pool: Pool) -> AsyncEngine:
    """A database server's engine behind `lone_read()`, its connections in autocommit for good. Lone reads on the
    main engine with an AUTOCOMMIT execution option switched each connection into autocommit at checkout and back at
    checkin, and rolled back on return: three driver calls around every read, ~10% of a ListGroups under load. An
    autocommit connection has no transaction to roll back, so nothing is reset on return."""
    return _server_engine(
        url,
        pool_size=pool.lone,
        pool_timeout=pool.timeout,
        isolation_level="AUTOCOMMIT",
        pool_reset_on_return=None,
    )


AFTER_COMMIT = "switchboard_after_commit"  # session.info key: callables to run once the transaction committed
_LONE_STATEMENTS = "switchboard_lone_statements"  # session.info key of lone-read sessions: their `_LoneStatements`


def _driver(connection: AsyncConnection) -> Any:
    return connection.sync_connection.connection.driver_connection  # type: ignore[union-attr]


async def _discard(connection: AsyncConnection | None) -> None:
    """Closes the connection for good, not back into the pool (whose slot it frees)."""
    if connection is not None:
        with contextlib.suppress(Exception):
            await connection.invalidate()
            await connection.close()


def _always_alive(_driver: Any) -> bool:
    return True


class _LoneStatements:
    """Runs a lone read's statement on a driver connection it holds: no session transaction, no Core execution
    context, no result object, and no pool checkout. Under ListGroups load the checkout and return through
    SQLAlchemy's async pool (greenlet hops, and a task per return that survives cancellation) cost three times the
    statement on SQLite.

    The connections are the lone-read engine's, checked out as they are first needed and kept (at most `held`, so
    the engine's bound on connections still holds); one that fails or is found closed while idle is invalidated and
    replaced. Statements are compiled once per statement object (module-level constants, built once) and must need
    no type conversion of their parameters or columns, so the driver's values are what Core would have returned.
    """

    _MAX_STATEMENTS = 256  # prebuilt statements only; a bound, not an expected size

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        named: bool,
        held: int,
        timeout: float,
        alive: Callable[[Any], bool] = _always_alive,
        coalesce: bool = False,
    ) -> None:
        self._engine = engine
        self._timeout = timeout  # as the pool's: waiting longer for a held connection fails as a pool timeout
        self._named = named  # the driver takes a mapping (psycopg); otherwise a sequence in bind order (sqlite3)
        # Key lookups in one statement per loop turn: worth it where a statement is a round trip (a database server),
        # not on SQLite, whose lone statements run on the loop.
        self.coalesces = coalesce
        self._alive = alive  # checks an idle driver connection before it is lent
        self._compiled: dict[int, tuple[Select[Any], str, tuple[str, ...]]] = {}
        # Last in, first out: the connections in use most recently serve first, and only concurrency opens more.
        self._held: asyncio.LifoQueue[AsyncConnection | None] = asyncio.LifoQueue()
        for _ in range(held):
            self._held.put_nowait(None)
        self._lookups: dict[int, _Coalesced] = {}

    def _prepare(self, statement: Select[Any]) -> tuple[str, tuple[str, ...]]:
        known = self._compiled.get(id(statement))
        if known is not None and known[0] is statement:
            return known[1], known[2]
        dialect = self._engine.dialect
        compiled = statement.compile(dialect=dialect)
        converted = [str(c) for c in statement.selected_columns if c.type.result_processor(dialect, None) is not None]
        converted += [b.key for b in compiled.binds.values() if b.type.bind_processor(dialect) is not None]
        if converted or compiled.escaped_bind_names:
            raise TypeError(f"a lone statement's values must need no conversion: {converted}")
        names = tuple(compiled.binds) if self._named else tuple(compiled.positiontup or ())
        if len(self._compiled) >= self._MAX_STATEMENTS:
            self._compiled.clear()
        self._compiled[id(statement)] = (statement, compiled.string, names)
        return compiled.string, names

    async def rows(self, statement: Select[Any], parameters: Mapping[str, Any]) -> list[Any]:
        sql, names = self._prepare(statement)
        bound = {n: parameters[n] for n in names} if self._named else [parameters[n] for n in names]
        held = self._held.get_nowait() if not self._held.empty() else await self._wait_for_held()
        try:
            if held is None or not self._alive(_driver(held)):
                await _discard(held)
                held = None
                held = await self._engine.connect()
            async with _driver(held).cursor() as cursor:  # on SQLite a `_OneTripCursor`: one trip, rows read with it
                await cursor.execute(sql, bound)
                return list(await cursor.fetchall())
        finally:
            # psycopg finishes a cancelled statement (or closes the connection) before the cancellation reaches
            # here, and a connection that broke is found out before it is lent again.
            self._held.put_nowait(held)

    async def _wait_for_held(self) -> AsyncConnection | None:
        try:
            async with asyncio.timeout(self._timeout):
                return await self._held.get()
        except TimeoutError:
            raise exc.TimeoutError(f"no lone-read connection free within {self._timeout:g} s") from None

    async def value(self, lookup: KeyLookup, key: Any) -> Any:
        """One key's value (None without a row), through one statement per turn of the event loop for all lookups
        of `lookup` (see `_Coalesced`)."""
        coalesced = self._lookups.get(id(lookup))
        if coalesced is None:
            many = lookup.many
            coalesced = self._lookups[id(lookup)] = _Coalesced(lambda keys: self.rows(many, {"keys": keys}))
        return await coalesced.get(key)

    async def close(self) -> None:
        while not self._held.empty():
            await _discard(self._held.get_nowait())


class KeyLookup:
    """A value by its key (`SELECT key, value FROM … WHERE key = …`), for lone reads that each need one key's value:
    built once, as a module constant, like every lone statement."""

    def __init__(self, key: Any, value: Any) -> None:
        self.one = select_rows(key, value).where(key == bindparam("key"))
        self.many = select_rows(key, value).where(key == func.any(bindparam("keys")))  # PostgreSQL: an array of keys


class _Coalesced:
    """Key lookups asked for in the same turn of the event loop, sent as one statement.

    On PostgreSQL a statement is a round trip costing the server process ~130 us of CPU in the driver and the kernel
    whatever it reads, and under load many requests look up the same kind of key at once (each ListGroups its
    tenant's list version). Lookups join the batch being gathered; it is sent on the loop's next turn, after every
    one of them was asked, so each answer is as fresh as its own statement would have been. A caller cancelled
    meanwhile leaves the others their answers; a failed statement fails each of its callers."""

    def __init__(self, fetch: Callable[[list[Any]], Awaitable[list[Any]]]) -> None:
        self._fetch = fetch
        self._gathering: dict[Any, list[asyncio.Future[Any]]] | None = None
        self._sending: set[asyncio.Task[None]] = set()  # referenced until done: the loop keeps only weak ones

    async def get(self, key: Any) -> Any:
        loop = asyncio.get_running_loop()
        if self._gathering is None:
            self._gathering = {}
            loop.call_soon(self._send)
        answer: asyncio.Future[Any] = loop.create_future()
        self._gathering.setdefault(key, []).append(answer)
        return await answer

    def _send(self) -> None:
        batch, self._gathering = self._gathering or {}, None
        task = asyncio.ensure_future(self._answer(batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _answer(self, batch: dict[Any, list[asyncio.Future[Any]]]) -> None:
        try:
            rows = await self._fetch(list(batch))
        except BaseException as exc:
            # A failed statement fails each caller; this task cancelled (the process stopping) cancels them.
            for answers in batch.values():
                for answer in answers:
                    if answer.done():
                        continue
                    if isinstance(exc, Exception):
                        answer.set_exception(exc)
                    else:
                        answer.cancel()
            if not isinstance(exc, Exception):
                raise
            return
        found = dict(rows)
        for key, answers in batch.items():
            for answer in answers:
                if not answer.done():
                    answer.set_result(found.get(key))


class _LoneReadSession(AsyncSession):
    """A lone read's session. Most lone reads are answered from the per-process caches and one `lone_rows`
    statement, so the session never holds a connection: closing it then has nothing to release, and skips the
    separate task SQLAlchemy closes sessions in (so that a cancelled caller cannot abandon a connection's return)."""

    async def __aexit__(self, type_: Any, value: Any, traceback: Any) -> None:
        if self.sync_session.in_transaction():
            await super().__aexit__(type_, value, traceback)
        else:
            self.sync_session.close()


async def lone_rows(session: AsyncSession, statement: Select[Any], parameters: Mapping[str, Any]) -> list[Any]:
    """The rows (tuples, in column order) of a prebuilt SELECT. In a `Database.lone_read()` session that has not
    begun anything else, straight from a held connection's driver (see `_LoneStatements`); in any other session,
    through it as usual."""
    statements: _LoneStatements | None = session.info.get(_LONE_STATEMENTS)
    if statements is None or session.in_transaction():
        result = await (await session.connection()).execute(statement, dict(parameters))
        return list(result.all())
    return await statements.rows(statement, parameters)


async def lone_value(session: AsyncSession, lookup: KeyLookup, key: Any) -> Any:
    """The value `lookup` finds for `key` (None without a row). In a `Database.lone_read()` session on a database
    server that has not begun anything else, in one statement with the same turn's other lookups (see
    `_Coalesced`); otherwise as `lone_rows` runs a statement."""
    statements: _LoneStatements | None = session.info.get(_LONE_STATEMENTS)
    if statements is not None and statements.coalesces and not session.in_transaction():
        return await statements.value(lookup, key)
    found = await lone_rows(session, lookup.one, {"key": key})
    return found[0][1] if found else None


BeforeCommit = Callable[[AsyncSession], Awaitable[None]]


class Database:
    """`session_info` is copied into every session's `info` (e.g. a process-wide cache the permission checks use).

    `before_commit`, when set, runs in every `transaction()` that is about to commit, inside it: the audit trail adds
    the event of the RPC being served there, so the change and its event commit together or not at all."""

    def __init__(self, url: str, *, session_info: dict[str, Any] | None = None, pool: Pool | None = None) -> None:
        pool = pool or Pool()
        self.url = url
        self.before_commit: BeforeCommit | None = None
        self.engine = make_engine(url, pool)
        # Writes through this database drop the caches that registered here (server.invalidation).
        sqlite_file = _sqlite_file(url) if url.startswith("sqlite") else None
        stamp = f"{sqlite_file}.invalidated" if sqlite_file else None
        self.invalidations = Invalidations(notify=not url.startswith("sqlite"), stamp=stamp)
        self._listener: Listener | StampWatcher | None = None
        if self.invalidations.notify:
            self._listener = Listener(url, self.invalidations)
        elif stamp is not None:
            self._listener = StampWatcher(stamp, self.invalidations)
        info = {**(session_info or {}), **invalidations_info(self.invalidations)}
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False, info=info)
        # PostgreSQL: a transaction costs a BEGIN and a COMMIT round trip around the query. SQLite's driver opens none
        # for a SELECT anyway; a file database answers lone reads on the event loop from read-only connections.
        self._read_engine: AsyncEngine | None = None
        self._statements: _LoneStatements | None = None
        lone_info = info
        if not url.startswith("sqlite"):
            lone = self._read_engine = _autocommit_engine(url, pool)
            if make_url(url).get_driver_name() == "psycopg":
                self._statements = _LoneStatements(
                    lone, named=True, held=pool.lone, timeout=pool.timeout, alive=_idle_driver_alive, coalesce=True
                )
                lone_info = {**info, _LONE_STATEMENTS: self._statements}
        elif (path := _sqlite_file(url)) is not None:
            lone = self._read_engine = _inline_read_engine(path, pool)
            self._statements = _LoneStatements(lone, named=False, held=_SQLITE_HELD, timeout=pool.timeout)
            lone_info = {**info, _LONE_STATEMENTS: self._statements}
        else:
            lone = self.engine
        self._lone_reads = async_sessionmaker(lone, class_=_LoneReadSession, expire_on_commit=False, info=lone_info)

    @classmethod
    def from_settings(cls, settings: Settings, *, session_info: dict[str, Any] | None = None) -> Database:
        """The database a server process uses, its pools sized by the settings."""
        pool = Pool(settings.db_pool_size, settings.db_pool_timeout_seconds)
        return cls(settings.database_url, session_info=session_info, pool=pool)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        async with self._sessions() as session:
            async with session.begin():
                yield session
                if self.before_commit is not None:
                    await self.before_commit(session)
            for hook in session.info.pop(AFTER_COMMIT, ()):
                hook()

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A session for reads only; nothing it does is committed."""
        async with self._sessions() as session:
            yield session

    def lone_read(self) -> AsyncSession:
        """For a read-only RPC whose answer is one statement (its gates answered from the per-process caches, which
        already allow answers up to their bound old): each statement runs on its own, outside a transaction, saving
        two round trips on PostgreSQL; on a SQLite file they run on the event loop from read-only connections. Never
        write through it: nothing would roll the write back. RPCs that write keep `transaction()`, one per RPC.

        Used as `async with db.lone_read() as session`: the session is its own context manager (closed at the end),
        without a generator-based one around it on every read."""
        return self._lone_reads()

    def listen_for_invalidations(self) -> None:
        """Follow other processes' changes (PostgreSQL LISTEN; on a SQLite file, its stamp); call once the event loop
        runs. Without it, this process's caches see other processes' changes only when their entries expire."""
        if self._listener is not None:
            self._listener.start()

    @property
    def listener(self) -> Listener | StampWatcher | None:
        return self._listener

    async def close(self) -> None:
        if self._listener is not None:
            await self._listener.close()
        if self._statements is not None:
            await self._statements.close()
        if self._read_engine is not None:
            await self._read_engine.dispose()
        await self.engine.dispose()


_UNIQUE_HINT = re.compile(r"unique|duplicate", re.IGNORECASE)


@contextlib.contextmanager
def integrity_as(message: str, *, field: str | None = None) -> Iterator[None]:
    """Turn a uniqueness violation raised inside the block into `AlreadyExists(message)`.

    Uniqueness is enforced by the database (so concurrent creates on PostgreSQL cannot both win); this is the one
    place that translates the dialect's error. Other integrity errors propagate as unexpected failures.
    """
    try:
        yield
    except IntegrityError as exc:
        if _UNIQUE_HINT.search(str(exc.orig)):
            raise AlreadyExists(message, field=field) from None
        raise
