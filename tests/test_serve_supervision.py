"""`switchboard serve` supervises both processes (issue 9, finding 1): a child that crashes is restarted, and when
restarts keep failing `serve` exits non-zero instead of 0.

Supervision does not depend on the database engine, so these run on one SQLite database of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from server.store.migrate import upgrade
from server.supervision import RestartBudget
from tests.conftest import Database, server_env

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _children(pid: int) -> dict[int, str]:
    """Child pids of `pid` with their command lines."""
    found = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found[int(child)] = cmdline
    return found


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Serve:
    proc: asyncio.subprocess.Process
    port: int
    gateway_port: int
    log_path: Path

    def child(self, marker: str) -> int | None:
        matches = [pid for pid, cmd in _children(self.proc.pid).items() if marker in cmd]
        return matches[0] if matches else None

    def management(self) -> int | None:
        return self.child("envoy")

    def gateway(self) -> int | None:
        return self.child("-m gateway")


async def _ready(url: str) -> bool:
    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
        async with aiohttp.ClientSession() as http, http.get(url, timeout=aiohttp.ClientTimeout(total=2)) as resp:
            return resp.status == 200
    return False


async def _until(predicate: object, attempts: int = 300) -> None:
    """Poll a condition a bounded number of times (a wait, not a timing assertion)."""
    for _ in range(attempts):
        value = predicate() if callable(predicate) else None
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached")


@contextlib.asynccontextmanager
async def serve(database: Database, **extra: str) -> AsyncIterator[Serve]:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-serve-"))
    port, gateway_port = _free_port(), _free_port()
    env = server_env(
        database,
        var_dir,
        SWITCHBOARD_PORT=str(port),
        SWITCHBOARD_GATEWAY_PORT=str(gateway_port),
        SWITCHBOARD_GATEWAY_WORKERS="1",
        **extra,
    )
    log_path = var_dir / "serve.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server.cli", "serve", env=env, stdout=log, stderr=log
        )
    handle = Serve(proc, port, gateway_port, log_path)
    try:
        await _until(lambda: _ready(f"http://127.0.0.1:{port}/readyz"))
        await _until(lambda: _ready(f"http://127.0.0.1:{gateway_port}/readyz"))
        yield handle
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 60)
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


def test_restart_budget_backs_off_then_gives_up() -> None:
    now = [0.0]
    budget = RestartBudget(3, 60, clock=lambda: now[0])
    assert [budget.next_delay(), budget.next_delay(), budget.next_delay()] == [0.5, 1.0, 2.0]
    assert budget.next_delay() is None  # a fourth restart within the window: give up
    now[0] = 61.0
    assert budget.next_delay() == 0.5  # the old restarts have left the window


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Database:
    url = f"sqlite+aiosqlite:///{tmp_path_factory.mktemp('serve') / 'switchboard.db'}"
    upgrade(url)
    return Database("sqlite", url)


@pytest_asyncio.fixture
async def running(database: Database) -> AsyncIterator[Serve]:
    async with serve(database) as handle:
        yield handle


async def test_a_crashed_child_is_restarted(running: Serve) -> None:
    old_management, old_gateway = running.management(), running.gateway()
    assert old_management and old_gateway
    os.kill(old_management, signal.SIGSEGV)
    await _until(lambda: running.management() not in (None, old_management))
    await _until(lambda: _ready(f"http://127.0.0.1:{running.port}/readyz"))

    old_workers = set(_children(old_gateway))
    assert old_workers
    os.kill(old_gateway, signal.SIGSEGV)
    await _until(lambda: running.gateway() not in (None, old_gateway))
    await _until(lambda: _ready(f"http://127.0.0.1:{running.gateway_port}/readyz"))

    assert running.proc.returncode is None
    await _until(lambda: not any(_running(pid) for pid in old_workers))  # the crashed gateway's workers went too
    running.proc.send_signal(signal.SIGTERM)
    assert await asyncio.wait_for(running.proc.wait(), 60) == 0
    log = running.log_path.read_text(errors="replace")
    assert "management API was killed by SIGSEGV" in log
    assert "model gateway was killed by SIGSEGV" in log


async def test_serve_exits_non_zero_when_restarts_fail(database: Database) -> None:
    async with serve(database, SWITCHBOARD_RESTART_LIMIT="2") as handle:
        victim, gateway = handle.management(), handle.gateway()
        assert victim and gateway
        os.kill(victim, signal.SIGKILL)
        # Hold the management port so that every restart fails.
        blocker = socket.socket()
        blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past TIME_WAIT, as the server binds
        try:
            for _ in range(600):
                try:
                    blocker.bind(("127.0.0.1", handle.port))
                    break
                except OSError:
                    await asyncio.sleep(0.05)
            assert blocker.getsockname()[1] == handle.port, "the management port never came free"
            blocker.listen()
            code = await asyncio.wait_for(handle.proc.wait(), 120)
        finally:
            blocker.close()
        assert code == 1
        log = handle.log_path.read_text(errors="replace")
        assert "keeps failing; giving up" in log
        assert not _running(gateway)  # the gateway was stopped too


async def test_a_hung_gateway_worker_is_replaced(database: Database) -> None:
    """A worker whose event loop stops (SIGSTOP freezes it just so: alive, answering nothing) is killed and replaced
    by the gateway, and `serve` goes on."""
    async with serve(database, SWITCHBOARD_GATEWAY_LIVENESS_SECONDS="2") as handle:
        gateway = handle.gateway()
        assert gateway
        (worker,) = _children(gateway)
        os.kill(worker, signal.SIGSTOP)
        await _until(lambda: set(_children(gateway)) - {worker})
        await _until(lambda: _ready(f"http://127.0.0.1:{handle.gateway_port}/readyz"))
        assert handle.gateway() == gateway and handle.proc.returncode is None  # only the worker was replaced
        assert not _running(worker)
    log = handle.log_path.read_text(errors="replace")
    assert f"gateway worker {worker} stopped answering" in log
