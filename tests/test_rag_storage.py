"""server.domain.rag_storage: reservations against the RAG's, the default and the tenant's quota, correct under
concurrent uploads on both databases, and releases."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, update

from server.domain.rag_storage import release_storage, reserve_storage
from server.errors import InvalidArgument, NotFound, QuotaExceeded, wire_error_for
from server.store.db import Database as Db
from server.store.models import RagDeploymentRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.rag_helpers import QUOTAS, RAGS, new_rag
from tests.world import World, must

CONCURRENT = 25
CHUNK = 100
LIMIT = 1000


async def _used(db: Db, rag_id: str) -> int:
    async with db.read() as session:
        return int(await session.scalar(select(RagDeploymentRow.used_bytes).where(RagDeploymentRow.id == rag_id)) or 0)


async def _attempt(db: Db, rag_id: str) -> bool:
    """One upload's reservation in its own transaction, held open a moment (as a real upload would while it writes
    its file rows) so that the reservations genuinely overlap."""
    try:
        async with db.transaction() as session:
            await reserve_storage(session, rag_id=rag_id, nbytes=CHUNK)
            await asyncio.sleep(0.01)
    except QuotaExceeded:
        return False
    return True


async def _race(db: Db, rag_ids: list[str]) -> int:
    results = await asyncio.gather(*(_attempt(db, rag_ids[i % len(rag_ids)]) for i in range(CONCURRENT)))
    return sum(results)


async def test_concurrent_reservations_respect_the_rag_quota(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str, db: Db
) -> None:
    rag = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    body = {"tenantId": world.tenant_id, "id": rag["id"], "quota": str(LIMIT)}
    must(await connect.call(f"{QUOTAS}/SetQuota", body, token=server.admin_token))
    assert await _race(db, [rag["id"]]) == LIMIT // CHUNK
    assert await _used(db, rag["id"]) == LIMIT


async def test_concurrent_reservations_respect_the_tenant_quota(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str, db: Db
) -> None:
    ids = [(await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder))["id"] for _ in range(3)]
    body = {"tenantId": world.tenant_id, "quota": str(LIMIT)}
    must(await connect.call(f"{QUOTAS}/SetTenantQuota", body, token=server.admin_token))
    assert await _race(db, ids) == LIMIT // CHUNK
    assert sum([await _used(db, i) for i in ids]) == LIMIT


async def test_concurrent_reservations_respect_the_default_quota(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str, db: Db
) -> None:
    rag = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    body = {"tenantId": world.tenant_id, "defaultQuota": str(LIMIT)}
    must(await connect.call(f"{QUOTAS}/SetDefaultQuota", body, token=server.admin_token))
    assert await _race(db, [rag["id"]]) == LIMIT // CHUNK
    assert await _used(db, rag["id"]) == LIMIT


async def test_platform_rag_quota_holds_under_concurrency(
    connect: ConnectJsonCaller, server: Server, embedder: str, db: Db
) -> None:
    # Platform-owned RAGs have no tenant lock: the conditional UPDATE alone must hold the line.
    created = must(
        await connect.call(
            f"{RAGS}/CreatePlatformRag",
            {"rag": {"name": "p-race", "embeddingModel": embedder}},
            token=server.admin_token,
        )
    )["rag"]
    async with db.transaction() as session:
        await session.execute(
            update(RagDeploymentRow).where(RagDeploymentRow.id == created["id"]).values(quota_bytes=LIMIT)
        )
    assert await _race(db, [created["id"]]) == LIMIT // CHUNK
    assert await _used(db, created["id"]) == LIMIT


async def test_release_rollback_and_bad_calls(world: World, connect: ConnectJsonCaller, embedder: str, db: Db) -> None:
    rag = (await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder))["id"]
    async with db.transaction() as session:
        await reserve_storage(session, rag_id=rag, nbytes=300)
        await reserve_storage(session, rag_id=rag, nbytes=0)
        await release_storage(session, rag_id=rag, nbytes=100)
    assert await _used(db, rag) == 200
    with pytest.raises(RuntimeError):  # the upload failed after reserving: its transaction gives the bytes back
        async with db.transaction() as session:
            await reserve_storage(session, rag_id=rag, nbytes=50)
            raise RuntimeError("parse failed")
    assert await _used(db, rag) == 200
    async with db.transaction() as session:
        await release_storage(session, rag_id=rag, nbytes=10_000)  # never below zero
        await release_storage(session, rag_id="rag_missing", nbytes=1)  # a deleted RAG has nothing to give back
    assert await _used(db, rag) == 0
    async with db.transaction() as session:
        with pytest.raises(InvalidArgument):
            await reserve_storage(session, rag_id=rag, nbytes=-1)
        with pytest.raises(NotFound):
            await reserve_storage(session, rag_id="rag_missing", nbytes=1)


def test_quota_exceeded_is_resource_exhausted_and_http_429() -> None:
    wire = wire_error_for(QuotaExceeded("over"))
    assert (wire.connect_code.value, wire.http_status) == ("resource_exhausted", 429)
