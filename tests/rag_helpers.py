"""RAG test helpers: models a RAG can point at, RAGs created through the public API, and RAG rows written straight to
the store for tests and benchmarks of the chunk index alone."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

from sqlalchemy import event

from server.store.db import Database, new_id
from server.store.models import RagDeploymentRow
from server.store.rag_index import ChunkIndex
from server.store.rag_index.numpy_dense import NumpyDense
from server.store.rag_index.postgres import PostgresChunkIndex
from tests.clients import ConnectJsonCaller, Result
from tests.world import must

RAGS = "platform.ragmanager.v1.RagService"
QUOTAS = "platform.ragmanager.v1.RagQuotaService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"


async def model(
    connect: ConnectJsonCaller, admin_token: str, task: str = "TASK_TYPE_EMBEDDING", *, shared: bool = True
) -> dict[str, Any]:
    """A platform model deployment of this task type (never called: RagService only checks it), shared with every
    tenant unless `shared` is false. Returns the deployment (publicModelId, name)."""
    tag = secrets.token_hex(4)
    body = {
        "modelDeployment": {
            "name": f"m-{tag}",
            "publicModelId": f"test/{task.removeprefix('TASK_TYPE_').lower()}-{tag}",
            "endpointUrl": "http://127.0.0.1:9/v1",
            "capabilities": {"taskType": task},
        }
    }
    created = must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=admin_token))
    deployment: dict[str, Any] = created["modelDeployment"]
    if shared:
        must(
            await connect.call(
                f"{DEPLOYMENTS}/UpdateModelDeploymentSharing",
                {"name": deployment["name"], "sharing": {"shareToAll": True}},
                token=admin_token,
            )
        )
    return deployment


async def create_rag(
    connect: ConnectJsonCaller, token: str, tenant_id: str, embedding_model: str, **fields: Any
) -> Result:
    rag = {"name": f"rag-{secrets.token_hex(4)}", "embeddingModel": embedding_model, **fields}
    return await connect.call(f"{RAGS}/CreateRag", {"tenantId": tenant_id, "rag": rag}, token=token)


async def new_rag(
    connect: ConnectJsonCaller, token: str, tenant_id: str, embedding_model: str, **fields: Any
) -> dict[str, Any]:
    rag: dict[str, Any] = must(await create_rag(connect, token, tenant_id, embedding_model, **fields))["rag"]
    return rag


async def stored_rag(store: Database, rag_id: str | None = None) -> str:
    """A RAG's row alone (no model, tenant or quota behind it), enough for the chunk index to file chunks under: its
    id (`rag_id`, or a new one)."""
    rag_id = rag_id or new_id("rag")
    async with store.transaction() as session:
        session.add(
            RagDeploymentRow(
                id=rag_id,
                name=rag_id.replace("_", "-"),
                embedding_model="e5",
                chunk_size_tokens=256,
                chunk_overlap_tokens=0,
                top_k=10,
            )
        )
    return rag_id


def engine_matrices(index: ChunkIndex) -> NumpyDense:
    """The engine's in-process matrices: SQLite's, PostgreSQL's without pgvector, or pgvector's small RAGs'."""
    if isinstance(index, PostgresChunkIndex):
        return index._memory if index.pgvector else index._numpy
    return cast(NumpyDense, vars(index)["_dense"])


@contextmanager
def statements_run(store: Database) -> Iterator[list[tuple[str, Any]]]:
    """The SQL statements (with their parameters) the store runs inside the block, in order."""
    run: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_args: Any) -> None:
        run.append((statement, parameters))

    event.listen(store.engine.sync_engine, "before_cursor_execute", record)
    try:
        yield run
    finally:
        event.remove(store.engine.sync_engine, "before_cursor_execute", record)
