"""RagService: RAG deployments with settings on the deployment, sharing, the pinned embedding model, rag_url."""

from __future__ import annotations

import asyncio
import math
import secrets
from typing import Any

import psycopg
import pytest
from sqlalchemy import select

from server.domain import rags
from server.errors import FailedPrecondition
from server.invalidation import Topic
from server.store.db import Database as Db
from server.store.models import ResourceRow
from tests.clients import Caller, ConnectJsonCaller
from tests.conftest import Database, Server
from tests.rag_helpers import ALIASES, QUOTAS, RAGS, create_rag, model, new_rag
from tests.serving import until
from tests.world import World, must


async def test_create_fills_defaults_and_rag_url(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str
) -> None:
    created = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    assert created["id"].startswith("rag_") and len(created["id"]) == 20
    assert created["displayName"] == created["name"]
    assert created["tenantId"] == world.tenant_id
    assert created["embeddingModel"] == embedder
    assert "embeddingDimensions" not in created  # pinned only by the first embedding
    assert created["chunking"] == {"chunkSizeTokens": 256, "chunkOverlapTokens": 32}
    assert created["retrieval"] == {"topK": 10, "denseWeight": 3.0, "lexicalWeight": 1.0}
    assert "rerankModel" not in created
    assert created["ragUrl"] == f"http://127.0.0.1:8081/rag/{created['id']}"
    assert created["createTime"] and created["updateTime"]
    assert int(created.get("usedBytes", "0")) == 0
    got = must(await connect.call(f"{RAGS}/GetRag", {"id": created["id"]}, token=world.tokens["editor"], get=True))
    assert got["rag"] == created


async def test_create_with_every_setting(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str
) -> None:
    reranker = (await model(connect, server.admin_token, "TASK_TYPE_RERANK"))["publicModelId"]
    created = await new_rag(
        connect,
        world.tokens["admin"],
        world.tenant_id,
        embedder,
        displayName="Handbook",
        chunking={"chunkSizeTokens": 512, "chunkOverlapTokens": 256},
        rerankModel=reranker,
        retrieval={"topK": 5, "scoreThreshold": 0.25, "denseWeight": 2.5, "lexicalWeight": 0},
        sharing={"shareToAll": True},
    )
    assert created["displayName"] == "Handbook"
    assert created["chunking"] == {"chunkSizeTokens": 512, "chunkOverlapTokens": 256}
    assert created["rerankModel"] == reranker
    assert created["retrieval"] == {"topK": 5, "scoreThreshold": 0.25, "denseWeight": 2.5, "lexicalWeight": 0.0}
    assert created["sharing"] == {"shareToAll": True}
    # Shared with the whole tenant: a Member reads (uses) it.
    must(await connect.call(f"{RAGS}/GetRag", {"id": created["id"]}, token=world.tokens["member"], get=True))


BAD_CREATES = [
    ({"name": "Bad Name"}, "rag.name"),
    ({"name": ""}, "rag.name"),
    ({"embeddingModel": ""}, "rag.embedding_model"),
    ({"embeddingModel": "no/such-model"}, "rag.embedding_model"),
    ({"displayName": "x" * 257}, "rag.display_name"),
    ({"chunking": {"chunkSizeTokens": 15}}, "rag.chunking.chunk_size_tokens"),
    ({"chunking": {"chunkSizeTokens": 8193}}, "rag.chunking.chunk_size_tokens"),
    ({"chunking": {"chunkSizeTokens": 100, "chunkOverlapTokens": 51}}, "rag.chunking.chunk_overlap_tokens"),
    ({"chunking": {"chunkOverlapTokens": -1}}, "rag.chunking.chunk_overlap_tokens"),
    ({"retrieval": {"topK": 0}}, "rag.retrieval.top_k"),
    ({"retrieval": {"topK": 101}}, "rag.retrieval.top_k"),
    ({"retrieval": {"denseWeight": -1}}, "rag.retrieval.dense_weight"),
    ({"retrieval": {"lexicalWeight": 101}}, "rag.retrieval.lexical_weight"),
    ({"retrieval": {"denseWeight": 0, "lexicalWeight": 0}}, "rag.retrieval.dense_weight"),
    ({"retrieval": {"scoreThreshold": "NaN"}}, "rag.retrieval.score_threshold"),
    # /context refuses a threshold outside [0, 1] (fused scores lie there): saved, it failed every call sending none
    ({"retrieval": {"scoreThreshold": 2.0}}, "rag.retrieval.score_threshold"),
    ({"retrieval": {"scoreThreshold": -0.1}}, "rag.retrieval.score_threshold"),
    ({"rerankModel": "no/such-reranker"}, "rag.rerank_model"),
    ({"sharing": {"sharedWith": ["ten_x"]}}, "sharing.shared_with"),
]


