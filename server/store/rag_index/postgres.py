"""PostgreSQL engine: full-text search (GIN over a stored tsvector, OR tsquery, ts_rank_cd) and pgvector dense search.

Vectors live in `rag_chunk_vectors` (column type `vector` without a fixed dimension, so RAGs may differ); each RAG
gets a partial HNSW index on `embedding::vector(d)` restricted to its own rows, built when its first chunks arrive,
which keeps every RAG's search on its own graph. Filtered queries turn on `hnsw.iterative_scan` so a filter that
matches few rows still yields `limit` results (rag.md §3: plain HNSW returned 2 of 10). Without the extension the
numpy engine serves dense search from the `embedding` column instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from server.store.rag_index._rows import delete_chunk_rows, insert_chunk_rows
from server.store.rag_index.base import (
    Candidate,
    ChunkIndex,
    ChunkInput,
    Vector,
    common_cap,
    normalized,
    plan_terms,
)
from server.store.rag_index.numpy_dense import NumpyDense, current_generation

__all__ = ["PostgresChunkIndex"]

log = logging.getLogger(__name__)
# The chunk's tsvector, stored (a generated column made at run time, like the GIN index over it): computed from the
# text at every match instead, the term counts and ts_rank_cd of a 3,000-chunk RAG cost 100-400 ms a query, the
# planner scanning the RAG's rows and parsing each text (bench/rag_pg_scale.py).
_TSV = "tsv"
_TSV_DDL = [
    "ALTER TABLE rag_chunks ADD COLUMN IF NOT EXISTS tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED",
    "DROP INDEX IF EXISTS ix_rag_chunks_tsv",  # the expression index of earlier versions
    "CREATE INDEX IF NOT EXISTS ix_rag_chunks_tsv_stored ON rag_chunks USING gin (tsv)",
]
_SAFE_ID = re.compile(r"^[A-Za-z0-9_]{1,60}$")
# HNSW candidates kept per query: pgvector's default of 40 found 0.934 of the exact top 10 (bench/rag_pg_scale.py,
# clustered 384-d vectors); the goal is 0.95.
_EF_SEARCH = 120
_VECTOR_DDL = [
    "CREATE TABLE IF NOT EXISTS rag_chunk_vectors ("
    "chunk_id bigint PRIMARY KEY REFERENCES rag_chunks(id) ON DELETE CASCADE, "
    "rag_id varchar(64) NOT NULL, file_id varchar(64) NOT NULL, embedding vector NOT NULL)",
]


def _literal(vector: Sequence[float] | Vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in normalized(vector)) + "]"


class PostgresChunkIndex(ChunkIndex):
    name = "postgresql"

    def __init__(self) -> None:
        self.pgvector = False
        self._numpy = NumpyDense()
        self._indexed: set[tuple[str, int]] = set()
        self._engine: AsyncEngine | None = None
        self._counts: dict[str, tuple[int, int]] = {}  # rag id: (generation, chunks)

    async def prepare(self, engine: AsyncEngine) -> None:
        self._engine = engine
        async with engine.begin() as connection:
            for statement in _TSV_DDL:
                await connection.execute(text(statement))
        try:
            async with engine.begin() as connection:
                await connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
                for statement in _VECTOR_DDL:
                    await connection.execute(text(statement))
            self.pgvector = True
        except DBAPIError:
            log.warning("pgvector is not available in this PostgreSQL; RAG dense search runs exactly in process")

    async def add(self, session: AsyncSession, *, rag_id: str, file_id: str, chunks: Sequence[ChunkInput]) -> None:
        if not self.pgvector:
            blobs = [NumpyDense.encode(c.vector) for c in chunks]
            await insert_chunk_rows(session, rag_id=rag_id, file_id=file_id, chunks=chunks, blobs=blobs)
            return
        rows = await insert_chunk_rows(
            session, rag_id=rag_id, file_id=file_id, chunks=chunks, blobs=[None] * len(chunks)
        )
        if not rows:
            return
        await self._ensure_hnsw(rag_id, len(chunks[0].vector))
        await session.execute(
            text(
                "INSERT INTO rag_chunk_vectors (chunk_id, rag_id, file_id, embedding) "
                "VALUES (:chunk_id, :rag_id, :file_id, CAST(:embedding AS vector))"
            ),
            [
                {"chunk_id": row.id, "rag_id": rag_id, "file_id": file_id, "embedding": _literal(c.vector)}
                for row, c in zip(rows, chunks, strict=True)
            ],
        )

    async def _ensure_hnsw(self, rag_id: str, dimensions: int) -> None:
        """The RAG's own HNSW graph, built in its own transaction so concurrent first uploads cannot deadlock on it."""
        if (rag_id, dimensions) in self._indexed:
            return
        if not _SAFE_ID.fullmatch(rag_id) or self._engine is None:
            raise ValueError("rag id unusable in an index name")
        statement = (
            f"CREATE INDEX IF NOT EXISTS ix_rag_vec_{rag_id.lower()}_{dimensions} ON rag_chunk_vectors "
            f"USING hnsw ((embedding::vector({dimensions})) vector_cosine_ops) WHERE rag_id = '{rag_id}'"
        )
        try:
            async with self._engine.begin() as connection:
                await connection.execute(text(statement))
        except DBAPIError:
            # A concurrent first upload created it (duplicate name in pg_class); anything else shows in searches.
            log.info("HNSW index for a RAG already being created")
        self._indexed.add((rag_id, dimensions))

    async def remove_file(self, session: AsyncSession, *, rag_id: str, file_id: str) -> None:
        await delete_chunk_rows(session, rag_id=rag_id, file_id=file_id)  # vectors go by ON DELETE CASCADE

    async def drop_rag(self, session: AsyncSession, *, rag_id: str) -> None:
        if not self.pgvector or not _SAFE_ID.fullmatch(rag_id):
            return
        prefix = f"ix_rag_vec_{rag_id.lower()}_"
        names = await session.scalars(
            text("SELECT indexname FROM pg_indexes WHERE tablename = 'rag_chunk_vectors' AND indexname LIKE :p"),
            {"p": prefix.replace("_", "\\_") + "%"},
        )
        for name in list(names):
            await session.execute(text(f'DROP INDEX IF EXISTS "{name}"'))
        self._indexed = {key for key in self._indexed if key[0] != rag_id}

    async def dense(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]:
        if not self.pgvector:
            return await self._numpy.search(session, rag_id=rag_id, vector=vector, limit=limit, file_ids=file_ids)
        if limit <= 0 or (file_ids is not None and not file_ids) or not _SAFE_ID.fullmatch(rag_id):
            return []
        dims = int(vector.shape[0])
        # rag_id is inlined (checked above) so the planner can match the RAG's partial index predicate.
        distance = f"embedding::vector({dims}) <=> CAST(:q AS vector({dims}))"
        where = f"rag_id = '{rag_id}'" + (" AND file_id IN :file_ids" if file_ids is not None else "")
        statement = text(
            f"SELECT chunk_id, 1 - ({distance}) FROM rag_chunk_vectors WHERE {where} ORDER BY {distance} LIMIT :limit"  # noqa: S608
        )
        params: dict[str, object] = {"q": _literal(vector), "limit": limit}
        if file_ids is not None:
            statement = statement.bindparams(bindparam("file_ids", expanding=True))
            params["file_ids"] = list(file_ids)
            await session.execute(text("SET LOCAL hnsw.iterative_scan = relaxed_order"))
        await session.execute(text(f"SET LOCAL hnsw.ef_search = {max(_EF_SEARCH, min(limit * 4, 1000))}"))
        result = await session.execute(statement, params)
        candidates = [Candidate(chunk_id=int(row[0]), score=float(row[1])) for row in result]
        # relaxed_order may return near-ties out of order; rank strictly by similarity.
        return sorted(candidates, key=lambda c: -c.score)

    async def _lexical(
        self,
        session: AsyncSession,
        *,
        rag_id: str,
        words: list[str],
        limit: int,
        file_ids: Sequence[str] | None,
        with_dense: bool,
    ) -> list[Candidate]:
        words = await self._plan(session, rag_id, words, with_dense=with_dense)
        if not words:
            return []
        where = " AND file_id IN :file_ids" if file_ids is not None else ""
        statement = text(
            f"SELECT id, ts_rank_cd({_TSV}, q) AS rank FROM rag_chunks, to_tsquery('english', :match) AS q "  # noqa: S608
            f"WHERE rag_id = :rag_id AND {_TSV} @@ q{where} ORDER BY rank DESC, id LIMIT :limit"
        )
        params: dict[str, object] = {"match": " | ".join(words), "rag_id": rag_id, "limit": limit}
        if file_ids is not None:
            statement = statement.bindparams(bindparam("file_ids", expanding=True))
            params["file_ids"] = list(file_ids)
        result = await session.execute(statement, params)
        return [Candidate(chunk_id=int(row[0]), score=float(row[1])) for row in result]

    async def _plan(self, session: AsyncSession, rag_id: str, words: list[str], *, with_dense: bool) -> list[str]:
        """`plan_terms` by GIN-indexed counts, each stopping at `cap + 1` rows, all in one statement. A common term
        costs even more here than in FTS5: ts_rank_cd recomputes to_tsvector from the text of every matching row."""
        cap = common_cap(await self._chunk_count(session, rag_id))
        if cap is None:
            return words
        counts = [
            f"(SELECT count(*) FROM (SELECT 1 FROM rag_chunks WHERE rag_id = :rag_id "  # noqa: S608 - fixed fragments
            f"AND {_TSV} @@ to_tsquery('english', :t{i}) LIMIT :cap) AS s{i})"
            for i in range(len(words))
        ]
        params: dict[str, object] = {f"t{i}": w for i, w in enumerate(words)} | {"rag_id": rag_id, "cap": cap + 1}
        found = (await session.execute(text("SELECT " + ", ".join(counts)), params)).one()
        return plan_terms(words, [int(n) for n in found], cap, with_dense=with_dense)

    async def _chunk_count(self, session: AsyncSession, rag_id: str) -> int:
        """The RAG's chunk count, counted again only when its generation moved."""
        if not self.pgvector:
            return len((await self._numpy.matrix(session, rag_id)).ids)
        generation = await current_generation(session, rag_id)
        cached = self._counts.get(rag_id)
        if cached is not None and cached[0] == generation:
            return cached[1]
        count = int(
            await session.scalar(text("SELECT count(*) FROM rag_chunks WHERE rag_id = :rag_id"), {"rag_id": rag_id})
            or 0
        )
        self._counts[rag_id] = (generation, count)
        return count
