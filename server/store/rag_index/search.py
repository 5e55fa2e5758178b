"""Hybrid retrieval: dense and lexical candidates fused by a weighted sum of min-max normalised scores.

Each list's scores are rescaled to [0, 1] over its own candidates (best 1, worst 0); fused(chunk) =
Σ weight_i · normalised_i / Σ weight_i, a chunk missing from a list adding 0 for it. So `score` lies in [0, 1], is 1
only for a chunk first in every active list, and a `score_threshold` means the same thing whatever the weights. A
weight of 0 switches that list off (dense-only or lexical-only retrieval).

Why not reciprocal rank fusion: RRF throws the scores away, so a lexical list whose top hits are barely better than
its tail pulls a confident dense ranking down as much as a confident one would. Measured on BEIR DBpedia with e5
(bench/rag.py, same run): RRF 1:1 0.433, RRF 2:1 0.451 against dense-only 0.495; the normalised-score fusion at the
default 3:1 weights, over a pool of 30 candidates per list, is the one that did not fall below dense-only. Deeper
pools add weak lexical candidates whose normalised scores still crowd the dense ones, hence the modest pool.

Its gain there is within noise (paired bootstrap over the 40 queries: +0.005 [-0.009, +0.019]; +0.0097 [-0.004,
+0.024] with the whole 5,000-passage corpus), and so was every alternative tried (z-score or max normalisation,
distribution-based fusion, CombMNZ, RRF k=60, pools of 30-200, lexical hits weighted by their share of the query's
terms, weights switched by the query's form or by its lists' confidence, feedback, score regularisation over the
candidates' neighbourhoods, with the settings picked on half of the queries and scored on the other half):
docs/benchmarks.md, "RAG". Until a variant wins beyond noise on held-out queries the fusion stays as it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.models import RagChunkRow
from server.store.rag_index.base import Candidate, ChunkIndex

__all__ = ["ChunkHit", "SearchWeights", "fuse", "lexical_list", "search"]

POOL = 30  # candidates per list (at least top_k); see the module docstring


@dataclass(frozen=True)
class SearchWeights:
    dense: float = 1.0
    lexical: float = 1.0

    def __post_init__(self) -> None:
        if self.dense < 0 or self.lexical < 0 or self.dense + self.lexical <= 0:
            raise ValueError("weights must be non-negative and not both zero")


@dataclass(frozen=True)
class ChunkHit:
    chunk_id: int
    file_id: str
    ordinal: int
    text: str
    score: float
    dense_similarity: float | None
    lexical_score: float | None


def fuse(dense: Sequence[Candidate], lexical: Sequence[Candidate], weights: SearchWeights) -> list[tuple[int, float]]:
    """(chunk id, fused score in [0, 1]), best first; ties keep dense order, then lexical order."""
    fused: dict[int, float] = {}
    total = weights.dense + weights.lexical
    for candidates, weight in ((dense, weights.dense), (lexical, weights.lexical)):
        if weight <= 0 or not candidates:
            continue
        scores = [c.score for c in candidates]
        high, low = max(scores), min(scores)
        for candidate in candidates:
            normalised = (candidate.score - low) / (high - low) if high > low else 1.0
            fused[candidate.chunk_id] = fused.get(candidate.chunk_id, 0.0) + weight * normalised / total
    return sorted(fused.items(), key=lambda item: -item[1])


async def lexical_list(
    index: ChunkIndex,
    session: AsyncSession,
    *,
    rag_id: str,
    query: str,
    top_k: int,
    file_ids: Sequence[str] | None = None,
    weights: SearchWeights = SearchWeights(),
) -> list[Candidate]:
    """The lexical candidates `search` would read, read on their own: they need no query vector, so a caller can
    read them while the query is being embedded and hand them to `search` (`lexical`)."""
    if weights.lexical <= 0:
        return []
    return await index.lexical(
        session, rag_id=rag_id, query=query, limit=_pool(top_k), file_ids=file_ids, with_dense=weights.dense > 0
    )


async def search(
    index: ChunkIndex,
    session: AsyncSession,
    *,
    rag_id: str,
    query: str,
    vector: Sequence[float] | None,
    top_k: int,
    file_ids: Sequence[str] | None = None,
    weights: SearchWeights = SearchWeights(),
    score_threshold: float | None = None,
    lexical: Sequence[Candidate] | None = None,
) -> list[ChunkHit]:
    """`file_ids` (from the metadata filter) restricts both searches; None means the whole RAG. `lexical`, when
    given, is the lexical list `lexical_list` read for the same arguments: only the dense one is read here."""
    query_vector = np.asarray(vector, dtype=np.float32) if weights.dense > 0 and vector is not None else None
    dense, found = await index.candidates(
        session,
        rag_id=rag_id,
        query=query,
        vector=query_vector,
        lexical=weights.lexical > 0 and lexical is None,
        limit=_pool(top_k),
        file_ids=file_ids,
    )
    if lexical is not None:
        found = list(lexical)
    ranked = [(c, s) for c, s in fuse(dense, found, weights) if score_threshold is None or s >= score_threshold]
    ranked = ranked[:top_k]
    if not ranked:
        return []
    rows = await _chunk_rows(session, [chunk_id for chunk_id, _ in ranked])
    similarity = {c.chunk_id: c.score for c in dense}
    lexical_scores = {c.chunk_id: c.score for c in found}
    return [
        ChunkHit(
            chunk_id=chunk_id,
            file_id=rows[chunk_id]["file_id"],
            ordinal=rows[chunk_id]["ordinal"],
            text=rows[chunk_id]["text"],
            score=score,
            dense_similarity=similarity.get(chunk_id),
            lexical_score=lexical_scores.get(chunk_id),
        )
        for chunk_id, score in ranked
        if chunk_id in rows  # a chunk deleted between the searches and this read is simply gone
    ]


def _pool(top_k: int) -> int:
    return max(POOL, top_k)


# Every search reads its hits' rows: built once, on the table (a Core statement skips the ORM's per-execution
# setup), since building and running the statement cost the gateway more Python than SQLite spent answering it.
_CHUNKS = RagChunkRow.__table__.c
_CHUNK_ROWS = select(_CHUNKS.id, _CHUNKS.file_id, _CHUNKS.ordinal, _CHUNKS.text).where(
    _CHUNKS.id.in_(bindparam("ids", expanding=True))
)


async def _chunk_rows(session: AsyncSession, ids: list[int]) -> dict[int, dict[str, Any]]:
    result = await session.execute(_CHUNK_ROWS, {"ids": ids})
    return {row.id: {"file_id": row.file_id, "ordinal": row.ordinal, "text": row.text} for row in result}