@pytest.mark.parametrize("case", BAD_CREATES)
async def test_invalid_create_names_the_field_and_writes_nothing(
    connect: ConnectJsonCaller, world: World, embedder: str, case: tuple[dict[str, Any], str]
) -> None:
    fields, field = case
    name = f"bad-{secrets.token_hex(4)}"
    body = {"name": name, "embeddingModel": embedder, **fields}
    result = await connect.call(
        f"{RAGS}/CreateRag", {"tenantId": world.tenant_id, "rag": body}, token=world.tokens["editor"]
    )
    assert result.code == "invalid_argument", result
    assert field in result.message
    listed = must(await connect.call(f"{RAGS}/ListRags", {}, token=world.tokens["admin"], get=True))
    assert all(r["name"] != name for r in listed.get("rags", []))


async def test_models_must_be_invokable_and_of_the_right_task(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str
) -> None:
    token = world.tokens["editor"]
    private = (await model(connect, server.admin_token, shared=False))["publicModelId"]
    chat = (await model(connect, server.admin_token, "TASK_TYPE_TEXT_GENERATION"))["publicModelId"]
    for bad, message in ((private, "cannot invoke"), (chat, "task type embedding")):
        result = await create_rag(connect, token, world.tenant_id, bad)
        assert result.code == "invalid_argument" and message in result.message, result
    result = await create_rag(connect, token, world.tenant_id, embedder, rerankModel=embedder)
    assert result.code == "invalid_argument" and "rag.rerank_model" in result.message
    # An alias the caller may invoke works like the model it names.
    alias = must(
        await connect.call(
            f"{ALIASES}/CreateModelAlias",
            {
                "alias": {
                    "publicModelId": f"alias/embed-{secrets.token_hex(3)}",
                    "sharing": {"shareToAll": True},
                    "targetRef": {
                        "kind": "MODEL_ALIAS_TARGET_KIND_MODEL_DEPLOYMENT",
                        "name": await _deployment_of(connect, server, embedder),
                    },
                }
            },
            token=server.admin_token,
        )
    )["alias"]
    created = await new_rag(connect, token, world.tenant_id, alias["publicModelId"])
    assert created["embeddingModel"] == alias["publicModelId"]


async def _deployment_of(connect: ConnectJsonCaller, server: Server, public_model_id: str) -> str:
    listed = must(
        await connect.call(
            f"{'platform.modelmanager.v1.ModelDeploymentService'}/ListModelDeployments",
            {},
            token=server.admin_token,
            get=True,
        )
    )
    return next(d["name"] for d in listed["modelDeployments"] if d["publicModelId"] == public_model_id)


async def test_creating_is_a_tenant_capability(connect: ConnectJsonCaller, world: World, embedder: str) -> None:
    for person in ("member", "outsider"):
        result = await create_rag(connect, world.tokens[person], world.tenant_id, embedder)
        assert result.code == "permission_denied", (person, result)
    all_resources = must(
        await connect.call(
            "platform.tenants.v1.ApiKeyService/CreateApiKey",
            {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "all"},
            token=world.tokens["admin"],
        )
    )["secret"]
    result = await create_rag(connect, all_resources, world.tenant_id, embedder)
    # Keys never create resources (server/permissions/credentials.py), whatever their owner may do.
    assert result.code == "permission_denied" and "API keys may not call" in result.message


