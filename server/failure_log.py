"""A background write that fails while what it writes to is down (the database, an OTLP collector) fails on every
pass: the metering flusher twice a second with three attempts each, the gateway's audit writes on every refused key.
Each logged with its stack, a ten-minute database outage filled the logs with hundreds of identical tracebacks a
process, burying what else happened. `RepeatedFailure` logs the first failure of a run with its stack, then at most
one line a minute with the count and the latest exception's type, and says once when the write works again.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable

__all__ = ["RepeatedFailure"]

SUMMARY_SECONDS = 60.0


class RepeatedFailure:
    """`what` names the write in the summary and recovery lines ("writing usage events")."""

    def __init__(
        self,
        log: logging.Logger,
        what: str,
        *,
        every: float = SUMMARY_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = log
        self._what = what
        self._every = every
        self._clock = clock
        self._failures = 0
        self._unreported = 0
        self._next_summary = 0.0

    def failed(self, message: str, *args: object) -> None:
        """Called in the `except` block of the failed attempt; `message` describes it, as for `log.exception`."""
        self._failures += 1
        now = self._clock()
        if self._failures == 1:
            self._log.exception(message, *args)
            self._next_summary = now + self._every
            return
        self._unreported += 1
        if now >= self._next_summary:
            kind = sys.exc_info()[0]
            self._log.error(
                "%s is still failing: %d failures since the first was logged, %d in all, the latest %s",
                self._what,
                self._unreported,
                self._failures,
                kind.__name__ if kind is not None else "unknown",
            )
            self._unreported = 0
            self._next_summary = now + self._every

    def succeeded(self) -> None:
        if self._failures:
            self._log.warning("%s works again after %d failures", self._what, self._failures)
            self._failures = self._unreported = 0
