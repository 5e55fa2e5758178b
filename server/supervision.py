"""When to restart a crashed process, and when to give up.

`switchboard serve` supervises the management server and the gateway; the gateway's parent supervises its workers.
Both use one `RestartBudget`: a dead process is restarted after an exponentially growing delay (0.5 s, 1 s, 2 s, …,
at most 30 s), and when more than `limit` restarts would fall within `window_seconds` the supervisor gives up and
exits non-zero, so an outer supervisor (systemd, Kubernetes) sees the failure instead of a process that exits 0 or
restarts forever.
"""

from __future__ import annotations

import signal
import time
from collections import deque
from collections.abc import Callable

__all__ = ["RestartBudget", "describe_exit"]

_BASE_DELAY = 0.5
_MAX_DELAY = 30.0


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
