"""RAG deployments: a document store with its own URL, its settings stored on the deployment.

Rules
- Owner: a tenant (CreateRag: the tenant's create-RAG capability, held by Editors and Admins — so never by Members,
  service accounts or Personal (all resources) keys) or the platform (CreatePlatformRag: can_manage_tenants at
  platform scope). Access follows the one permission model (server.permissions, kind RAG, resource name = the RAG's
  id): creator and tenant admins manage it; Sharing, permissions to users/groups/service accounts/keys and API-key
  grants give read (= use) access.
- `id` is assigned by the server (`rag_<hex>`); `name` is a handle, a DNS label unique per owner; both immutable.
- The embedding model is a publicModelId of task type embedding the creator can invoke; the optional rerank model
  one of task type rerank the writer can invoke. The embedding model never changes once the RAG exists (the spec's
  "changing the embedding model of an existing RAG is rejected"): we refuse it always, not only once content is
  embedded, so a RAG's vectors never depend on when the change was tried. The vector size is pinned by the first
  embedding (`pin_embedding_dimensions`) and a different size is refused from then on. An alias named as the
  embedding model is resolved once, at creation: the RAG keeps its target then (`embedding_target`, pinned) and
  does not follow the alias when it is repointed, which would mix two models' vectors in one index whenever the new
  target's vectors have the same size. The alias goes on deciding whether the RAG may use the model (its sharing).
- Chunking and retrieval defaults may change; chunking changes apply to files uploaded afterwards.
- Deleting a RAG deletes its content: content tables reference rag_deployments.id with ON DELETE CASCADE, and the
  row is removed with one DELETE statement so both databases cascade.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import delete as sql_delete
from sqlalchemy import func, select
from sqlalchemy import update as sql_update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain import resource_pins
from server.domain.model_lookup import TaskType, require_invokable_model
from server.domain.principal import Principal
from server.domain.validation import require_name, require_nonempty, validate_resource_name
from server.errors import FailedPrecondition, InvalidArgument, NotFound
from server.permissions import Capability, ResourceKind, ResourceRef, Sharing
from server.store.db import integrity_as, new_id, transaction_memo
from server.store.keyset import Window
from server.store.models import RagDeploymentRow, utcnow
from server.store.rag_index import ChunkIndex

__all__ = [
    "DEFAULT_CHUNK_OVERLAP_TOKENS",
    "DEFAULT_CHUNK_SIZE_TOKENS",
    "DEFAULT_TOP_K",
    "KIND",
    "Rag",
    "RagSpec",
    "create",
    "delete",
    "get",
    "list_readable",
    "load",
    "pin_embedding_dimensions",
    "rag_url",
    "require_create",
    "update",
]

KIND = ResourceKind.RAG
PLATFORM_ROLE = "can_manage_tenants"
DEFAULT_CHUNK_SIZE_TOKENS = 256  # fits the 256/512-token windows of the small embedding models (research/rag.md)
DEFAULT_CHUNK_OVERLAP_TOKENS = 32
DEFAULT_TOP_K = 10
# Dense 3 : lexical 1 — the default hybrid that did not fall below dense-only on BEIR DBpedia (rag_index/search.py).
DEFAULT_DENSE_WEIGHT = 3.0
DEFAULT_LEXICAL_WEIGHT = 1.0
_CHUNK_SIZE = (16, 8192)
_TOP_K = (1, 100)
_WEIGHT_MAX = 100.0


@dataclass(frozen=True)
class RagSpec:
    """A create or update request. None means "not given": the default on create, unchanged on update."""

    id: str = ""
    name: str = ""
    display_name: str = ""
    embedding_model: str = ""
    chunk_size_tokens: int | None = None
    chunk_overlap_tokens: int | None = None
    rerank_model: str | None = None  # "" removes it on update
    top_k: int | None = None
    score_threshold: float | None = None
    clear_score_threshold: bool = False
    dense_weight: float | None = None
    lexical_weight: float | None = None
    sharing: Sharing | None = None


@dataclass(frozen=True)
class Rag:
    id: str
    name: str
    display_name: str
    tenant_id: str | None
    sharing: Sharing
    embedding_model: str
    embedding_dimensions: int | None
    chunk_size_tokens: int
    chunk_overlap_tokens: int
    rerank_model: str | None
    top_k: int
    score_threshold: float | None
    dense_weight: float
    lexical_weight: float
    creator: str
    created_at: datetime
    updated_at: datetime
    used_bytes: int
    pins: resource_pins.Pins = field(default_factory=dict)  # its models' uids (server.domain.resource_pins)
    embedding_target: ResourceRef | None = None  # the model its vectors come from (None: unknown, see the row)


def rag_url(public_base_url: str, rag_id: str) -> str:
    """The deployment-specific address of a RAG ({rag_url}): the gateway's public base URL + /rag/{id}."""
    return f"{public_base_url.rstrip('/')}/rag/{rag_id}"


