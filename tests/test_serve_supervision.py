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
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from server.store.migrate import upgrade
from server.supervision import RestartBudget
from tests.clients import ConnectJsonCaller
from tests.conftest import Database
from tests.serving import (
    Serve,
    children,
    free_port,
    launched,
    ready,
    running_process,
    serve,
    start_serve,
    status_of,
    stop,
    until,
)
from tests.world import TENANTS, must

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")


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
    await until(lambda: running.management() not in (None, old_management))
    await until(lambda: ready(f"http://127.0.0.1:{running.port}/readyz"))

    old_workers = set(children(old_gateway))
    assert old_workers
    os.kill(old_gateway, signal.SIGSEGV)
    await until(lambda: running.gateway() not in (None, old_gateway))
    await until(lambda: ready(f"http://127.0.0.1:{running.gateway_port}/readyz"))

    assert running.proc.returncode is None
    await until(lambda: not any(running_process(pid) for pid in old_workers))  # the crashed gateway's workers went too
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
        assert not running_process(gateway)  # the gateway was stopped too


@contextlib.asynccontextmanager
async def _starting(var_dir: Path) -> AsyncIterator[tuple[Serve, int, int]]:
    """Serve waiting for its management API's /readyz, which never answers 200 (its database never answers): the
    handle, Envoy's pid and the gateway's."""
    unreachable = Database("postgresql", f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/none")
    handle = await launched(unreachable, var_dir, "--no-migrate")
    proc, port, log_path = handle.proc, handle.port, handle.log_path
    try:
        await until(lambda: proc.returncode is not None or (handle.management() and handle.gateway()), attempts=900)
        envoy, gateway = handle.management(), handle.gateway()
        assert envoy and gateway, log_path.read_text(errors="replace")

        async def unready() -> bool:
            return await status_of(f"http://127.0.0.1:{port}/readyz") == 503

        await until(unready, attempts=900)
        yield handle, envoy, gateway
    finally:
        await stop(proc)


async def test_serve_stops_at_once_when_the_management_server_dies_while_starting(tmp_path: Path) -> None:
    """Envoy dying before the management API is ready makes serve say so and exit 1 at once, stopping the gateway it
    had started, rather than go on polling a port that is no longer its server's (the test's blocker above once
    answered those polls, and serve waited minutes)."""
    async with _starting(tmp_path) as (handle, envoy, gateway):
        os.kill(envoy, signal.SIGKILL)
        code = await asyncio.wait_for(handle.proc.wait(), 30)
    log = handle.log_path.read_text(errors="replace")
    assert code == 1, log
    assert "the management API failed to start (StartupError)" in log
    await until(lambda: not running_process(gateway))


async def test_serve_stopped_while_starting_stops_what_has_started(tmp_path: Path) -> None:
    """SIGTERM while the management API is still starting (its start may wait a minute) stops serve at once: Envoy
    and the gateway stop with it, and serve exits 0 as for any stop."""
    async with _starting(tmp_path) as (handle, envoy, gateway):
        handle.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(handle.proc.wait(), 30)
    assert code == 0, handle.log_path.read_text(errors="replace")
    await until(lambda: not running_process(envoy) and not running_process(gateway))


async def test_a_gateway_does_not_outlive_a_killed_serve(database: Database) -> None:
    """Serve killed outright (SIGKILL: no handler runs) takes its gateway and the gateway's workers with it, so a
    restarted serve finds the ports free; the gateway started by hand has no such tie (tests/test_gateway_process)."""
    async with serve(database) as handle:
        gateway = handle.gateway()
        assert gateway
        workers = set(children(gateway))
        assert workers
        handle.proc.kill()
        await handle.proc.wait()
        await until(lambda: not any(running_process(pid) for pid in {gateway, *workers}))


async def test_a_hung_gateway_worker_is_replaced(database: Database) -> None:
    """A worker whose event loop stops (SIGSTOP freezes it just so: alive, answering nothing) is killed and replaced
    by the gateway, and `serve` goes on."""
    async with serve(database, SWITCHBOARD_GATEWAY_LIVENESS_SECONDS="2") as handle:
        gateway = handle.gateway()
        assert gateway
        (worker,) = children(gateway)
        os.kill(worker, signal.SIGSTOP)
        await until(lambda: set(children(gateway)) - {worker})
        await until(lambda: ready(f"http://127.0.0.1:{handle.gateway_port}/readyz"))
        assert handle.gateway() == gateway and handle.proc.returncode is None  # only the worker was replaced
        assert not running_process(worker)
    log = handle.log_path.read_text(errors="replace")
    assert f"gateway worker {worker} stopped answering" in log


async def _second_serve(tmp_path: Path, port: int, gateway_port: int) -> tuple[int, str]:
    """A second `serve` with a database and var dir of its own on these ports: its exit code and output."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'other.db'}"
    upgrade(url)
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-other-", dir=tmp_path))
    proc, log_path = await start_serve(Database("sqlite", url), var_dir, port, gateway_port)
    try:
        code = await asyncio.wait_for(proc.wait(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    return code, log_path.read_text(errors="replace")


async def test_a_second_serve_on_taken_ports_is_refused(running: Serve, tmp_path: Path) -> None:
    """Two instances never share a port (SO_REUSEPORT let the second bind and take part of the first one's traffic,
    on another database): a second `serve` on either port exits non-zero with "address in use", and the first goes
    on serving its own database."""
    for taken, ports in (
        (running.port, (running.port, free_port())),
        (running.gateway_port, (free_port(), running.gateway_port)),
    ):
        code, output = await _second_serve(tmp_path, *ports)
        assert code != 0
        assert f"127.0.0.1:{taken} " in output and "address in use" in output

    token = (running.log_path.parent / "admin-token").read_text().strip()
    connect = ConnectJsonCaller(f"http://127.0.0.1:{running.port}")
    created = must(await connect.call(f"{TENANTS}/CreateTenant", {"name": "first-only"}, token=token))["tenant"]
    for _ in range(20):  # new connections each time: none may reach another server
        listed = must(await connect.call(f"{TENANTS}/ListTenants", {}, token=token))
        assert created["id"] in {tenant["id"] for tenant in listed["tenants"]}
        assert await ready(f"http://127.0.0.1:{running.gateway_port}/readyz")
