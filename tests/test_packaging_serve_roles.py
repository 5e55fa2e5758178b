"""`switchboard serve --role management|gateway` runs one half only, so a Kubernetes chart can scale each as its own
Deployment; `--no-migrate` leaves the schema to the migrations Job (deploy/helm/switchboard).

A real `serve` process on a SQLite database of its own: the role that runs answers /readyz, the other's port is
never bound, and no child of the other kind exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import sqlite3
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from server.store.migrate import upgrade
from tests.conftest import Database, server_env
from tests.serving import free_port, stop

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")


def _bound(port: int) -> bool:
    """True when something holds the port (a bind without SO_REUSEPORT fails)."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def _child_commands(pid: int) -> list[str]:
    commands = []
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        with contextlib.suppress(OSError):
            commands.append(Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
    return commands


async def _ready(url: str) -> bool:
    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
        async with aiohttp.ClientSession() as http, http.get(url, timeout=aiohttp.ClientTimeout(total=2)) as resp:
            return resp.status == 200
    return False


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:]


async def _until_ready(url: str, proc: asyncio.subprocess.Process, log: Path) -> None:
    for _ in range(600):  # a bounded wait, not a timing assertion
        if proc.returncode is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {_tail(log)}")
        if await _ready(url):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{url} never answered")


_Running = tuple[asyncio.subprocess.Process, int, int]  # serve, its management port, its gateway port


@contextlib.asynccontextmanager
async def _serve(
    database: Database, var_dir: Path, *args: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, int, int]]:
    port, gateway_port = free_port(), free_port()
    env = server_env(
        database,
        var_dir,
        SWITCHBOARD_PORT=str(port),
        SWITCHBOARD_GATEWAY_PORT=str(gateway_port),
        SWITCHBOARD_GATEWAY_WORKERS="1",
    )
    log = var_dir / "serve.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server.cli", "serve", *args, env=env, stdout=out, stderr=out
        )
    try:
        yield proc, port, gateway_port
    finally:
        await stop(proc)


def _tables(db_file: Path) -> set[str]:
    with contextlib.closing(sqlite3.connect(db_file)) as conn:
        return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


async def test_gateway_role_serves_the_gateway_only_and_no_migrate_leaves_the_schema(tmp_path: Path) -> None:
    db_file = tmp_path / "fresh.db"
    database = Database("sqlite", f"sqlite+aiosqlite:///{db_file}")
    async with _serve(database, tmp_path, "--role", "gateway", "--no-migrate") as (proc, port, gateway_port):
        await _until_ready(f"http://127.0.0.1:{gateway_port}/readyz", proc, tmp_path / "serve.log")
        assert not _bound(port)  # no management API
        commands = _child_commands(proc.pid)
        assert any("-m gateway" in cmd for cmd in commands)
        assert not any("envoy" in cmd for cmd in commands)
        assert "alembic_version" not in _tables(db_file)  # --no-migrate: the schema is the migrations Job's
        assert not (tmp_path / "admin-token").exists()  # the admin token is the management role's
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0


async def test_management_role_serves_the_api_only(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}"
    upgrade(url)  # what the migrations Job does before replicas start
    async with _serve(Database("sqlite", url), tmp_path, "--role", "management", "--no-migrate") as (
        proc,
        port,
        gateway_port,
    ):
        await _until_ready(f"http://127.0.0.1:{port}/readyz", proc, tmp_path / "serve.log")
        assert not _bound(gateway_port)  # no gateway
        assert not any("-m gateway" in cmd for cmd in _child_commands(proc.pid))
        for _ in range(100):  # written just after the API starts answering
            if (tmp_path / "admin-token").exists():
                break
            await asyncio.sleep(0.1)
        assert (tmp_path / "admin-token").exists()
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(proc.wait(), 60) == 0


async def test_serve_refuses_an_unknown_role_and_a_demo_without_both_roles(tmp_path: Path) -> None:
    for args, expected in (
        (("--role", "worker"), "invalid choice: 'worker'"),
        (("--role", "gateway", "--demo"), "--demo needs both roles"),
    ):
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "server.cli",
            "serve",
            *args,
            env=server_env(Database("sqlite", f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"), tmp_path),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await asyncio.wait_for(proc.communicate(), 60)
        assert proc.returncode == 2
        assert expected in err.decode()
    assert not (tmp_path / "x.db").exists()  # refused before touching the database


async def test_migrate_never_prints_the_database_password(database: Database, tmp_path: Path) -> None:
    """In a deployment the URL comes from a Secret and stdout goes to the log collector."""
    if database.backend != "postgresql":
        pytest.skip("only a PostgreSQL URL carries a password")
    with_password = database.url.replace("://postgres@", "://postgres:pw-never-printed@", 1)
    assert "pw-never-printed" in with_password
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "server.cli",
        "migrate",
        env=server_env(Database("postgresql", with_password), tmp_path),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, out.decode()
    assert "database schema is up to date (postgresql+psycopg://postgres:***@" in out.decode()
    assert "pw-never-printed" not in out.decode()