def _ref(rag_id: str) -> ResourceRef:
    return ResourceRef(KIND, rag_id)


def _build(row: RagDeploymentRow, sharing: Sharing) -> Rag:
    weights = row.weights or {}
    return Rag(
        id=row.id,
        name=row.name,
        display_name=row.display_name,
        tenant_id=row.tenant_id,
        sharing=sharing,
        embedding_model=row.embedding_model,
        embedding_dimensions=row.embedding_dimensions,
        chunk_size_tokens=row.chunk_size_tokens,
        chunk_overlap_tokens=row.chunk_overlap_tokens,
        rerank_model=row.rerank_model,
        top_k=row.top_k,
        score_threshold=row.score_threshold,
        dense_weight=float(weights.get("dense", DEFAULT_DENSE_WEIGHT)),
        lexical_weight=float(weights.get("lexical", DEFAULT_LEXICAL_WEIGHT)),
        creator=row.creator,
        pins=dict(row.pins or {}),
        embedding_target=_embedding_target(row),
        created_at=row.created_at,
        updated_at=row.updated_at,
        used_bytes=row.used_bytes,
    )


def _embedding_target(row: RagDeploymentRow) -> ResourceRef | None:
    if row.embedding_target_kind is None or row.embedding_target_name is None:
        return None
    return ResourceRef(ResourceKind(row.embedding_target_kind), row.embedding_target_name)


def _in_range(value: int, bounds: tuple[int, int], field: str) -> int:
    low, high = bounds
    if not low <= value <= high:
        raise InvalidArgument(f"{field} must be between {low} and {high}", field=field)
    return value


def _chunking(size: int, overlap: int) -> tuple[int, int]:
    _in_range(size, _CHUNK_SIZE, "rag.chunking.chunk_size_tokens")
    if not 0 <= overlap <= size // 2:
        raise InvalidArgument(
            "rag.chunking.chunk_overlap_tokens must be between 0 and half of chunk_size_tokens",
            field="rag.chunking.chunk_overlap_tokens",
        )
    return size, overlap


def _weight(value: float, field: str) -> float:
    if not math.isfinite(value) or not 0 <= value <= _WEIGHT_MAX:
        raise InvalidArgument(f"{field} must be between 0 and {_WEIGHT_MAX:g}", field=field)
    return value


def _weights(dense: float, lexical: float) -> dict[str, float]:
    _weight(dense, "rag.retrieval.dense_weight")
    _weight(lexical, "rag.retrieval.lexical_weight")
    if dense == 0 and lexical == 0:
        raise InvalidArgument(
            "rag.retrieval.dense_weight and lexical_weight cannot both be 0", field="rag.retrieval.dense_weight"
        )
    return {"dense": dense, "lexical": lexical}


def _threshold(value: float) -> float:
    # Fused scores lie in [0, 1] (server.store.rag_index), and /context refuses a threshold outside it: a RAG saved with
    # one would answer every /context call that sends none with a 400 on a field its caller never sent.
    if not (math.isfinite(value) and 0 <= value <= 1):
        raise InvalidArgument(
            "rag.retrieval.score_threshold must be a number from 0 to 1", field="rag.retrieval.score_threshold"
        )
    return value


async def _rerank(session: AsyncSession, principal: Principal, row: RagDeploymentRow, value: str | None) -> None:
    """Set the rerank model, pinned beside the embedding model (an earlier rerank model's pin is left: a pin is only
    asked about the model a RAG names now)."""
    if not value:
        row.rerank_model = None
        return
    target = await require_invokable_model(
        session, principal, value, task=TaskType.RERANK, field="rag.rerank_model", owner=row.tenant_id
    )
    row.rerank_model = value
    row.pins = {**(row.pins or {}), **await resource_pins.pins_of(session, [target.invoked_ref])}


async def require_create(session: AsyncSession, principal: Principal, tenant_id: str | None) -> str | None:
    """The create gate: platform scope needs can_manage_tenants; a tenant needs its create-RAG capability."""
    if tenant_id is None:
        permissions.require_platform_scope(principal, PLATFORM_ROLE)
        return None
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_capability(session, principal, tenant_id, Capability.CREATE_RAG)
    return tenant_id


