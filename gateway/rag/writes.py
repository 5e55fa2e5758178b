"""The ingest writes of concurrent uploads, combined into shared transactions run one at a time per process.

Why: every upload wrote twice (registering its files, then storing their chunks), each in a transaction of its own.
On SQLite those all compete for the database's one write lock, and a writer that finds it taken does not queue: it
sleeps in SQLite's busy handler, in steps of up to 100 ms. With 16 uploads in flight the two transactions took 320
and 370 ms of an upload's 800 ms, the model 44 ms (issue 27). Here the writes wait in the process instead: when no
transaction of theirs is open, everything queued runs in one (at most `most` writes), and writes arriving meanwhile
go in the next. Chunks the embedding batcher embedded in one call are stored in one commit.

Each write still commits or fails on its own: a write that raises rolls the shared transaction back, and then each
of its companions runs again in a transaction of its own. A write whose caller went away (a cancelled upload) before
the commit is never committed: the transaction is rolled back and run again without it; one whose caller went away
during the commit is committed, and then undone by the `undo` its caller gave, if any (a registration of files no
one will go on to store would keep them `processing` and their bytes reserved for good).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from server.store.db import Database

__all__ = ["CombinedWrites"]

T = TypeVar("T")
Write = Callable[[AsyncSession], Awaitable[T]]


@dataclass(frozen=True)
class _Pending:
    write: Write[Any]
    future: asyncio.Future[Any]
    undo: Callable[[Any], Coroutine[Any, Any, None]] | None


class _CallerGone(Exception):
    """Rolls back a shared transaction holding the write of a caller that went away."""


class CombinedWrites:
    def __init__(self, db: Database, *, most: int = 64) -> None:
        self._db, self._most = db, most
        self._queue: deque[_Pending] = deque()
        self._task: asyncio.Task[None] | None = None
        self._undoing: set[asyncio.Task[None]] = set()

    async def run(self, write: Write[T], *, undo: Callable[[T], Coroutine[Any, Any, None]] | None = None) -> T:
        """Run `write(session)` in a transaction (shared with other callers' writes); its result once committed.
        If this caller is cancelled while the transaction commits, `undo(result)` runs in a task of its own."""
        pending = _Pending(write, asyncio.get_running_loop().create_future(), undo)
        self._queue.append(pending)
        if self._task is None:
            self._task = asyncio.create_task(self._drain())
        # Cancelling this caller cancels the future it awaits (asyncio does): queued, its write is skipped; in the
        # open transaction, that is rolled back and run again without it.
        result: T = await pending.future
        return result

    async def _drain(self) -> None:
        try:
            while self._queue:
                batch: list[_Pending] = []
                while self._queue and len(batch) < self._most:
                    batch.append(self._queue.popleft())
                await self._commit(batch)
        except BaseException:  # the gateway is stopping
            for pending in self._queue:
                pending.future.cancel()
            self._queue.clear()
            raise
        finally:
            self._task = None

    async def _commit(self, batch: list[_Pending]) -> None:
        while batch := [p for p in batch if not p.future.done()]:
            try:
                async with self._db.transaction() as session:
                    results = [await p.write(session) for p in batch]
                    if any(p.future.done() for p in batch):
                        raise _CallerGone
            except _CallerGone:
                continue
            except Exception as exc:
                if len(batch) == 1:
                    if not batch[0].future.done():  # its caller may have gone during the failed commit
                        batch[0].future.set_exception(exc)
                    return
                for pending in batch:
                    await self._commit([pending])
                return
            except BaseException:
                for pending in batch:
                    pending.future.cancel()
                raise
            for pending, result in zip(batch, results, strict=True):
                if not pending.future.done():
                    pending.future.set_result(result)
                elif pending.undo is not None:  # its caller went during the commit: too late, its write is in
                    undoing = asyncio.create_task(pending.undo(result))
                    self._undoing.add(undoing)
                    undoing.add_done_callback(self._undoing.discard)
            return
