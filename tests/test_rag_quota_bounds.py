"""BatchSetQuota with more ids than PostgreSQL takes bind parameters (65,535) answered unavailable ("retry the
request"), which no retry could change (found by probing): ids are bounded before the database."""

from __future__ import annotations

import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.rag_helpers import QUOTAS, model, new_rag
from tests.world import World


@pytest.fixture
async def rag_ids(server: Server, connect: ConnectJsonCaller, world: World) -> list[str]:
    embedder = (await model(connect, server.admin_token))["publicModelId"]
    return [(await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder))["id"] for _ in range(2)]


async def test_batch_set_quota_with_more_ids_than_the_database_binds_is_refused(
    connect: ConnectJsonCaller, server: Server, world: World, rag_ids: list[str]
) -> None:
    ids = rag_ids + [f"rag_{i:016x}" for i in range(70_000)]
    result = await connect.call(
        f"{QUOTAS}/BatchSetQuota", {"tenantId": world.tenant_id, "ids": ids, "quota": "1Gi"}, token=server.admin_token
    )
    assert result.code == "invalid_argument" and "at most 10000" in result.message, result