async def create(session: AsyncSession, principal: Principal, spec: RagSpec, *, tenant_id: str | None) -> Rag:
    """`tenant_id` None creates a platform-owned RAG; "" means the tenant the caller is scoped to."""
    owner = await require_create(session, principal, tenant_id)
    name = validate_resource_name(spec.name, "rag.name")
    display_name = require_name(spec.display_name, "rag.display_name", max_len=256) if spec.display_name else name
    require_nonempty(spec.embedding_model, "rag.embedding_model")
    embedding = await require_invokable_model(
        session, principal, spec.embedding_model, task=TaskType.EMBEDDING, field="rag.embedding_model", owner=owner
    )
    size, overlap = _chunking(
        spec.chunk_size_tokens if spec.chunk_size_tokens is not None else DEFAULT_CHUNK_SIZE_TOKENS,
        spec.chunk_overlap_tokens if spec.chunk_overlap_tokens is not None else DEFAULT_CHUNK_OVERLAP_TOKENS,
    )
    row = RagDeploymentRow(
        id=new_id("rag"),
        tenant_id=owner,
        name=name,
        display_name=display_name,
        embedding_model=spec.embedding_model,
        chunk_size_tokens=size,
        chunk_overlap_tokens=overlap,
        pins=await resource_pins.pins_of(session, [embedding.invoked_ref, embedding.direct_ref]),
        embedding_target_kind=int(embedding.direct_ref.kind),
        embedding_target_name=embedding.direct_ref.name,
        top_k=_in_range(spec.top_k if spec.top_k is not None else DEFAULT_TOP_K, _TOP_K, "rag.retrieval.top_k"),
        score_threshold=_threshold(spec.score_threshold) if spec.score_threshold is not None else None,
        weights=_weights(
            spec.dense_weight if spec.dense_weight is not None else DEFAULT_DENSE_WEIGHT,
            spec.lexical_weight if spec.lexical_weight is not None else DEFAULT_LEXICAL_WEIGHT,
        ),
        creator=principal.subject_id,
        used_bytes=0,
    )
    await _rerank(session, principal, row, spec.rerank_model)
    await permissions.create_resource(
        session, principal, _ref(row.id), tenant_id=owner, sharing=spec.sharing or Sharing()
    )
    session.add(row)
    with integrity_as(f"rag.name {name!r} is already used by another RAG of this owner", field="rag.name"):
        await session.flush()
    return _build(row, (await permissions.ownership(session, _ref(row.id), principal)).sharing)


async def load(session: AsyncSession, rag_id: str) -> Rag:
    """A RAG's settings with no permission check, for code that has already authorised the caller (the gateway's
    RAG surfaces). NotFound when it does not exist."""
    row = await _row(session, rag_id)
    return _build(row, (await permissions.ownership(session, _ref(rag_id), None)).sharing)


async def _row(session: AsyncSession, rag_id: str, *, for_update: bool = False) -> RagDeploymentRow:
    """`for_update`: locked until the transaction ends (PostgreSQL), so that a concurrent update reads what this one
    writes rather than overwriting it with what it read before."""
    row = await session.get(RagDeploymentRow, rag_id, with_for_update=for_update)
    if row is None:
        raise NotFound(f"RAG {rag_id!r} not found", field="id")
    return row


async def get(session: AsyncSession, principal: Principal, rag_id: str) -> Rag:
    owner = await permissions.require_read(session, principal, _ref(rag_id))
    return _build(await _row(session, rag_id), owner.sharing)


async def update(session: AsyncSession, principal: Principal, spec: RagSpec) -> Rag:
    """See the module rules: name and embedding model are fixed; omitted settings are unchanged."""
    rag_id = require_nonempty(spec.id, "rag.id")
    await permissions.require_admin(session, principal, _ref(rag_id))
    row = await _row(session, rag_id, for_update=True)
    if spec.name and spec.name != row.name:
        raise InvalidArgument("rag.name is immutable", field="rag.name")
    if spec.embedding_model and spec.embedding_model != row.embedding_model:
        raise FailedPrecondition(
            "the embedding model of an existing RAG cannot change (its vectors are tied to it); create a new RAG",
            field="rag.embedding_model",
        )
    if spec.display_name:
        row.display_name = require_name(spec.display_name, "rag.display_name", max_len=256)
    row.chunk_size_tokens, row.chunk_overlap_tokens = _chunking(
        spec.chunk_size_tokens if spec.chunk_size_tokens is not None else row.chunk_size_tokens,
        spec.chunk_overlap_tokens if spec.chunk_overlap_tokens is not None else row.chunk_overlap_tokens,
    )
    if spec.rerank_model is not None and spec.rerank_model != row.rerank_model:
        await _rerank(session, principal, row, spec.rerank_model)
    if spec.top_k is not None:
        row.top_k = _in_range(spec.top_k, _TOP_K, "rag.retrieval.top_k")
    if spec.clear_score_threshold and spec.score_threshold is not None:
        raise InvalidArgument(
            "give rag.retrieval.score_threshold or clear_score_threshold, not both", field="clear_score_threshold"
        )
    if spec.clear_score_threshold:
        row.score_threshold = None
    elif spec.score_threshold is not None:
        row.score_threshold = _threshold(spec.score_threshold)
    current = row.weights or {}
    dense = current.get("dense", DEFAULT_DENSE_WEIGHT)
    lexical = current.get("lexical", DEFAULT_LEXICAL_WEIGHT)
    row.weights = _weights(
        spec.dense_weight if spec.dense_weight is not None else float(dense),
        spec.lexical_weight if spec.lexical_weight is not None else float(lexical),
    )
    row.updated_at = utcnow()
    if spec.sharing is not None:
        await permissions.set_sharing(session, principal, _ref(rag_id), spec.sharing)
    await session.flush()
    return _build(row, (await permissions.ownership(session, _ref(rag_id), principal)).sharing)


