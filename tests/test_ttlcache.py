"""The shared single-flight TTL cache behind key verification and the gateway's routing decisions."""

from __future__ import annotations

import asyncio

import pytest

from server.errors import NotFound
from server.ttlcache import TtlCache


async def test_concurrent_misses_load_once() -> None:
    cache: TtlCache[str] = TtlCache(60)
    loads = 0

    async def load() -> str:
        nonlocal loads
        loads += 1
        await asyncio.sleep(0.05)
        return "answer"

    results = await asyncio.gather(*(cache.get("k", load) for _ in range(32)))
    assert results == ["answer"] * 32
    assert loads == 1


async def test_refusals_are_cached_and_raised_to_every_caller() -> None:
    cache: TtlCache[str] = TtlCache(60)
    loads = 0

    async def load() -> str:
        nonlocal loads
        loads += 1
        raise NotFound("no such thing", field="model")

    for _ in range(3):
        with pytest.raises(NotFound):
            await cache.get("k", load)
    assert loads == 1


async def test_unexpected_failures_are_not_cached() -> None:
    cache: TtlCache[str] = TtlCache(60)
    outcomes = iter([RuntimeError("database went away"), "answer"])

    async def load() -> str:
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    with pytest.raises(RuntimeError):
        await cache.get("k", load)
    assert await cache.get("k", load) == "answer"


async def test_entries_expire_after_ttl() -> None:
    cache: TtlCache[int] = TtlCache(0.05)
    loads = 0

    async def load() -> int:
        nonlocal loads
        loads += 1
        return loads

    assert await cache.get("k", load) == 1
    assert await cache.get("k", load) == 1
    await asyncio.sleep(0.06)
    assert await cache.get("k", load) == 2


async def test_a_cancelled_load_caches_nothing() -> None:
    cache: TtlCache[str] = TtlCache(60)
    release = asyncio.Event()

    async def slow() -> str:
        await release.wait()
        return "never"

    task = asyncio.ensure_future(cache.get("k", slow))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    async def fast() -> str:
        return "fresh"

    assert await cache.get("k", fast) == "fresh"


async def test_fresh_answers_only_a_fresh_answer_and_leaves_the_rest_to_get() -> None:
    cache: TtlCache[str] = TtlCache(60)
    assert cache.fresh("k") is None  # missing

    async def answer() -> str:
        return "answer"

    await cache.get("k", answer)
    assert cache.fresh("k") == "answer"

    async def refuse() -> str:
        raise NotFound("no such thing", field="model")

    with pytest.raises(NotFound):
        await cache.get("refused", refuse)
    assert cache.fresh("refused") is None  # a cached refusal is get's to raise

    stale: TtlCache[str] = TtlCache(0)  # every answer is stale as soon as it is kept
    await stale.get("k", answer)
    assert stale.fresh("k") is None
