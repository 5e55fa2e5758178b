"""server.waiting.until: a wait bounded by its deadline, however long each attempt takes."""

from __future__ import annotations

import pytest

from server import waiting


class _Attempts:
    def __init__(self, ready_at: int | None = None, fail_at: int | None = None) -> None:
        self.count, self._ready_at, self._fail_at = 0, ready_at, fail_at

    async def __call__(self) -> bool:
        self.count += 1
        if self.count == self._fail_at:
            raise RuntimeError("the process waited for died")
        return self.count == self._ready_at


async def test_it_asks_until_ready() -> None:
    attempts = _Attempts(ready_at=3)
    assert await waiting.until(attempts, 60, every=0)
    assert attempts.count == 3


async def test_a_spent_deadline_ends_the_wait_after_the_attempt_under_way() -> None:
    attempts = _Attempts()
    assert not await waiting.until(attempts, 0, every=0)
    assert attempts.count == 1  # asked once, however many attempts a count-based wait would have made


async def test_an_attempt_that_raises_ends_the_wait() -> None:
    attempts = _Attempts(fail_at=2)
    with pytest.raises(RuntimeError, match="died"):
        await waiting.until(attempts, 60, every=0)
    assert attempts.count == 2