async def test_names_are_unique_per_owner(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str
) -> None:
    name = f"kb-{secrets.token_hex(4)}"
    await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder, name=name)
    again = await create_rag(connect, world.tokens["admin"], world.tenant_id, embedder, name=name)
    assert again.code == "already_exists" and "rag.name" in again.message
    await new_rag(connect, world.tokens["outsider"], world.other_tenant_id, embedder, name=name)
    platform = {"rag": {"name": name, "embeddingModel": embedder}}
    must(await connect.call(f"{RAGS}/CreatePlatformRag", platform, token=server.admin_token))
    twice = await connect.call(f"{RAGS}/CreatePlatformRag", platform, token=server.admin_token)
    assert twice.code == "already_exists"


async def test_platform_rag_shared_read_only_with_tenants(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str
) -> None:
    body = {
        "rag": {
            "name": f"p-{secrets.token_hex(4)}",
            "embeddingModel": embedder,
            "sharing": {"sharedWith": [world.tenant_id]},
        }
    }
    created = must(await connect.call(f"{RAGS}/CreatePlatformRag", body, token=server.admin_token))["rag"]
    assert created.get("tenantId", "") == ""
    for person in ("member", "admin"):
        must(await connect.call(f"{RAGS}/GetRag", {"id": created["id"]}, token=world.tokens[person], get=True))
        denied = await connect.call(
            f"{RAGS}/UpdateRag", {"rag": {"id": created["id"], "displayName": "x"}}, token=world.tokens[person]
        )
        assert denied.code == "permission_denied"
    hidden = await connect.call(f"{RAGS}/GetRag", {"id": created["id"]}, token=world.tokens["outsider"], get=True)
    assert hidden.code == "not_found"
    assert (
        await connect.call(f"{RAGS}/CreatePlatformRag", body, token=world.tokens["admin"])
    ).code == "permission_denied"


async def test_update_rules(connect: ConnectJsonCaller, server: Server, world: World, embedder: str) -> None:
    token = world.tokens["editor"]
    rag = await new_rag(connect, token, world.tenant_id, embedder, retrieval={"scoreThreshold": 0.5})
    reranker = (await model(connect, server.admin_token, "TASK_TYPE_RERANK"))["publicModelId"]
    change = {
        "id": rag["id"],
        "name": rag["name"],
        "embeddingModel": embedder,  # the same model is not a change
        "displayName": "Renamed",
        "chunking": {"chunkSizeTokens": 400},
        "rerankModel": reranker,
        "retrieval": {"topK": 3, "lexicalWeight": 0.5},
    }
    updated = must(await connect.call(f"{RAGS}/UpdateRag", {"rag": change}, token=token))["rag"]
    assert updated["displayName"] == "Renamed"
    assert updated["chunking"] == {"chunkSizeTokens": 400, "chunkOverlapTokens": 32}
    assert updated["rerankModel"] == reranker
    assert updated["retrieval"] == {"topK": 3, "scoreThreshold": 0.5, "denseWeight": 3.0, "lexicalWeight": 0.5}
    assert updated["updateTime"] > rag["updateTime"] and updated["createTime"] == rag["createTime"]
    cleared = must(
        await connect.call(
            f"{RAGS}/UpdateRag", {"rag": {"id": rag["id"], "rerankModel": ""}, "clearScoreThreshold": True}, token=token
        )
    )["rag"]
    assert "rerankModel" not in cleared and "scoreThreshold" not in cleared["retrieval"]
    assert cleared["displayName"] == "Renamed" and cleared["retrieval"]["topK"] == 3

    other = (await model(connect, server.admin_token))["publicModelId"]
    refused = await connect.call(f"{RAGS}/UpdateRag", {"rag": {"id": rag["id"], "embeddingModel": other}}, token=token)
    assert refused.code == "failed_precondition" and "embedding model" in refused.message
    renamed = await connect.call(f"{RAGS}/UpdateRag", {"rag": {"id": rag["id"], "name": "other"}}, token=token)
    assert renamed.code == "invalid_argument" and "rag.name" in renamed.message
    bad = await connect.call(
        f"{RAGS}/UpdateRag", {"rag": {"id": rag["id"], "chunking": {"chunkOverlapTokens": 300}}}, token=token
    )
    assert bad.code == "invalid_argument" and "chunk_overlap_tokens" in bad.message
    both = await connect.call(
        f"{RAGS}/UpdateRag",
        {"rag": {"id": rag["id"], "retrieval": {"scoreThreshold": 1}}, "clearScoreThreshold": True},
        token=token,
    )
    assert both.code == "invalid_argument"
    over = await connect.call(
        f"{RAGS}/UpdateRag", {"rag": {"id": rag["id"], "retrieval": {"scoreThreshold": 1.5}}}, token=token
    )
    assert over.code == "invalid_argument" and "rag.retrieval.score_threshold" in over.message
    after = must(await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=token, get=True))["rag"]
    assert after["embeddingModel"] == embedder and after["chunking"]["chunkSizeTokens"] == 400


