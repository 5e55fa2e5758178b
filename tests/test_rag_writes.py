"""gateway.rag.writes: concurrent uploads' writes share transactions, one at a time, and each still commits or fails on
its own. On a real SQLite file (the engine whose single write lock made per-upload transactions wait)."""

from __future__ import annotations

import asyncio
import collections
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.rag.writes import CombinedWrites
from server.errors import InvalidArgument
from server.store.db import Database, transaction_memo


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'writes.db'}")
    async with database.transaction() as session:
        await session.execute(text("CREATE TABLE notes (name TEXT PRIMARY KEY)"))
    yield database
    await database.close()


async def names(db: Database) -> set[str]:
    async with db.read() as session:
        return set((await session.scalars(text("SELECT name FROM notes"))).all())


_TRANSACTIONS = itertools.count()
Write = Callable[[AsyncSession], Awaitable[tuple[str, int]]]


def insert(
    name: str, *, fail: bool = False, started: asyncio.Event | None = None, hold: asyncio.Event | None = None
) -> Write:
    """A write of one row; it returns the row's name and the number of the transaction that carried it."""

    async def write(session: AsyncSession) -> tuple[str, int]:
        await session.execute(text("INSERT INTO notes VALUES (:name)"), {"name": name})
        if started is not None:
            started.set()
        if hold is not None:
            await hold.wait()
        if fail:
            raise InvalidArgument(f"{name} is refused", field="name")
        return name, session.info.setdefault("transaction", next(_TRANSACTIONS))

    return write


async def test_concurrent_writes_share_transactions_and_each_caller_gets_its_own_result(db: Database) -> None:
    writes = CombinedWrites(db)
    done = await asyncio.gather(*(writes.run(insert(f"n{i}")) for i in range(40)))
    assert [name for name, _ in done] == [f"n{i}" for i in range(40)]
    transactions = {transaction for _, transaction in done}
    assert len(transactions) < 40  # a transaction carried several callers' writes
    assert await names(db) == {f"n{i}" for i in range(40)}


async def test_writes_are_bounded_per_transaction(db: Database) -> None:
    writes = CombinedWrites(db, most=4)
    done = await asyncio.gather(*(writes.run(insert(f"n{i}")) for i in range(12)))
    per_transaction = collections.Counter(transaction for _, transaction in done)
    assert max(per_transaction.values()) == 4
    assert await names(db) == {f"n{i}" for i in range(12)}


async def test_a_failing_write_fails_alone_and_its_companions_commit(db: Database) -> None:
    writes = CombinedWrites(db)
    calls = [writes.run(insert(f"n{i}", fail=i == 3)) for i in range(8)]
    done = await asyncio.gather(*calls, return_exceptions=True)
    assert isinstance(done[3], InvalidArgument) and done[3].message == "n3 is refused"
    assert all(isinstance(result, tuple) for i, result in enumerate(done) if i != 3)
    assert await names(db) == {f"n{i}" for i in range(8)} - {"n3"}


async def test_a_write_whose_caller_went_away_before_the_commit_is_not_committed(db: Database) -> None:
    writes = CombinedWrites(db)
    started, hold = asyncio.Event(), asyncio.Event()
    first = asyncio.ensure_future(writes.run(insert("kept")))
    gone = asyncio.ensure_future(writes.run(insert("gone", started=started, hold=hold)))
    await started.wait()  # both writes are in the open transaction
    gone.cancel()
    hold.set()
    assert (await first)[0] == "kept"
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert await names(db) == {"kept"}
    assert (await writes.run(insert("later")))[0] == "later"  # the writer goes on serving
    assert await names(db) == {"kept", "later"}


@pytest.mark.parametrize("undone", [False, True])
async def test_a_caller_gone_while_its_transaction_commits_leaves_the_companions_their_results(
    db: Database, undone: bool
) -> None:
    """Cancelled during the commit (too late to leave it out): its row is committed, then undone if its caller said
    how; the other callers of the same transaction still get theirs, and the writer goes on serving."""
    writes = CombinedWrites(db)
    callers: list[asyncio.Future[tuple[str, int]]] = []
    cancel_gone_at_commit = insert("gone")
    undoing: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def write(session: AsyncSession) -> tuple[str, int]:
        event.listen(session.sync_session, "before_commit", lambda _: callers[0].cancel())
        return await cancel_gone_at_commit(session)

    async def undo(result: tuple[str, int]) -> None:
        async with db.transaction() as session:
            await session.execute(text("DELETE FROM notes WHERE name = :name"), {"name": result[0]})
        undoing.set_result(result[0])

    callers.append(asyncio.ensure_future(writes.run(write, undo=undo if undone else None)))
    callers.append(asyncio.ensure_future(writes.run(insert("kept"))))
    assert (await asyncio.wait_for(callers[1], 10))[0] == "kept"
    with pytest.raises(asyncio.CancelledError):
        await callers[0]
    if undone:
        assert await asyncio.wait_for(undoing, 10) == "gone"
    assert await names(db) == ({"kept"} if undone else {"gone", "kept"})
    assert (await writes.run(insert("later")))[0] == "later"


async def test_a_queued_write_of_a_caller_that_went_away_never_runs(db: Database) -> None:
    writes = CombinedWrites(db)
    hold = asyncio.Event()
    started = asyncio.Event()
    first = asyncio.ensure_future(writes.run(insert("first", started=started, hold=hold)))
    await started.wait()  # `first` holds the open transaction
    queued = asyncio.ensure_future(writes.run(insert("queued")))
    await asyncio.sleep(0)
    queued.cancel()
    hold.set()
    assert (await first)[0] == "first"
    with pytest.raises(asyncio.CancelledError):
        await queued
    assert await names(db) == {"first"}


async def test_a_transaction_memo_lives_as_long_as_its_transaction(db: Database) -> None:
    """What the shared transactions learn once (a tenant's locked quota row, a RAG's pinned vector size)."""
    async with db.transaction() as session:
        transaction_memo(session, "m")["k"] = 1
        assert transaction_memo(session, "m") == {"k": 1} and transaction_memo(session, "other") == {}
    async with db.transaction() as session:
        assert transaction_memo(session, "m") == {}
    async with db._sessions() as session:  # one session, two transactions in turn
        async with session.begin():
            transaction_memo(session, "m")["k"] = 1
        async with session.begin():
            assert transaction_memo(session, "m") == {}
