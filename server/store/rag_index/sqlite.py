"""SQLite engine: FTS5 BM25 (porter + unicode61, kept in step with rag_chunks by triggers) and numpy dense search."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from server.store.rag_index._rows import delete_chunk_rows, insert_chunk_rows
from server.store.rag_index.base import Candidate, ChunkIndex, ChunkInput, Vector, terms
from server.store.rag_index.numpy_dense import NumpyDense

__all__ = ["SqliteChunkIndex"]

# Triggers keep the external-content FTS table exact whichever way chunk rows go (file delete cascades included).
_DDL = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS rag_chunks_fts USING fts5("
    "text, content='rag_chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS rag_chunks_fts_insert AFTER INSERT ON rag_chunks BEGIN "
    "INSERT INTO rag_chunks_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS rag_chunks_fts_delete AFTER DELETE ON rag_chunks BEGIN "
    "INSERT INTO rag_chunks_fts(rag_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
]


class SqliteChunkIndex(ChunkIndex):
    name = "sqlite"

    def __init__(self) -> None:
        self._dense = NumpyDense()

    async def prepare(self, engine: AsyncEngine) -> None:
        async with engine.begin() as connection:
            for statement in _DDL:
                await connection.execute(text(statement))

    async def add(self, session: AsyncSession, *, rag_id: str, file_id: str, chunks: Sequence[ChunkInput]) -> None:
        blobs = [NumpyDense.encode(c.vector) for c in chunks]
        await insert_chunk_rows(session, rag_id=rag_id, file_id=file_id, chunks=chunks, blobs=blobs)

    async def remove_file(self, session: AsyncSession, *, rag_id: str, file_id: str) -> None:
        await delete_chunk_rows(session, rag_id=rag_id, file_id=file_id)

    async def dense(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]:
        return await self._dense.search(session, rag_id=rag_id, vector=vector, limit=limit, file_ids=file_ids)

    async def lexical(
        self, session: AsyncSession, *, rag_id: str, query: str, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]:
        words = terms(query)
        if not words or limit <= 0 or (file_ids is not None and not file_ids):
            return []
        match = " OR ".join(f'"{w}"' for w in words)  # \w+ tokens: no quotes inside, so quoting is exact
        where = "rag_chunks_fts MATCH :match AND c.rag_id = :rag_id"
        params: dict[str, object] = {"match": match, "rag_id": rag_id, "limit": limit}
        statement = text(
            "SELECT c.id, bm25(rag_chunks_fts) AS rank "  # noqa: S608 - fixed fragments interpolated, values bound
            "FROM rag_chunks_fts JOIN rag_chunks c ON c.id = rag_chunks_fts.rowid "
            f"WHERE {where}{' AND c.file_id IN :file_ids' if file_ids is not None else ''} "
            "ORDER BY rank LIMIT :limit"
        )
        if file_ids is not None:
            statement = statement.bindparams(bindparam("file_ids", expanding=True))
            params["file_ids"] = list(file_ids)
        result = await session.execute(statement, params)
        # bm25() is lower-is-better and negative; report it as a positive score.
        return [Candidate(chunk_id=int(row[0]), score=-float(row[1])) for row in result]