async def test_sharing_permissions_and_key_grants(connect: ConnectJsonCaller, world: World, embedder: str) -> None:
    editor, member = world.tokens["editor"], world.tokens["member"]
    rag = await new_rag(connect, editor, world.tenant_id, embedder)
    assert (await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=member, get=True)).code == "not_found"
    grant = {
        "id": rag["id"],
        "subject": {"type": "SUBJECT_TYPE_USER", "id": world.user_ids["member"]},
        "role": "DEPLOYMENT_ROLE_READER",
    }
    must(await connect.call(f"{RAGS}/AddRagPermission", grant, token=editor))
    listed = must(await connect.call(f"{RAGS}/ListRagPermissions", {"id": rag["id"]}, token=editor, get=True))
    assert listed["permissions"] == [{"subject": grant["subject"], "role": "DEPLOYMENT_ROLE_READER"}]
    must(await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=member, get=True))
    assert (await connect.call(f"{RAGS}/DeleteRag", {"id": rag["id"]}, token=member)).code == "permission_denied"
    # The member's personal key reaches the RAG only with a grant on it.
    key = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "k"}
    plain = must(await connect.call("platform.tenants.v1.ApiKeyService/CreateApiKey", key, token=member))["secret"]
    granted = must(
        await connect.call(
            "platform.tenants.v1.ApiKeyService/CreateApiKey",
            {**key, "grants": [{"kind": "RESOURCE_KIND_RAG", "name": rag["id"]}]},
            token=member,
        )
    )["secret"]
    assert (await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=plain, get=True)).code == "not_found"
    must(await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=granted, get=True))
    ids = [r["id"] for r in must(await connect.call(f"{RAGS}/ListRags", {}, token=granted, get=True)).get("rags", [])]
    assert ids == [rag["id"]]
    must(await connect.call(f"{RAGS}/RemoveRagPermission", grant, token=editor))
    assert (await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=member, get=True)).code == "not_found"


async def test_list_filters_by_tenant_and_access(
    connect: ConnectJsonCaller, server: Server, world: World, embedder: str
) -> None:
    mine = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    theirs = await new_rag(connect, world.tokens["outsider"], world.other_tenant_id, embedder)
    editor_ids = {
        r["id"]
        for r in must(await connect.call(f"{RAGS}/ListRags", {}, token=world.tokens["editor"], get=True))["rags"]
    }
    assert mine["id"] in editor_ids and theirs["id"] not in editor_ids
    everything = must(await connect.call(f"{RAGS}/ListRags", {}, token=server.admin_token, get=True))["rags"]
    assert {mine["id"], theirs["id"]} <= {r["id"] for r in everything}
    only = must(
        await connect.call(f"{RAGS}/ListRags", {"tenantId": world.other_tenant_id}, token=server.admin_token, get=True)
    )["rags"]
    assert {r["tenantId"] for r in only} == {world.other_tenant_id}


async def test_delete_removes_the_rag_and_its_access_record(
    connect: ConnectJsonCaller, world: World, embedder: str, db: Db
) -> None:
    rag = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    must(await connect.call(f"{RAGS}/DeleteRag", {"id": rag["id"]}, token=world.tokens["admin"]))
    gone = await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=world.tokens["admin"], get=True)
    assert gone.code == "not_found"
    async with db.read() as session:
        assert (await session.scalars(select(ResourceRow).where(ResourceRow.name == rag["id"]))).all() == []
    assert (await connect.call(f"{RAGS}/DeleteRag", {"id": rag["id"]}, token=world.tokens["admin"])).code == "not_found"


