"""server.sandbox: tasks run in worker processes, over their CPU budget they are killed, a crash or a cancelled
caller costs only the worker, and the pool goes on with a fresh one."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from server.errors import InvalidArgument
from server.sandbox import CpuBudget, OverBudget, Sandbox, WorkerDied
from tests import sandbox_tasks
from tests.serving import until

MEMORY = 1024**3


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    made = Sandbox(workers=1, memory_bytes=MEMORY, preload=["tests.sandbox_tasks"], warm=sandbox_tasks.pid)
    yield made
    await made.close()


async def test_a_task_runs_in_another_process_and_its_refusal_comes_back_whole(sandbox: Sandbox) -> None:
    assert await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(5)) != os.getpid()
    with pytest.raises(InvalidArgument, match="refused in the worker") as refused:
        await sandbox.run(sandbox_tasks.refuse, "file", budget=CpuBudget(5))
    assert refused.value.field == "file"


async def test_a_task_over_its_cpu_budget_is_killed_and_the_worker_replaced(sandbox: Sandbox) -> None:
    before = await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(5))
    with pytest.raises(OverBudget) as over:
        await sandbox.run(sandbox_tasks.burn, 600, budget=CpuBudget(1))
    assert over.value.cpu_seconds == 1
    assert await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(5)) != before


async def test_each_task_has_its_own_budget_whatever_the_worker_used_before(sandbox: Sandbox) -> None:
    worker = await sandbox.run(sandbox_tasks.burn, 1.5, budget=CpuBudget(3))
    assert await sandbox.run(sandbox_tasks.burn, 0.3, budget=CpuBudget(1)) == worker


async def test_tasks_sharing_a_budget_each_get_what_the_ones_before_left(sandbox: Sandbox) -> None:
    shared = CpuBudget(3)
    await sandbox.run(sandbox_tasks.burn, 2.5, budget=shared)
    assert 0 < shared.left <= 0.5
    # 2.5 s alone fits a budget of 3 s; of this one 0.5 s is left, which the kernel's whole seconds of RLIMIT_CPU,
    # counted from the worker's whole seconds used, make 1 to 2 s
    with pytest.raises(OverBudget):
        await sandbox.run(sandbox_tasks.burn, 2.5, budget=shared)
    assert shared.left == 0
    with pytest.raises(OverBudget):  # spent: refused before any worker is asked
        await sandbox.run(sandbox_tasks.pid, budget=shared)


async def test_a_task_the_kernel_does_not_stop_is_stopped_at_its_cpu_limit(sandbox: Sandbox, tmp_path: Path) -> None:
    """Stopped at its limit (1 to 2 s for 1 s left, RLIMIT_CPU's whole seconds), by the sandbox: left to the
    wall-clock backstop (10 s for 1 s of CPU), it would use several seconds more."""
    first = await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(1))
    used = tmp_path / "used"
    budget = CpuBudget(1)
    with pytest.raises(OverBudget):
        await sandbox.run(sandbox_tasks.burn_unlimited, str(used), budget=budget)
    assert budget.left == 0
    assert 0.5 < float(used.read_text()) < 2.3
    assert await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(1)) != first  # the worker was replaced


async def test_a_crash_in_the_worker_is_reported_and_the_pool_goes_on(sandbox: Sandbox) -> None:
    with pytest.raises(WorkerDied):
        await sandbox.run(sandbox_tasks.crash, budget=CpuBudget(5))
    assert await sandbox.run(sandbox_tasks.allocate, 1000, budget=CpuBudget(5)) == 1000


async def test_a_worker_cannot_take_more_memory_than_its_cap(sandbox: Sandbox) -> None:
    with pytest.raises(MemoryError):
        await sandbox.run(sandbox_tasks.allocate, 2 * MEMORY, budget=CpuBudget(5))
    assert await sandbox.run(sandbox_tasks.allocate, MEMORY // 4, budget=CpuBudget(5)) == MEMORY // 4


async def test_a_cancelled_caller_stops_its_worker(sandbox: Sandbox, tmp_path: Path) -> None:
    announced = tmp_path / "pid"
    task = asyncio.create_task(sandbox.run(sandbox_tasks.announce_then_spin, str(announced), budget=CpuBudget(600)))
    await until(lambda: announced.exists() and announced.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    spinning = int(announced.read_text())
    await until(lambda: not _alive(spinning))  # killed; reaped when the pool next starts a worker
    assert await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(5)) != spinning


async def test_a_worker_killed_while_idle_is_replaced_even_before_the_forkserver_reports_it(sandbox: Sandbox) -> None:
    idle = await sandbox.run(sandbox_tasks.pid, budget=CpuBudget(5))
    forkserver = int(_status(idle)[1])  # its parent
    os.kill(forkserver, signal.SIGSTOP)  # it reaps its children and reports their deaths: not while stopped
    try:
        os.kill(idle, signal.SIGKILL)
        await until(lambda: not _alive(idle))
        replaced = asyncio.ensure_future(sandbox.run(sandbox_tasks.pid, budget=CpuBudget(5)))
        await asyncio.sleep(0.5)  # the dead worker, if taken, fails the task now; a new one waits for the forkserver
        assert not replaced.done()
    finally:
        os.kill(forkserver, signal.SIGCONT)
    assert await replaced != idle


async def test_the_pool_runs_at_most_its_workers_and_answers_each_caller(tmp_path: Path) -> None:
    made = Sandbox(workers=2, memory_bytes=MEMORY, preload=["tests.sandbox_tasks"], warm=sandbox_tasks.pid)
    try:
        sizes = await asyncio.gather(*(made.run(sandbox_tasks.allocate, n, budget=CpuBudget(5)) for n in range(1, 21)))
        assert sizes == list(range(1, 21))
        assert len({await made.run(sandbox_tasks.pid, budget=CpuBudget(5)) for _ in range(10)}) <= 2
    finally:
        await made.close()


async def test_a_worker_that_cannot_start_is_an_internal_error_not_the_task_s() -> None:
    made = Sandbox(workers=1, memory_bytes=MEMORY, preload=["tests.sandbox_tasks"], warm=sandbox_tasks.crash)
    try:
        with pytest.raises(RuntimeError, match="ended while starting"):
            await made.run(sandbox_tasks.pid, budget=CpuBudget(5))
    finally:
        await made.close()


async def test_an_exception_that_cannot_be_rebuilt_here_is_an_error_naming_the_task(sandbox: Sandbox) -> None:
    with pytest.raises(RuntimeError, match="raise_two_part_error's answer could not be read back"):
        await sandbox.run(sandbox_tasks.raise_two_part_error, budget=CpuBudget(5))
    assert await sandbox.run(sandbox_tasks.allocate, 10, budget=CpuBudget(5)) == 10


_GAVE_UP = textwrap.dedent(
    """
    import asyncio, os, sys, time
    from pathlib import Path
    from server.sandbox import CpuBudget, Sandbox
    from tests import sandbox_tasks

    async def main() -> None:
        preload = ["server.domain.rag_files"]
        made = Sandbox(workers=1, memory_bytes=2**30, preload=preload, warm=sandbox_tasks.record_pid)
        starting = asyncio.create_task(made.run(sandbox_tasks.pid, budget=CpuBudget(5)))
        await asyncio.sleep(0.05)  # the run is in its thread, starting the forkserver (a fresh interpreter's: seconds)
        starting.cancel()
        try:
            await starting
            print("not cancelled")
        except asyncio.CancelledError:
            print("cancelled")
        await made.close()
        print("closed", time.time(), flush=True)
        await asyncio.sleep(3)  # time enough for a worker left running to warm up

    asyncio.run(main())
    """
)


def test_a_worker_whose_caller_gave_up_while_it_started_is_stopped_by_close(tmp_path: Path) -> None:
    """A worker starts in a thread (the first one also starts the forkserver: seconds), which goes on when its caller
    is cancelled (a client gone). Nothing owned the worker it started: it warmed up after close() returned, then
    died writing to the socket its caller had dropped, a BrokenPipeError traceback in the log (found by probing).
    In a fresh interpreter, so that the forkserver is not already running and the start is slow."""
    env = {**os.environ, sandbox_tasks.PIDS: str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", _GAVE_UP], capture_output=True, text=True, check=True, timeout=120, env=env
    )
    printed = done.stdout.split()
    assert printed[0] == "cancelled", done.stdout
    closed_at = float(printed[printed.index("closed") + 1])
    late = [p.name for p in tmp_path.iterdir() if p.stat().st_mtime > closed_at]
    assert not late, f"worker(s) {late} warmed up after close() returned"
    assert all(not _alive(int(p.name)) for p in tmp_path.iterdir())
    assert "Traceback" not in done.stderr, done.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = _status(pid)
    return bool(status) and status[0] != "Z"  # a zombie not yet reaped has stopped already


def _status(pid: int) -> list[str]:
    """The process's state, parent, and on (from /proc/PID/stat, after its name); none once it is gone."""
    stat = Path(f"/proc/{pid}/stat")
    return stat.read_text().split(") ", 1)[1].split() if stat.exists() else []


async def test_a_closed_sandbox_starts_no_worker_even_one_asked_for_while_it_closed() -> None:
    made = Sandbox(workers=1, memory_bytes=MEMORY, preload=["tests.sandbox_tasks"], warm=sandbox_tasks.pid)
    starting = asyncio.create_task(made.run(sandbox_tasks.pid, budget=CpuBudget(5)))
    await asyncio.sleep(0)  # the run is starting its worker (in a thread)
    await made.close()
    with pytest.raises(RuntimeError, match="closed"):  # its worker was stopped, not left running unowned
        await starting
    with pytest.raises(RuntimeError, match="closed"):
        await made.run(sandbox_tasks.pid, budget=CpuBudget(5))
