"""What server.invalidation promises within one process and per transaction, on each backend.

- The writing process drops its own caches once the transaction commits (not before: the rows may yet roll back),
  which on SQLite is the whole story.
- A rolled-back transaction announces nothing to other processes; a committed one does (PostgreSQL).
- A write marked QUIET (a key's last-use bookkeeping) announces nothing.
- A TtlCache load that was under way when its entries were forgotten is handed to its callers but not kept.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable

import pytest
from sqlalchemy import delete, update

from server.errors import NotFound
from server.invalidation import QUIET, Topic
from server.store.db import Database as Db
from server.store.models import ApiKeyRow, McpNetworkPolicyRow
from server.ttlcache import TtlCache
from tests.conftest import Database


def _policy() -> McpNetworkPolicyRow:
    # 10.0.0.0/8 is the range other tests may approve (see tests/test_network_policies.py).
    name = f"inv-{secrets.token_hex(4)}"
    return McpNetworkPolicyRow(name=name, uid=name, resource_version="1", allowed_networks=["10.78.9.0/24"])


async def test_the_writing_process_drops_its_caches_once_the_write_commits(database: Database) -> None:
    db = Db(database.url)
    seen: list[tuple[str, ...]] = []
    db.invalidations.on(Topic.NETWORK_POLICY, seen.append)
    try:
        row = _policy()
        async with db.transaction() as session:
            session.add(row)
            await session.flush()
            assert seen == []  # not yet: the transaction may still roll back
        assert seen == [()]
        async with db.transaction() as session:
            await session.execute(delete(McpNetworkPolicyRow).where(McpNetworkPolicyRow.name == row.name))
        assert seen == [(), ()]
        with pytest.raises(RuntimeError):
            async with db.transaction() as session:
                session.add(_policy())
                await session.flush()
                raise RuntimeError("rolled back")
        assert seen == [(), ()]  # a rolled-back write changed nothing
    finally:
        await db.close()


async def _eventually(condition: Callable[[], bool]) -> None:
    for _ in range(1000):  # 10 s at most
        if condition():
            return
        await asyncio.sleep(0.01)
    pytest.fail("never happened")


async def test_only_committed_writes_reach_other_processes(database: Database) -> None:
    if database.backend != "postgresql":
        pytest.skip("other processes hear of changes through PostgreSQL")
    writer, other = Db(database.url), Db(database.url)
    heard: list[tuple[str, ...]] = []
    other.invalidations.on(Topic.NETWORK_POLICY, heard.append)
    try:
        other.listen_for_invalidations()
        await _eventually(lambda: other.invalidations.listening)
        heard.clear()  # connecting drops everything (anything may have been missed before)
        with pytest.raises(RuntimeError):
            async with writer.transaction() as session:
                session.add(_policy())
                await session.flush()
                raise RuntimeError("rolled back")
        row = _policy()
        async with writer.transaction() as session:
            session.add(row)
        await _eventually(lambda: bool(heard))
        # Notifications arrive in commit order: had the rolled-back one been sent, it would have come first.
        assert heard == [()]
        assert other.invalidations.received == 1
        async with writer.transaction() as session:
            await session.execute(delete(McpNetworkPolicyRow).where(McpNetworkPolicyRow.name == row.name))
    finally:
        await writer.close()
        await other.close()


async def test_a_quiet_write_announces_nothing(database: Database) -> None:
    db = Db(database.url)
    seen: list[tuple[str, ...]] = []
    db.invalidations.on(Topic.KEY, seen.append)
    try:
        bump = update(ApiKeyRow).where(ApiKeyRow.id == "no-such-key").values(name="x")
        async with db.transaction() as session:
            await session.execute(bump.execution_options(**QUIET))
        assert seen == []
        async with db.transaction() as session:
            await session.execute(bump)
        assert seen == [()]  # a statement may touch any key: every key's lookups go
    finally:
        await db.close()


async def test_a_load_under_way_when_forgotten_is_not_kept() -> None:
    cache: TtlCache[str] = TtlCache(60)
    release = asyncio.Event()
    loads = 0

    async def old() -> str:
        nonlocal loads
        loads += 1
        await release.wait()
        return "old"

    async def new() -> str:
        nonlocal loads
        loads += 1
        return "new"

    first = asyncio.create_task(cache.get("k", old))
    await asyncio.sleep(0)
    cache.forget()  # the change committed while the first load was reading
    assert await cache.get("k", new) == "new"  # a fresh load, not a wait on the stale one
    release.set()
    assert await first == "old"  # its caller gets what it asked for
    assert await cache.get("k", new) == "new"  # but the stale answer was not kept over the new one
    assert loads == 2


async def test_forgetting_some_entries_keeps_the_others_and_drops_refusals() -> None:
    cache: TtlCache[str] = TtlCache(60)

    async def value(v: str) -> str:
        return v

    async def refused() -> str:
        raise NotFound("no")

    for key in ("a", "b"):
        await cache.get(key, lambda key=key: value(key))  # type: ignore[misc]
    with pytest.raises(NotFound):
        await cache.get("r", refused)
    cache.forget(lambda key, _: key == "a")
    assert await cache.get("a", lambda: value("a2")) == "a2"
    assert await cache.get("b", lambda: value("b2")) == "b"
    assert await cache.get("r", lambda: value("r2")) == "r2"


async def test_a_limit_policy_write_drops_every_replicas_limiter_policies(database: Database) -> None:
    """The gateway limiter caches each tenant's policies; a policy written anywhere drops them in every process."""
    from gateway.limits.limiter import Limiter
    from server.store.limit_counters import MemoryCounters
    from server.store.models import LimitPolicyRow

    writer = Db(database.url)
    other = writer if database.backend != "postgresql" else Db(database.url)
    limiter = Limiter(other, MemoryCounters(), ttl=60, fail_closed=False)
    loads: list[str] = []

    async def load() -> list[object]:
        loads.append("loaded")
        return []

    try:
        if other is not writer:
            other.listen_for_invalidations()
            await _eventually(lambda: other.invalidations.listening)
        await limiter._policies.get("ten_x", load)  # type: ignore[arg-type]
        await limiter._policies.get("ten_x", load)  # type: ignore[arg-type]
        assert loads == ["loaded"]  # cached
        async with writer.transaction() as session:
            await session.execute(
                update(LimitPolicyRow).where(LimitPolicyRow.tenant_id == "ten_x").values(requests_per_minute=1)
            )

        async def reloaded() -> bool:
            await limiter._policies.get("ten_x", load)  # type: ignore[arg-type]
            return len(loads) == 2

        for _ in range(1000):  # 10 s at most, far below the 60 s TTL
            if await reloaded():
                break
            await asyncio.sleep(0.01)
        assert loads == ["loaded", "loaded"]
    finally:
        await writer.close()
        if other is not writer:
            await other.close()