async def test_vector_size_is_pinned_by_the_first_embedding(
    connect: ConnectJsonCaller, world: World, embedder: str, db: Db
) -> None:
    rag = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    dropped: list[tuple[str, ...]] = []
    db.invalidations.on(Topic.ACCESS, dropped.append)
    async with db.transaction() as session:
        await rags.pin_embedding_dimensions(session, rag_id=rag["id"], dimensions=384)
    assert dropped == [()]  # the RAG's settings changed: the access caches holding them are dropped
    async with db.transaction() as session:
        await rags.pin_embedding_dimensions(session, rag_id=rag["id"], dimensions=384)
    assert dropped == [()]  # every later file's embedding leaves them be (it changed nothing)
    with pytest.raises(FailedPrecondition):
        async with db.transaction() as session:
            await rags.pin_embedding_dimensions(session, rag_id=rag["id"], dimensions=768)
    got = must(await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=world.tokens["editor"], get=True))
    assert got["rag"]["embeddingDimensions"] == 384
    async with db.read() as session:
        loaded = await rags.load(session, rag["id"])
    assert loaded.embedding_dimensions == 384 and not math.isnan(loaded.dense_weight)


async def test_every_client_creates_reads_and_budgets_a_rag(
    caller: Caller, server: Server, world: World, embedder: str
) -> None:
    editor = world.tokens["editor"]
    body = {"rag": {"name": f"c-{secrets.token_hex(4)}", "embeddingModel": embedder}}
    created = await caller.call(f"{RAGS}/CreateRag", body, token=editor, tenant=world.tenant_id)  # tenant from scope
    assert created.ok, created
    rag = created.body["rag"]
    assert rag["tenantId"] == world.tenant_id and rag["id"].startswith("rag_")
    got = await caller.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=editor, get=True)
    assert got.ok and got.body["rag"]["ragUrl"] == f"http://127.0.0.1:8081/rag/{rag['id']}"
    quota = {"tenantId": world.tenant_id, "id": rag["id"], "quota": "1.5Gi"}
    assert (await caller.call(f"{QUOTAS}/SetQuota", quota, token=server.admin_token)).ok
    read = await caller.call(
        f"{QUOTAS}/GetQuota", {"tenantId": world.tenant_id, "id": rag["id"]}, token=server.admin_token, get=True
    )
    assert read.ok and read.body["quota"] == "1.5Gi" and int(read.body["quotaBytes"]) == 3 * 2**29


async def test_concurrent_updates_of_different_settings_both_land(
    connect: ConnectJsonCaller, world: World, embedder: str, database: Database
) -> None:
    """Each UpdateRag read the weights, changed its own, and wrote both back, so of two at once (one of the dense
    weight, one of the lexical) the later undid the earlier: found by probing, on PostgreSQL, where a read does not
    wait for a writer. A third transaction holds the row until both calls are waiting on it."""
    if database.backend != "postgresql":
        pytest.skip("SQLite runs one write transaction at a time")
    rag = await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder)
    token = world.tokens["admin"]
    with (
        psycopg.connect(database.libpq_url) as holder,
        psycopg.connect(database.libpq_url, autocommit=True) as watcher,  # the holder's view of activity is frozen
    ):
        holder.execute("SELECT 1 FROM rag_deployments WHERE id = %s FOR UPDATE", (rag["id"],))
        calls = [
            asyncio.ensure_future(
                connect.call(f"{RAGS}/UpdateRag", {"rag": {"id": rag["id"], "retrieval": change}}, token=token)
            )
            for change in ({"denseWeight": 0.5}, {"lexicalWeight": 0.25})
        ]
        await until(lambda: _waiting_on(watcher, "rag_deployments") == 2)
        holder.commit()
    for call in calls:
        must(await call)
    got = must(await connect.call(f"{RAGS}/GetRag", {"id": rag["id"]}, token=token, get=True))["rag"]
    assert (got["retrieval"]["denseWeight"], got["retrieval"]["lexicalWeight"]) == (0.5, 0.25)


def _waiting_on(connection: psycopg.Connection[Any], table: str) -> int:
    waiting = connection.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' "
        "AND query LIKE %s",
        (f"%{table}%",),
    ).fetchone()
    return int(waiting[0]) if waiting else 0
