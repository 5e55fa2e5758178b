"""PostgreSQL engine: BM25 over per-RAG postings read best first (pg_lexical) and pgvector dense search.

Vectors live in `rag_chunk_vectors` (column type `vector` without a fixed dimension, so RAGs may differ); each RAG
gets a partial HNSW index on `embedding::vector(d)` restricted to its own rows, built when its first chunks arrive,
which keeps every RAG's search on its own graph. Filtered queries turn on `hnsw.iterative_scan` so a filter that
matches few rows still yields `limit` results (rag.md §3: plain HNSW returned 2 of 10); one whose files hold at most
`FEW_EXACT` chunks is searched exactly from their vectors instead, as the iterative scan gives up after
`hnsw.max_scan_tuples`. Without the extension the numpy engine serves dense search from the `embedding` column
instead.

A RAG of up to `EXACT_ROWS` chunks is searched in process once its vectors are in memory: exactly, and in a fraction
of a graph search's time (3,000 chunks: ~0.2 ms against ~1.5-2 ms and a round trip, docs/benchmarks.md). The
statement that sets a search's HNSW parameters also reads the RAG's generation and size, so that costs no extra
round trip. A matrix that only lacks chunks added since is brought up to date by the search (it reads just those);
one missing, or stale by a removal, is read whole in the background while pgvector answers, so no query waits for
a whole read.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import re
from collections.abc import Sequence

from sqlalchemy import BigInteger, Executable, TextClause, bindparam, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from server.store.rag_index import pg_lexical
from server.store.rag_index._rows import delete_chunk_rows, insert_chunk_rows
from server.store.rag_index.base import (
    Candidate,
    ChunkIndex,
    ChunkInput,
    Vector,
    normalized,
)
from server.store.rag_index.numpy_dense import CHUNK_BLOBS, EXACT_ROWS, NumpyDense, VectorSource
from server.store.rag_index.pg_restriction import FEW_CHUNKS, text_array

__all__ = ["PostgresChunkIndex"]

log = logging.getLogger(__name__)
# The chunk's tsvector, stored (a generated column made at run time): the lexemes the BM25 postings are made of
# (pg_lexical), computed once per chunk by the server whatever wrote the row.
_TSV_DDL = [
    "ALTER TABLE rag_chunks ADD COLUMN IF NOT EXISTS tsv tsvector "
    "GENERATED ALWAYS AS (to_tsvector('english', text)) STORED",
    # The GIN indexes of earlier versions (an expression, then the stored column), which ts_rank_cd searched.
    "DROP INDEX IF EXISTS ix_rag_chunks_tsv",
    "DROP INDEX IF EXISTS ix_rag_chunks_tsv_stored",
]
# Serialises `prepare` across replicas starting together (CREATE OR REPLACE FUNCTION is not safe concurrently).
_PREPARE_LOCK = 0x5B0A_27_01
_SAFE_ID = re.compile(r"^[A-Za-z0-9_]{1,60}$")
# HNSW candidates kept per query (the goal is 0.95 of the exact top 10; bench/rag_pg_scale.py): at 1M chunks shaped
# like e5 vectors 120 find 0.98; on isotropic clusters (a worst case) pgvector's default of 40 found 0.934 and 120
# 0.98 up to 60k chunks, 0.79 at 1M.
_EF_SEARCH = 120
_VECTOR_DDL = [
    "CREATE TABLE IF NOT EXISTS rag_chunk_vectors ("
    "chunk_id bigint PRIMARY KEY REFERENCES rag_chunks(id) ON DELETE CASCADE, "
    "rag_id varchar(64) NOT NULL, file_id varchar(64) NOT NULL, embedding vector NOT NULL)",
]


# A search's HNSW settings for its transaction, and the RAG's generation and chunk count (whether its in-process
# matrix may answer instead), in one round trip.
# The RAG's chunk count, kept by pg_lexical's triggers.
_CHUNKS = "(SELECT chunks FROM rag_lexical_stats WHERE rag_id = :rag_id)"
_PRELUDE = (
    "SELECT set_config('hnsw.ef_search', :ef_search, true){scan}, "  # noqa: S608 - fixed fragments
    f"(SELECT generation FROM rag_index_generations WHERE rag_id = :rag_id), {_CHUNKS}"
)
_PRELUDES = {
    False: text(_PRELUDE.format(scan="")),
    True: text(_PRELUDE.format(scan=", set_config('hnsw.iterative_scan', 'relaxed_order', true)")),
}
# With pgvector: the vectors of `rag_chunk_vectors`, reached through rag_chunks' (rag_id, id) index, in pgvector's
# binary form (a 2-byte dimension, 2 unused bytes, then big-endian float4s).
_VECTOR_ROWS = text(
    "SELECT v.chunk_id, v.file_id, vector_send(v.embedding) FROM rag_chunks AS c "
    "JOIN rag_chunk_vectors AS v ON v.chunk_id = c.id WHERE c.rag_id = :rag_id AND c.id > :above ORDER BY c.id"
).bindparams(bindparam("above", type_=BigInteger()))
# An in-process matrix's check that no id committed late.
_CHUNK_COUNT = text(f"SELECT coalesce({_CHUNKS}, 0)")


def _chunk_count(rag_id: str) -> Executable:
    return _CHUNK_COUNT.bindparams(rag_id=rag_id)


_FILES_LEFT = text(
    "SELECT f FROM unnest(CAST(:ids AS text[])) AS f WHERE EXISTS (SELECT 1 FROM rag_chunks WHERE file_id = f)"
)


def _files_left(file_ids: list[str]) -> Executable:
    return _FILES_LEFT.bindparams(ids=text_array(file_ids))


_PGVECTOR_ROWS = VectorSource(
    rows=lambda rag_id, above: _VECTOR_ROWS.bindparams(rag_id=rag_id, above=above),
    dtype=">f4",
    header=4,
    count=_chunk_count,
    files_left=_files_left,
)


# A restriction to at most this many chunks is searched exactly, from its chunks' vectors (pg_restriction), rather
# than on the graph, which passes about ef_search / (the restriction's share of the RAG) chunks outside it and stops
# after hnsw.max_scan_tuples (20,000), with fewer than `limit` found when the share is under about limit / 20,000
# (1,000 chunks of 2,000,000). 40,000 chunks (e5-like clusters), p50 of a dense search: 1 file of 10 chunks 6.2 ms
# against 28 on the graph, 200 chunks 6.9 against 27, 2,000 chunks 19 against 6.9 (docs/benchmarks.md, "RAG").
FEW_EXACT = 1_000


@functools.cache
def _exact_among_statement(dims: int) -> TextClause:
    """The most similar of the chunks of `:file_ids` (pg_restriction's FEW_CHUNKS), at most `:limit`; one row with
    no chunk when there are none, or when they are more than `:few` (and none are read)."""
    similarity = f"1 - (v.embedding::vector({dims}) <=> CAST(:q AS vector({dims})))"
    return text(
        f"WITH {FEW_CHUNKS} SELECT n.held, d.chunk_id, d.similarity FROM n LEFT JOIN LATERAL ("  # noqa: S608
        f"SELECT v.chunk_id, {similarity} AS similarity FROM f CROSS JOIN LATERAL (SELECT * FROM rag_chunk_vectors "
        "WHERE chunk_id = f.id OFFSET 0) AS v WHERE n.held <= :few AND v.rag_id = :rag_id "
        "ORDER BY 2 DESC, 1 LIMIT :limit) AS d ON true"
    )


async def _exact_among(
    session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str]
) -> list[Candidate] | None:
    """The files' best `limit` chunks, exactly; None when they hold more than FEW_EXACT chunks."""
    params = {
        "q": _literal(vector),
        "limit": limit,
        "rag_id": rag_id,
        "file_ids": text_array(file_ids),
        "few": FEW_EXACT,
    }
    rows = (await session.execute(_exact_among_statement(int(vector.shape[0])), params)).all()
    if rows[0][0] > FEW_EXACT:
        return None
    return [Candidate(chunk_id=int(row[1]), score=float(row[2])) for row in rows if row[1] is not None]


async def _on_graph(
    session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
) -> list[Candidate]:
    """The RAG's HNSW graph's best `limit` (a filter's with the prelude's iterative scan)."""
    dims = int(vector.shape[0])
    # rag_id is inlined (checked by the caller) so the planner can match the RAG's partial index predicate.
    distance = f"embedding::vector({dims}) <=> CAST(:q AS vector({dims}))"
    where = f"rag_id = '{rag_id}'" + (" AND file_id = ANY(CAST(:file_ids AS text[]))" if file_ids is not None else "")
    statement = text(
        f"SELECT chunk_id, 1 - ({distance}) FROM rag_chunk_vectors WHERE {where} ORDER BY {distance} LIMIT :limit"  # noqa: S608
    )
    params: dict[str, object] = {"q": _literal(vector), "limit": limit}
    if file_ids is not None:
        params["file_ids"] = text_array(file_ids)
    result = await session.execute(statement, params)
    candidates = [Candidate(chunk_id=int(row[0]), score=float(row[1])) for row in result]
    # relaxed_order may return near-ties out of order; rank strictly by similarity.
    return sorted(candidates, key=lambda c: -c.score)


def _literal(vector: Sequence[float] | Vector) -> str:
    return "[" + ",".join(f"{float(x):.7g}" for x in normalized(vector)) + "]"


class PostgresChunkIndex(ChunkIndex):
    name = "postgresql"

    def __init__(self) -> None:
        self.pgvector = False
        self.ef_search = _EF_SEARCH  # an attribute so that a benchmark can sweep it
        self._numpy = NumpyDense(dataclasses.replace(CHUNK_BLOBS, count=_chunk_count, files_left=_files_left))
        self._memory = NumpyDense(_PGVECTOR_ROWS)  # with pgvector: small RAGs' vectors, read from rag_chunk_vectors
        self._warming: dict[str, asyncio.Task[None]] = {}
        self._indexed: set[tuple[str, int]] = set()
        self._engine: AsyncEngine | None = None

    async def prepare(self, engine: AsyncEngine) -> None:
        self._engine = engine
        async with engine.begin() as connection:
            await connection.execute(text(f"SELECT pg_advisory_xact_lock({_PREPARE_LOCK})"))
            for statement in _TSV_DDL + pg_lexical.TABLES_DDL:
                await connection.execute(text(statement))
            triggered = await connection.scalar(
                text("SELECT count(*) FROM pg_trigger WHERE tgname = 'rag_chunks_terms_added'")
            )
            for statement in pg_lexical.TRIGGERS_DDL:
                await connection.execute(text(statement))
            if not triggered:  # chunks of an earlier version: the trigger's lock on rag_chunks holds writers off
                for statement in pg_lexical.BACKFILL:
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
        await self.ensure_hnsw(rag_id, len(chunks[0].vector))
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

    @staticmethod
    def hnsw_name(rag_id: str, dimensions: int) -> str:
        if not _SAFE_ID.fullmatch(rag_id):
            raise ValueError("rag id unusable in an index name")
        return f"ix_rag_vec_{rag_id.lower()}_{dimensions}"

    async def ensure_hnsw(self, rag_id: str, dimensions: int) -> None:
        """The RAG's own HNSW graph, built in its own transaction so concurrent first uploads cannot deadlock on it."""
        if (rag_id, dimensions) in self._indexed:
            return
        if self._engine is None:
            raise RuntimeError("the index is not prepared")
        statement = (
            f"CREATE INDEX IF NOT EXISTS {self.hnsw_name(rag_id, dimensions)} ON rag_chunk_vectors "
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
        self._memory.forget(rag_id)

    async def dense(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]:
        if not self.pgvector:
            return await self._numpy.search(session, rag_id=rag_id, vector=vector, limit=limit, file_ids=file_ids)
        if limit <= 0 or (file_ids is not None and not file_ids) or not _SAFE_ID.fullmatch(rag_id):
            return []
        filtered = file_ids is not None
        prelude = {"ef_search": str(max(self.ef_search, min(limit * 4, 1000))), "rag_id": rag_id}
        *_settings, generation, chunks = (await session.execute(_PRELUDES[filtered], prelude)).one()
        if chunks is not None and chunks <= EXACT_ROWS:
            matrix = await self._memory.updated(session, rag_id, int(generation or 0))
            if matrix is not None:
                return matrix.search(vector, limit, file_ids)
            self._warm(rag_id)
        if file_ids is not None and len(file_ids) <= FEW_EXACT:  # each file has a chunk: more files are more chunks
            found = await _exact_among(session, rag_id=rag_id, vector=vector, limit=limit, file_ids=file_ids)
            if found is not None:
                return found
        return await _on_graph(session, rag_id=rag_id, vector=vector, limit=limit, file_ids=file_ids)

    def _warm(self, rag_id: str) -> None:
        """Loads the RAG's matrix in a task of its own (one per RAG at a time); searches stay on pgvector meanwhile."""
        if rag_id in self._warming or self._engine is None:
            return
        task = asyncio.get_running_loop().create_task(self._load_matrix(self._engine, rag_id))
        self._warming[rag_id] = task
        task.add_done_callback(lambda _: self._warming.pop(rag_id, None))

    async def _load_matrix(self, engine: AsyncEngine, rag_id: str) -> None:
        try:
            async with AsyncSession(engine) as session:
                await self._memory.matrix(session, rag_id)
        except Exception:
            log.warning("reading a RAG's vectors into memory failed; its searches stay on pgvector", exc_info=True)

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
        ranking = await pg_lexical.bm25(
            session, rag_id=rag_id, words=words, limit=limit, file_ids=file_ids, with_dense=with_dense
        )
        return ranking.candidates
