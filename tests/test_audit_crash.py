"""No change without its event, no event without its change: a management server killed between the change and
its COMMIT leaves neither (PostgreSQL, where the test can hold a lock that the commit's event insert waits for)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import signal
import tempfile
from pathlib import Path
from typing import Any

import pytest

from server.settings import load_settings
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, server_env, start_server
from tests.world import TENANTS


def _connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, connect_timeout=3)


async def _waiting_on_the_lock(url: str) -> bool:
    query = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO audit_events%'"
    )
    for _ in range(100):
        with _connect(url) as conn:
            row = conn.execute(query).fetchone()
        if row and row[0]:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_server_killed_before_commit_leaves_neither_change_nor_event(database: Database) -> None:
    if database.backend != "postgresql":
        pytest.skip("the lock that holds the commit is PostgreSQL's")
    env = server_env(database, Path(tempfile.mkdtemp(prefix="switchboard-var-")))
    proc = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    server = Server(f"http://127.0.0.1:{proc.listener_port}", proc.listener_port, settings, database.backend)
    name = f"crash-{secrets.token_hex(4)}"
    holder = _connect(database.libpq_url)
    call: asyncio.Task[Any] | None = None
    try:
        # Inserts wait for this lock; reads do not. The server writes the tenant, then waits to add its event.
        holder.execute("LOCK TABLE audit_events IN EXCLUSIVE MODE")
        connect = ConnectJsonCaller(server.base_url)
        call = asyncio.create_task(connect.call(f"{TENANTS}/CreateTenant", {"name": name}, token=server.admin_token))
        assert await _waiting_on_the_lock(database.libpq_url)
        proc._process.send_signal(signal.SIGKILL)  # kill -9: no shutdown, no rollback by the process
        await proc._process.wait()
    finally:
        holder.rollback()
        holder.close()
        if call is not None:
            call.cancel()
            with contextlib.suppress(BaseException):
                await call
        with contextlib.suppress(Exception):
            await proc.stop()
    with _connect(database.libpq_url) as conn:
        assert conn.execute("SELECT count(*) FROM tenants WHERE name = %s", (name,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM audit_events WHERE resource_name = %s", (name,)).fetchone() == (0,)
    # The same call on a live server commits both (the test above is not vacuous).
    proc = await start_server(env)
    try:
        connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
        assert (await connect.call(f"{TENANTS}/CreateTenant", {"name": name}, token=server.admin_token)).ok
    finally:
        await proc.stop()
    with _connect(database.libpq_url) as conn:
        assert conn.execute("SELECT count(*) FROM tenants WHERE name = %s", (name,)).fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM audit_events WHERE resource_name = %s", (name,)).fetchone() == (1,)
