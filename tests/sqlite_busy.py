"""A SQLite database made busy on demand: another connection holds the file's exclusive lock, from a thread, while
a block runs."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


@asynccontextmanager
async def sqlite_busy(database_url: str) -> AsyncIterator[None]:
    path = database_url.removeprefix("sqlite+aiosqlite:///")
    locked, release = threading.Event(), threading.Event()
    holder = asyncio.ensure_future(asyncio.to_thread(_hold_exclusive_lock, path, locked, release))
    try:
        assert await asyncio.to_thread(locked.wait, 10)
        yield
    finally:
        release.set()
        await holder


def _hold_exclusive_lock(path: str, locked: threading.Event, release: threading.Event) -> None:
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(60)
        connection.execute("ROLLBACK")
    finally:
        connection.close()
