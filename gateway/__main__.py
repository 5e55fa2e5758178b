"""`python -m gateway`: serve the gateway on every core.

The parent process reserves the address with SO_REUSEPORT (resolving port 0 to a real port), then forks
`settings.gateway_workers` workers (0 = os.cpu_count()); each binds the same address with SO_REUSEPORT, so the kernel
spreads connections across them. SIGTERM/SIGINT on the parent is passed to every worker, which stops accepting,
finishes in-flight requests and flushes its usage meter before exiting. A worker that dies is replaced after a
growing delay; when workers keep dying (`server.supervision.RestartBudget`) the gateway stops and exits 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
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
from gateway.parse_errors import listen
from server import metrics
from server.heap import freeze_startup_heap
from server.logs import configure_logging
from server.settings import Settings, load_settings
from server.supervision import RestartBudget, describe_exit

log = logging.getLogger("switchboard.gateway")

_SHUTDOWN_TIMEOUT = 30.0
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _reserve(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock  # bound, never listening: it holds the port without taking connections


async def serve_worker(settings: Settings, port: int) -> None:
    """One worker: serve `settings.gateway_host`:port (shared with the other workers) until SIGTERM or SIGINT."""
    # lingering_time: after a refused upload (413) read and drop the rest for 1 s at most, not aiohttp's 10 s.
    handler_options: dict[str, Any] = {"access_log": None, "lingering_time": 1.0}
    runner = web.AppRunner(
        make_app(dataclasses.replace(settings, gateway_port=port)),  # the real port: the egress guard refuses it
        handle_signals=False,
        shutdown_timeout=_SHUTDOWN_TIMEOUT,
        **handler_options,
    )
    await runner.setup()
    freeze_startup_heap()
    listener = await listen(runner, settings.gateway_host, port, backlog=1024, **handler_options)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        listener.close()  # stop accepting
        await runner.cleanup()  # waits for in-flight requests, runs cleanup_ctx (meter flush)
        await listener.wait_closed()


def _die_with_parent(parent: int) -> None:
    """A worker whose parent crashed would keep serving the port unsupervised (SO_REUSEPORT lets the restarted
    gateway bind beside it): ask Linux to send it SIGTERM when the parent dies."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


def _worker(settings: Settings, port: int, parent: int) -> None:
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent relays Ctrl-C as SIGTERM
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # until the event loop installs its own handler
    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner = asyncio.Runner()
    with runner:
        runner.run(serve_worker(settings, port))


def _spawn(context: multiprocessing.context.ForkContext, settings: Settings, port: int) -> BaseProcess:
    worker = context.Process(target=_worker, args=(settings, port, os.getpid()), daemon=False)
    worker.start()
    return worker


def main() -> int:
    settings = load_settings()
    configure_logging(settings.log_level, "%(asctime)s %(levelname)s %(process)d %(name)s %(message)s")
    workers = settings.gateway_workers or os.cpu_count() or 1
    reserved = _reserve(settings.gateway_host, settings.gateway_port)
    if settings.metrics_enabled:  # before forking: every worker then writes its samples where any worker reads them
        metrics.use_multiprocess_dir(settings.metrics_dir)
    port = reserved.getsockname()[1]
    context = multiprocessing.get_context("fork")
    procs: list[BaseProcess] = []
    stopping = False

    def relay(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True
        for proc in procs:
            if proc.pid is not None and proc.is_alive():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)

    signal.signal(signal.SIGTERM, relay)  # before forking, so no signal is missed; workers reset it
    signal.signal(signal.SIGINT, relay)
    procs.extend(_spawn(context, settings, port) for _ in range(workers))
    print(f"gateway listening on http://{settings.gateway_host}:{port}/v1 ({workers} workers)", flush=True)
    budget = RestartBudget(settings.restart_limit, settings.restart_window_seconds)
    failed = False
    while procs:
        multiprocessing.connection.wait([p.sentinel for p in procs])
        for proc in [p for p in procs if not p.is_alive()]:
            procs.remove(proc)
            proc.join()
            if proc.pid is not None:
                metrics.worker_exited(proc.pid)
            if stopping:
                failed = failed or proc.exitcode not in (0, -signal.SIGTERM)
                continue
            # A worker died on its own: replace it (the others kept serving), unless workers keep dying.
            delay = budget.next_delay()
            if delay is None:
                log.error("worker %s %s; workers keep failing: stopping", proc.pid, describe_exit(proc.exitcode))
                failed = True
                relay(signal.SIGTERM, None)
                continue
            log.error("gateway worker %s %s; starting a new one in %g s", proc.pid, describe_exit(proc.exitcode), delay)
            time.sleep(delay)
            if not stopping:
                procs.append(_spawn(context, settings, port))
    reserved.close()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
