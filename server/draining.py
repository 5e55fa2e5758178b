"""Whether this process has begun its graceful shutdown (docs/lifecycle.md).

Set on SIGTERM before the listener closes; readiness reads it, so a probe or a load balancer that still holds an open
connection sees "not ready" while in-flight requests finish.
"""

from __future__ import annotations

__all__ = ["Draining"]


class Draining:
    def __init__(self) -> None:
        self._started = False

    def begin(self) -> None:
        self._started = True

    @property
    def started(self) -> bool:
        return self._started