async def delete(session: AsyncSession, principal: Principal, index: ChunkIndex, rag_id: str) -> None:
    """Delete the RAG, its content (ON DELETE CASCADE from the content tables), what the chunk index keeps for it
    beside the rows, and its access record."""
    await permissions.require_admin(session, principal, _ref(rag_id))
    row = await _row(session, rag_id)
    await index.drop_rag(session, rag_id=rag_id)
    await session.execute(sql_delete(RagDeploymentRow).where(RagDeploymentRow.id == rag_id))
    session.expunge(row)  # deleted by the statement above, not by the unit of work
    await permissions.delete_resource(session, _ref(rag_id))


async def drop_tenant_indexes(session: AsyncSession, index: ChunkIndex, tenant_id: str) -> None:
    """What the chunk index keeps for a tenant's RAGs beside their rows (SQLite: a full-text table of the documents'
    text), before the tenant and, by foreign key, its RAGs go."""
    owned = await session.scalars(select(RagDeploymentRow.id).where(RagDeploymentRow.tenant_id == tenant_id))
    for rag_id in list(owned):
        await index.drop_rag(session, rag_id=rag_id)


LIST_ORDER = (func.coalesce(RagDeploymentRow.tenant_id, ""), RagDeploymentRow.name, RagDeploymentRow.id)


async def list_readable(
    session: AsyncSession, principal: Principal, *, tenant_id: str = "", window: Window | None = None
) -> list[Rag]:
    """Every RAG the caller can read (optionally only those owned by `tenant_id`, a tenant the caller acts in), by
    owner (the platform's first) then name (a window: one keyset page of them, on LIST_ORDER)."""
    if tenant_id:
        await permissions.require_listed_tenant(session, principal, tenant_id)
    names = await permissions.readable_names(session, principal, KIND)
    if not names:
        return []
    query = select(RagDeploymentRow).where(RagDeploymentRow.id.in_(names)).order_by(*LIST_ORDER)
    if tenant_id:
        query = query.where(RagDeploymentRow.tenant_id == tenant_id)
    if window is not None:
        query = window.apply(
            query, *LIST_ORDER, searched=(RagDeploymentRow.name, RagDeploymentRow.display_name, RagDeploymentRow.id)
        )
    rows = (await session.scalars(query)).all()
    owners = await permissions.ownerships(session, KIND, [r.id for r in rows], principal)
    return [_build(row, owners[row.id].sharing) for row in rows]


_PINNED = select(RagDeploymentRow.embedding_dimensions)


async def pin_embedding_dimensions(session: AsyncSession, *, rag_id: str, dimensions: int) -> None:
    """Pin the RAG's vector size at its first embedding; afterwards only the same size is accepted.

    One conditional UPDATE (when nothing is pinned yet), so two first embeddings racing cannot pin two sizes. A
    different size (the model behind the publicModelId changed) is refused with failed_precondition before anything
    is stored.
    """
    if dimensions <= 0:
        raise InvalidArgument("embedding dimensions must be positive", field="embedding_dimensions")
    known = transaction_memo(session, "rag_pinned_dimensions")  # pinned once, a size never changes
    pinned = known.get(rag_id) or await session.scalar(_PINNED.where(RagDeploymentRow.id == rag_id))
    if pinned is None:
        # Only the first embedding writes: an UPDATE of the RAG's row drops every process's access caches (RAG
        # settings are in them, server.invalidation), which once per stored file emptied them all during an ingest.
        await session.execute(
            sql_update(RagDeploymentRow)
            .where(RagDeploymentRow.id == rag_id, RagDeploymentRow.embedding_dimensions.is_(None))
            .values(embedding_dimensions=dimensions)
            .execution_options(synchronize_session=False)
        )
        pinned = await session.scalar(_PINNED.where(RagDeploymentRow.id == rag_id))
    if pinned is None:
        raise NotFound(f"RAG {rag_id!r} not found", field="id")
    known[rag_id] = pinned
    if pinned != dimensions:
        raise FailedPrecondition(
            f"the embedding model returned {dimensions}-dimensional vectors but this RAG is pinned to {pinned}",
            field="embedding_dimensions",
        )
