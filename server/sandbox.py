"""Work on untrusted input (a RAG upload's parsing and chunking) in worker processes, each task within a CPU budget.

Why processes: the parsers' cost on crafted input is not linear in its size (lexbor's HTML tree builder is
quadratic in nesting, 21 s for 100,000 nested divs; pypdf has looped on crafted streams), and in a thread of the
gateway they hold the GIL, so one upload would stall every request its process serves. In a worker, a task over its
CPU budget is killed by the kernel (RLIMIT_CPU's SIGXCPU), and by the sandbox when the kernel does not (its CPU time
is watched from here as well, see `_Worker.watched_call`); one past its wall-clock deadline, or whose caller gave up
(a client gone), is killed here. The worker is replaced and no other task notices. A worker's data segment is
capped (RLIMIT_DATA: what a tree or a decoded text may take), and it dumps no core. Tasks may share a budget
(`CpuBudget`: an upload's files), each given what the ones before it left: a request of a hundred small hostile
files costs no more CPU than one file of their total size.

The event loop talks to each worker over a socket pair, in asyncio, with no thread between them: pebble's pool
(tried first) hands each task through three threads of its own that need the GIL, and while the loop was busy a
trivial task took 117 ms instead of 0.2. Workers are forked from a forkserver that has imported the tasks' modules
already, started (off the loop) with the first worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import multiprocessing
import os
import pickle
import resource
import signal
import socket
import struct
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.process import BaseProcess
from typing import Any, TypeVar, cast

__all__ = ["CpuBudget", "OverBudget", "Sandbox", "WorkerDied"]

T = TypeVar("T")
# The wall-clock deadline is a backstop for a task that stops using CPU without ending: a loaded machine stretches
# a CPU-bound task's wall time, never its CPU time, so it is generous.
_WALL_PER_CPU_SECOND = 10
_RECYCLE_AFTER_TASKS = 500  # a fresh worker now and then: what fragmentation a large parse left is given back
_LENGTH = struct.Struct("!Q")
_USED = struct.Struct("!d")  # the CPU seconds a task used, before its pickled outcome
_CPU_CHECK_SECONDS = 0.1  # how often a running task's CPU time is read (what it may overrun its limit by)
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
_READY = b"R"  # what a worker sends once warm: a worker that cannot start is told apart from a task that failed


@dataclass
class CpuBudget:
    """CPU seconds for one or several tasks in turn; `left` shrinks by what each used."""

    seconds: int
    left: float = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.left = self.seconds

    def spend(self, used: float) -> None:
        self.left = max(0.0, self.left - used)

    def exhaust(self) -> None:
        """Nothing left: a task killed over its limit used all it was given."""
        self.left = 0.0


class OverBudget(Exception):
    """The task used more CPU time (or wall time) than its budget had left."""

    def __init__(self, budget: CpuBudget) -> None:
        super().__init__(f"over its budget of {budget.seconds} s of CPU")
        self.cpu_seconds = budget.seconds


class WorkerDied(Exception):
    """The worker ended abnormally (a crash in native code, the memory cap reached in it, a kill from outside)."""


@dataclass(eq=False)  # each worker is itself: kept in a set
class _Worker:
    process: BaseProcess
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    tasks: int = 0
    over_cpu: bool = False  # killed by the sandbox for the CPU time its task used

    def alive(self) -> bool:
        """Its end of the socket still open: a killed process closes it at once, while `is_alive` waits for the
        forkserver to reap it and report back."""
        return not self.reader.at_eof() and self.process.is_alive()

    async def call(self, request: bytes) -> bytes:
        self.writer.write(_LENGTH.pack(len(request)) + request)
        await self.writer.drain()
        (size,) = _LENGTH.unpack(await self.reader.readexactly(_LENGTH.size))
        return await self.reader.readexactly(size)

    async def watched_call(self, request: bytes, cpu_seconds: int) -> bytes:
        """`call`, with the worker killed (and `over_cpu` set) once its CPU time passes the limit the worker sets
        itself (RLIMIT_CPU, counted from the whole seconds it had used). The kernel should kill it there, and does
        on an idle machine; on a loaded one (a VM's Linux 6.18, 2 cores, 3 busy processes beside it) neither
        RLIMIT_CPU nor a CPU-time itimer fired at all, and a task ran its 2.5 s of CPU through a 1 s limit. A task
        that answers within `_CPU_CHECK_SECONDS` costs one read of /proc and a timer."""
        started = _cpu_time(self.process.pid)
        if started is None:
            return await self.call(request)
        limit = math.ceil(started) + cpu_seconds
        loop = asyncio.get_running_loop()
        timer: asyncio.TimerHandle

        def check() -> None:
            nonlocal timer
            now = _cpu_time(self.process.pid)
            if now is not None and now > limit:
                self.over_cpu = True
                self.process.kill()  # the call then ends as for the kernel's SIGXCPU
            else:
                timer = loop.call_later(_CPU_CHECK_SECONDS, check)

        timer = loop.call_later(_CPU_CHECK_SECONDS, check)
        try:
            return await self.call(request)
        finally:
            timer.cancel()

    def stop(self) -> None:
        self.writer.close()
        self.process.kill()  # idle or not: nothing of it is kept


class Sandbox:
    def __init__(self, *, workers: int, memory_bytes: int, preload: Sequence[str], warm: Callable[[], Any]) -> None:
        """`preload`: modules the forkserver imports once; `warm`: a module-level function each new worker runs
        (loading what its tasks share, such as a tokenizer)."""
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(list(preload))
        self._slots = asyncio.Semaphore(workers)
        self._memory_bytes = memory_bytes
        self._warm = warm
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._closed = False
        self._starts: dict[asyncio.Future[None], _Start] = {}  # workers being started, in threads

    async def run(self, fn: Callable[..., T], /, *args: Any, budget: CpuBudget, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` (module-level, its arguments and result picklable) in a worker, within what
        `budget` has left (whole seconds, at least one); its exceptions are raised here. Cancelling the caller kills
        the worker."""
        if budget.left <= 0:
            raise OverBudget(budget)
        cpu_seconds = math.ceil(budget.left)
        request = pickle.dumps((cpu_seconds, fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        async with self._slots:
            worker = await self._worker()
            try:
                async with asyncio.timeout(cpu_seconds * _WALL_PER_CPU_SECOND):
                    answer = await worker.watched_call(request, cpu_seconds)
            except TimeoutError:
                self._retire(worker)
                budget.exhaust()
                raise OverBudget(budget) from None
            except (asyncio.IncompleteReadError, ConnectionError):
                self._retire(worker)
                exitcode = await asyncio.to_thread(_exit_code, worker.process)
                if exitcode == -signal.SIGXCPU or worker.over_cpu:
                    budget.exhaust()
                    raise OverBudget(budget) from None
                raise WorkerDied(f"the worker ended with {exitcode}") from None
            except BaseException:  # the caller cancelled: the task may still be running
                self._retire(worker)
                raise
            worker.tasks += 1
            if worker.tasks < _RECYCLE_AFTER_TASKS:
                self._idle.append(worker)
            else:
                self._retire(worker)
        used, answer = _USED.unpack_from(answer)[0], answer[_USED.size :]
        budget.spend(used)
        try:
            ok, value = pickle.loads(answer)  # noqa: S301 - from our own worker, over a socket pair only we hold
        except Exception:  # an exception class whose __init__ wants more than the arguments it keeps, say
            raise RuntimeError(f"{fn.__name__}'s answer could not be read back from its worker") from None
        if ok:
            return cast(T, value)
        raise value

    async def close(self) -> None:
        """Stop the workers (a task still running is killed) and wait for them; no worker starts after."""
        self._closed = True
        for start in self._starts.values():
            start.abandon()
        await asyncio.gather(*self._starts, return_exceptions=True)
        workers = list(self._workers)
        for worker in workers:
            self._retire(worker)
        await asyncio.to_thread(_join_all, workers)

    async def _worker(self) -> _Worker:
        while self._idle:
            worker = self._idle.pop()
            if worker.alive():
                return worker
            self._retire(worker)  # killed while idle (by the OOM killer, say): no task of ours was in it
        ours, theirs = socket.socketpair()
        process = self._context.Process(target=_serve, args=(theirs, self._memory_bytes, self._warm), daemon=True)
        # The first start launches the forkserver: seconds of imports, in a thread that goes on when its caller is
        # cancelled (a client gone) or the sandbox closes; either then has the worker stopped once it has started.
        start = _Start(process, theirs)
        running = asyncio.ensure_future(asyncio.to_thread(start.run))
        self._starts[running] = start
        running.add_done_callback(self._starts.pop)
        try:
            await asyncio.shield(running)
        except BaseException:
            start.abandon()
            ours.close()
            raise
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=2**16)
        worker = _Worker(process, reader, writer)
        self._workers.add(worker)
        try:
            if self._closed:  # before the start (a run after close) or during it: no one would stop this worker
                raise RuntimeError("the sandbox is closed")
            await reader.readexactly(len(_READY))
        except (asyncio.IncompleteReadError, ConnectionError):
            # Not the task's fault (a memory cap too small for the worker's own start, say): an internal error,
            # with the reason in the worker's stderr.
            self._retire(worker)
            raise RuntimeError("a sandbox worker ended while starting") from None
        except BaseException:
            self._retire(worker)
            raise
        return worker

    def _retire(self, worker: _Worker) -> None:
        worker.stop()
        self._workers.discard(worker)


class _Start:
    """A worker process started in a thread; `abandon` (from the event loop) stops it as soon as it has started."""

    def __init__(self, process: BaseProcess, theirs: socket.socket) -> None:
        self._process = process
        self._theirs = theirs
        self._lock = threading.Lock()
        self._started = self._abandoned = False

    def run(self) -> None:
        try:
            self._process.start()
        finally:
            self._theirs.close()  # our copy of the worker's end, once it has its own
        self._record(started=True)

    def abandon(self) -> None:
        self._record(abandoned=True)

    def _record(self, *, started: bool = False, abandoned: bool = False) -> None:
        """Note the start or the abandonment; whichever comes second (in another thread, maybe) kills the process."""
        with self._lock:
            self._started |= started
            self._abandoned |= abandoned
            stop = self._started and self._abandoned
        if stop:
            self._process.kill()


def _join_all(workers: list[_Worker]) -> None:
    for worker in workers:
        worker.process.join()


def _cpu_time(pid: int | None) -> float | None:
    """A process's CPU time (user and system, in seconds, as RLIMIT_CPU counts it); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()  # after the command's name, which may hold spaces
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS  # utime and stime, fields 14 and 15 of proc(5)


def _exit_code(process: BaseProcess) -> int | None:
    process.join(timeout=5)
    return process.exitcode


def _serve(connection: socket.socket, memory_bytes: int, warm: Callable[[], Any]) -> None:
    """A worker's life: set its limits, warm up, then answer requests until its input ends (its gateway closed it,
    or ended)."""
    # A terminal's Ctrl-C reaches the whole process group: the gateway stops its workers itself, in its own time.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _lower_soft_limit(resource.RLIMIT_DATA, memory_bytes)
    warm()
    stream = connection.makefile("rwb")
    with contextlib.suppress(ConnectionError):  # the gateway hung up (it gave up on this worker): end quietly
        stream.write(_READY)
        stream.flush()
        while header := stream.read(_LENGTH.size):
            (size,) = _LENGTH.unpack(header)
            cpu_seconds, fn, args, kwargs = pickle.loads(stream.read(size))  # noqa: S301 - from the gateway only
            answer = _answer(cpu_seconds, fn, args, kwargs)
            stream.write(_LENGTH.pack(len(answer)) + answer)
            stream.flush()


def _answer(cpu_seconds: int, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes:
    """The CPU time the task used, then (True, the result) or (False, the exception), pickled. RLIMIT_CPU counts
    the process's whole life, so the task's budget is set on top of what the worker used before it, and lifted
    after."""
    before = _cpu_used()
    hard = _lower_soft_limit(resource.RLIMIT_CPU, math.ceil(before) + cpu_seconds)
    try:
        outcome: tuple[bool, Any] = (True, fn(*args, **kwargs))
    except Exception as error:  # the caller's to handle, as if it had run the task itself
        outcome = (False, error)
    finally:
        resource.setrlimit(resource.RLIMIT_CPU, (hard, hard))
    try:
        pickled = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        pickled = pickle.dumps((False, RuntimeError(f"{fn.__name__} returned or raised what cannot be pickled")))
    return _USED.pack(_cpu_used() - before) + pickled


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _lower_soft_limit(which: int, soft: int) -> int:
    """Set the soft limit (never above the hard one, which an unprivileged process cannot raise); the hard one."""
    _, hard = resource.getrlimit(which)
    resource.setrlimit(which, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))
    return hard
