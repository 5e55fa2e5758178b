"""`python -m gateway`: serve the gateway on every core.

The parent process claims the address (server.listening: a second server on the port is refused with "address in
use" instead of silently taking part of the traffic) and reserves it with SO_REUSEPORT (resolving port 0 to a real
port), then forks `settings.gateway_workers` workers (0 = os.cpu_count()); each binds the same address with
SO_REUSEPORT, so the kernel spreads connections across them. SIGTERM/SIGINT on the parent is passed to every
worker, which first reports not ready (/readyz 503) while still serving for `settings.shutdown_deregister_seconds`
(load balancers take the replica out of rotation meanwhile), then closes its listening socket (once all have, the
port refuses new connections), lets in-flight requests and streams finish for at most
`settings.shutdown_grace_seconds`, and flushes its usage meter before exiting; the parent kills any worker still
running past that bound (docs/lifecycle.md). Without Redis, the parent also makes the rate-limit counter table
the workers share (server.store.shared_counters) before forking them; each worker counts in its own column of it
(its index), which the parent clears when that worker dies. A worker that dies is replaced after a growing delay;
when workers keep dying (`server.supervision.RestartBudget`) the gateway stops and exits 1. A worker whose event
loop stops running (`server.supervision.Heartbeat`, `SWITCHBOARD_GATEWAY_LIVENESS_SECONDS`) is killed and replaced the
same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.context
import os
import signal
import socket
import sys
import time
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Any

from aiohttp import web

from gateway.app import make_app
from gateway.context import READINESS
from gateway.limits.setup import shared_counters_for
from gateway.parse_errors import listen
from server import metrics
from server.heap import freeze_startup_heap
from server.listening import AddressInUseError, claim_port
from server.logs import configure_logging
from server.settings import InvalidSetting, Settings, load_settings
from server.store.shared_counters import SharedCounters
from server.supervision import Heartbeat, RestartBudget, describe_exit, die_with_parent, die_with_supervisor

log = logging.getLogger("switchboard.gateway")

_BACKLOG = 1024
# Past the grace period a worker still closes its upstream sessions and writes its last usage batch: this long at
# most before its parent kills it.
_FLUSH_SECONDS = 10.0


async def serve_worker(
    settings: Settings, port: int, heartbeat: Heartbeat | None = None, shared_counters: SharedCounters | None = None
) -> None:
    """One worker: serve `settings.gateway_host`:port (shared with the other workers) until SIGTERM or SIGINT,
    beating `heartbeat` (its parent's watchdog) meanwhile; then drain within `settings.shutdown_grace_seconds`."""
    beats = asyncio.create_task(heartbeat.run()) if heartbeat is not None else None
    # lingering_time: after a refused upload (413) read and drop the rest for 1 s at most, not aiohttp's 10 s.
    handler_options: dict[str, Any] = {"access_log": None, "lingering_time": 1.0}
    # The real port: the egress guard refuses it.
    app = make_app(dataclasses.replace(settings, gateway_port=port), shared_counters=shared_counters)
    runner = web.AppRunner(
        app, handle_signals=False, shutdown_timeout=settings.shutdown_grace_seconds, **handler_options
    )
    await runner.setup()
    freeze_startup_heap()
    listener = await listen(
        runner,
        settings.gateway_host,
        port,
        backlog=_BACKLOG,
        header_timeout=settings.request_header_timeout_seconds,
        max_connections=settings.max_connections,
        **handler_options,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
        if READINESS in app:  # whatever asks /readyz from now on hears "draining"
            app[READINESS].drain()
        # Serving on, unready: a load balancer's health check takes the replica out of rotation meanwhile, so no
        # request is sent to it as its listener closes.
        await asyncio.sleep(settings.shutdown_deregister_seconds)
    finally:
        if READINESS in app:
            app[READINESS].drain()
        listener.close()  # stop accepting
        await runner.cleanup()  # lets in-flight requests finish (up to the grace), runs cleanup_ctx (meter flush)
        await listener.wait_closed()
        if beats is not None:
            beats.cancel()


def _worker(
    settings: Settings, port: int, parent: int, heartbeat: Heartbeat, *, shared: SharedCounters | None, index: int
) -> None:
    die_with_parent(parent)
    if shared is not None:
        shared.attach(index)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent relays Ctrl-C as SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # until the event loop installs its own handler
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    with runner:
        runner.run(serve_worker(settings, port, heartbeat, shared))


class _Workers:
    """The parent's side: fork the workers, replace dead and hung ones, and on SIGTERM stop them within the bound."""

    def __init__(self, settings: Settings, reserved: socket.socket, shared: SharedCounters | None = None) -> None:
        self._settings = settings
        self._reserved = reserved  # bound, never listening: holds the port between worker restarts
        self._port = int(reserved.getsockname()[1])
        self._context = multiprocessing.get_context("fork")
        self._workers: dict[BaseProcess, Heartbeat] = {}
        self._shared = shared  # the rate-limit table (None with Redis): its column `index` is worker `index`'s
        self._indices: dict[BaseProcess, int] = {}
        self._killed: set[int] = set()  # workers already sent SIGKILL (hung, or overdue at shutdown)
        self._stopping = False
        self._deadline = 0.0  # when stopping: past this, workers still running are killed
        self._failed = False

    def stop(self, _signum: int = signal.SIGTERM, _frame: FrameType | None = None) -> None:
        """The SIGTERM/SIGINT handler (also called when workers keep failing)."""
        if not self._stopping:
            settings = self._settings
            bound = settings.shutdown_deregister_seconds + settings.shutdown_grace_seconds + _FLUSH_SECONDS
            self._deadline = time.monotonic() + bound
        self._stopping = True
        self._reserved.close()  # with the workers' listeners closed too, the port refuses new connections
        for proc in self._workers:
            if proc.pid is not None and proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)

    def _spawn(self) -> None:
        index = min(set(range(len(self._indices) + 1)) - set(self._indices.values()))  # the lowest one free
        heartbeat = Heartbeat(self._context, self._settings.gateway_liveness_seconds)
        args = (self._settings, self._port, os.getpid(), heartbeat)
        kwargs = {"shared": self._shared, "index": index}
        worker = self._context.Process(target=_worker, args=args, kwargs=kwargs, daemon=False)
        worker.start()
        self._workers[worker] = heartbeat
        self._indices[worker] = index

    def _kill(self, proc: BaseProcess) -> None:
        assert proc.pid is not None
        self._killed.add(proc.pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)

    def _kill_stuck(self) -> None:
        """SIGKILL each worker whose loop stopped beating (it cannot run a SIGTERM handler), and at shutdown each
        still running past the bound; their deaths are then handled like any other."""
        overdue = self._stopping and time.monotonic() > self._deadline
        for proc, heartbeat in self._workers.items():
            if proc.pid is None or proc.pid in self._killed or not proc.is_alive():
                continue
            silent = heartbeat.stale()
            if silent is not None:
                log.warning(
                    "gateway worker %s stopped answering (its event loop has not run for %.1f s); killing it",
                    proc.pid,
                    silent,
                )
                self._kill(proc)
            elif overdue:
                log.error("gateway worker %s did not stop within the shutdown bound; killing it", proc.pid)
                self._kill(proc)

    def run(self, count: int) -> int:
        for _ in range(count):
            self._spawn()
        host = self._settings.gateway_host
        print(f"gateway listening on http://{host}:{self._port}/v1 ({count} workers)", flush=True)
        budget = RestartBudget(self._settings.restart_limit, self._settings.restart_window_seconds)
        while self._workers:
            # Woken by a worker's death, or every quarter liveness period to look for hung ones (during a stop too:
            # a hung worker would never finish it), and at the shutdown deadline.
            timeout = self._settings.gateway_liveness_seconds / 4
            if self._stopping:
                timeout = min(timeout, max(0.0, self._deadline - time.monotonic()) + 0.1)
            multiprocessing.connection.wait([p.sentinel for p in self._workers], timeout=timeout)
            self._kill_stuck()
            for proc in [p for p in self._workers if not p.is_alive()]:
                del self._workers[proc]
                index = self._indices.pop(proc)
                if self._shared is not None:  # the calls it had in flight free their concurrency slots now
                    self._shared.release_worker(index)
                proc.join()
                self._killed.discard(proc.pid or 0)  # its pid may be a new worker's one day
                if proc.pid is not None:
                    metrics.worker_exited(proc.pid)
                if self._stopping:
                    self._failed = self._failed or proc.exitcode not in (0, -signal.SIGTERM)
                    continue
                # A worker died on its own: replace it (the others kept serving), unless workers keep dying.
                delay = budget.next_delay()
                exit_ = describe_exit(proc.exitcode)
                if delay is None:
                    log.error("worker %s %s; workers keep failing: stopping", proc.pid, exit_)
                    self._failed = True
                    self.stop()
                    continue
                log.error("gateway worker %s %s; starting a new one in %g s", proc.pid, exit_, delay)
                time.sleep(delay)
                if not self._stopping:
                    self._spawn()
        self._reserved.close()
        return 1 if self._failed else 0


def main() -> int:
    die_with_supervisor()  # a serve killed outright must not leave this gateway holding the port
    try:
        settings = load_settings()
    except InvalidSetting as exc:  # an operator's typo, not a bug: the message names the variable, no traceback
        print(f"switchboard gateway: {exc}", file=sys.stderr)
        return 2
    configure_logging(settings.log_level, "%(asctime)s %(levelname)s %(process)d %(name)s %(message)s")
    try:
        # The lock is inherited by the workers and held until the last of them exits: never closed here.
        reserved, _lock = claim_port(settings.gateway_host, settings.gateway_port, "model gateway")
    except AddressInUseError as exc:
        print(f"switchboard gateway: {exc}", file=sys.stderr, flush=True)
        return 2
    if settings.metrics_enabled:  # before forking: every worker then writes its samples where any worker reads them
        metrics.use_multiprocess_dir(settings.metrics_dir)
    count = settings.gateway_workers or os.cpu_count() or 1
    workers = _Workers(settings, reserved, shared_counters_for(settings, count))
    signal.signal(signal.SIGTERM, workers.stop)  # before forking, so no signal is missed; workers reset it
    signal.signal(signal.SIGINT, workers.stop)
    return workers.run(count)


if __name__ == "__main__":
    code = main()
    # The workers flushed what mattered; tearing down this process's imported heap cost 1-2 s under load, for
    # nothing: exit now.
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
