"""Alembic environment: async engines for both SQLite (aiosqlite) and PostgreSQL (psycopg)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from alembic import context
from sqlalchemy.engine import Connection

from server.store.db import make_engine
from server.store.models import Base

target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


async def _main() -> None:
    engine = make_engine(context.config.get_main_option("sqlalchemy.url") or "")
    async with engine.connect() as connection:
        await connection.run_sync(_run)
    await engine.dispose()


try:
    asyncio.get_running_loop()
except RuntimeError:
    asyncio.run(_main())
else:  # called from async code (tests, benchmarks): run on a private loop in a worker thread
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, _main()).result()
