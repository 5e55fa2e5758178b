"""When to restart a crashed process, and when to give up.

`switchboard serve` supervises the management server and the gateway; the gateway's parent supervises its workers.
Both use one `RestartBudget`: a dead process is restarted after an exponentially growing delay (0.5 s, 1 s, 2 s, …,
at most 30 s), and when more than `limit` restarts would fall within `window_seconds` the supervisor gives up and
exits non-zero, so an outer supervisor (systemd, Kubernetes) sees the failure instead of a process that exits 0 or
restarts forever.

A hung process is not a dead one: a gateway worker whose event loop is stuck (a CPU-bound request, a deadlock)
keeps its port share and never exits, so restarting the dead alone would leave it serving nothing for ever. Each
worker's loop therefore stamps a `Heartbeat` in memory shared with its parent; the parent kills (SIGKILL: a stuck
loop cannot run a SIGTERM handler) a worker whose stamp is older than the liveness bound, and replaces it as a dead
one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import multiprocessing.context
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["SUPERVISOR_PID", "Heartbeat", "RestartBudget", "describe_exit", "die_with_parent", "die_with_supervisor"]

# Set by `serve` in the environment of the gateway it starts: its own pid.
SUPERVISOR_PID = "SWITCHBOARD_SUPERVISOR_PID"
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
_BASE_DELAY = 0.5
_MAX_DELAY = 30.0
# Before its first beat a worker is starting (building its app, opening the database): it gets this long at least.
_STARTUP_SECONDS = 60.0


class RestartBudget:
    def __init__(self, limit: int, window_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._limit = limit
        self._window = window_seconds
        self._clock = clock
        self._restarts: deque[float] = deque()

    def next_delay(self) -> float | None:
        """Record a restart and return how long to wait before it, or None when the budget is spent."""
        now = self._clock()
        while self._restarts and now - self._restarts[0] > self._window:
            self._restarts.popleft()
        if len(self._restarts) >= self._limit:
            return None
        self._restarts.append(now)
        return min(_MAX_DELAY, _BASE_DELAY * float(2 ** (len(self._restarts) - 1)))


def describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "exited"
    if returncode < 0:
        try:
            return f"was killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"was killed by signal {-returncode}"
    return f"exited with status {returncode}"


class Heartbeat:
    """One worker's proof of life: a monotonic timestamp in shared memory, written by the worker's event loop
    (`run`), read by its parent (`stale`). Created in the parent before the worker is forked; CLOCK_MONOTONIC is
    system-wide, so both processes read the same clock."""

    def __init__(self, context: multiprocessing.context.ForkContext, liveness_seconds: float) -> None:
        self._stamp: Any = context.RawValue(ctypes.c_double, 0.0)  # 0: not beaten yet
        self._born = time.monotonic()
        self.liveness_seconds = liveness_seconds

    async def run(self) -> None:
        """Beat until cancelled, a few times per liveness period: only a loop that runs tasks can beat."""
        interval = self.liveness_seconds / 4
        while True:
            self._stamp.value = time.monotonic()
            await asyncio.sleep(interval)

    def stale(self) -> float | None:
        """Seconds since the last beat when that is past the bound (past the startup bound before the first beat),
        else None."""
        last = float(self._stamp.value)
        silent = time.monotonic() - (last or self._born)
        bound = self.liveness_seconds if last else max(self.liveness_seconds, _STARTUP_SECONDS)
        return silent if silent > bound else None


def die_with_parent(parent: int) -> None:
    """A process whose supervisor died would keep serving its port unsupervised (and keep a restarted supervisor from
    claiming it): ask Linux to send it SIGTERM when the parent dies, SIGKILL included."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(0)


def die_with_supervisor() -> None:
    """`die_with_parent` for a process `serve` started (SUPERVISOR_PID names its parent); nothing for one started
    by hand, whose parent is a shell or a service manager that may well exit first."""
    supervisor = os.environ.pop(SUPERVISOR_PID, None)
    if supervisor is not None and supervisor == str(os.getppid()):
        die_with_parent(os.getppid())
