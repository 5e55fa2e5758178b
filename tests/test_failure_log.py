"""A background write failing over and over (server.failure_log): its first failure is logged with its stack, then
a line a minute with the count, and its recovery once; a real retention loop against a database that is down and
comes back."""

from __future__ import annotations

import asyncio
import logging
import re
from pathlib import Path

import pytest

from server.audit.retention import Retention
from server.failure_log import RepeatedFailure
from server.store.db import Database
from server.store.migrate import upgrade

log = logging.getLogger("switchboard.test")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _fail(failures: RepeatedFailure, error: Exception) -> None:
    try:
        raise error
    except Exception:
        failures.failed("writing %d things failed", 3)


def _lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, bool]]:
    """(message, has a stack) of each record so far, then forgets them."""
    lines = [(r.getMessage(), r.exc_info is not None) for r in caplog.records]
    caplog.clear()
    return lines


def test_one_stack_then_a_line_a_minute_then_the_recovery(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    failures = RepeatedFailure(log, "writing things", every=60.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="switchboard.test"):
        _fail(failures, ConnectionRefusedError("refused"))
        assert _lines(caplog) == [("writing 3 things failed", True)]

        for _ in range(9):  # the rest of the minute: counted, not logged
            clock.now += 5
            _fail(failures, ConnectionRefusedError("refused"))
        assert _lines(caplog) == []

        clock.now += 20  # a minute after the first
        _fail(failures, TimeoutError("slow"))
        assert _lines(caplog) == [
            (
                "writing things is still failing: 10 failures since the first was logged, 11 in all, the latest "
                "TimeoutError",
                False,
            )
        ]
        clock.now += 30
        _fail(failures, TimeoutError("slow"))
        assert _lines(caplog) == []

        failures.succeeded()
        failures.succeeded()  # nothing to say twice
        assert _lines(caplog) == [("writing things works again after 12 failures", False)]

        _fail(failures, ConnectionRefusedError("refused"))  # a new outage: its first failure has its stack again
        assert _lines(caplog) == [("writing 3 things failed", True)]


async def _until(found: object, seconds: float = 20.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not found():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.05)


async def test_retention_against_a_database_that_is_down_logs_one_stack_and_its_recovery(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The database file's directory is missing until the migrated one is moved into place: every connection is
    # refused until then, as while a database server is down.
    ready, live = tmp_path / "ready", tmp_path / "live"
    ready.mkdir()
    upgrade(f"sqlite+aiosqlite:///{ready / 'switchboard.db'}")
    db = Database(f"sqlite+aiosqlite:///{live / 'switchboard.db'}")
    retention = Retention(db, days=1e-5)  # a pass every 0.09 s
    records = caplog.records
    try:
        with caplog.at_level(logging.INFO, logger="switchboard.audit"):
            retention.start()
            await _until(lambda: records)
            await asyncio.sleep(0.5)  # several more passes, all refused
            assert [(r.getMessage(), r.exc_info is not None) for r in records] == [
                ("pruning audit events failed; retried at the next pass", True)
            ]
            ready.rename(live)
            await _until(lambda: len(records) > 1)
        recovered = re.fullmatch(r"pruning audit events works again after (\d+) failures", records[1].getMessage())
        assert recovered is not None and int(recovered[1]) > 2, records[1].getMessage()
        assert len(records) == 2
    finally:
        await retention.close()
        await db.close()
