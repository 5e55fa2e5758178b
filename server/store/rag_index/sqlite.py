"""SQLite engine: FTS5 BM25 (porter + unicode61, kept in step with rag_chunks by triggers) and numpy dense search.

One query reads the RAG's generation once (its cached matrix also lists the RAG's chunk ids), scores the dense list
in a worker thread while the lexical statements run, and asks FTS5 for the best matches without joining rag_chunks:
the join looked up every matching row of every RAG in rag_chunks (2 KiB rows, one page each), three times the cost
of the MATCH itself at 100k chunks. The global best rows are narrowed to the RAG's own through the matrix's ids;
only when too few of them belong to the RAG (another RAG's chunks crowd the top) does the joined query run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from server.store.rag_index._rows import delete_chunk_rows, insert_chunk_rows
from server.store.rag_index.base import (
    Candidate,
    ChunkIndex,
    ChunkInput,
    Vector,
    common_cap,
    plan_terms,
    searched_terms,
)
from server.store.rag_index.numpy_dense import Matrix, NumpyDense

__all__ = ["SqliteChunkIndex"]

_KNOWN_TERMS = 50_000  # term counts kept per RAG (then forgotten at once)
_KNOWN_RAGS = 64
_WIDEN = 4  # global rows asked for per wanted row before falling back to the joined query

# Triggers keep the external-content FTS table exact whichever way chunk rows go (file delete cascades included).
_DDL = [
    "CREATE VIRTUAL TABLE IF NOT EXISTS rag_chunks_fts USING fts5("
    "text, content='rag_chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER IF NOT EXISTS rag_chunks_fts_insert AFTER INSERT ON rag_chunks BEGIN "
    "INSERT INTO rag_chunks_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER IF NOT EXISTS rag_chunks_fts_delete AFTER DELETE ON rag_chunks BEGIN "
    "INSERT INTO rag_chunks_fts(rag_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
]
_GLOBAL = text(
    "SELECT rowid, bm25(rag_chunks_fts) FROM rag_chunks_fts WHERE rag_chunks_fts MATCH :match ORDER BY 2 LIMIT :limit"
)


def _match(words: list[str]) -> str:
    return " OR ".join(f'"{w}"' for w in words)  # \w+ tokens: no quotes inside, so quoting is exact


def _candidates(rows: Iterable[Any]) -> list[Candidate]:
    # bm25() is lower-is-better and negative; report it as a positive score.
    return [Candidate(chunk_id=int(row[0]), score=-float(row[1])) for row in rows]


def _joined(file_filter: bool) -> str:
    # CROSS JOIN pins the FTS5 scan as the outer loop: with a plain JOIN SQLite walked the RAG's chunks through
    # ix_rag_chunks_rag and ran the MATCH once per chunk (0.44 s instead of 6 ms for one term over 3.7k chunks).
    files = " AND c.file_id IN :file_ids" if file_filter else ""
    return (
        "SELECT c.id, bm25(rag_chunks_fts) FROM rag_chunks_fts CROSS JOIN rag_chunks c ON c.id = rag_chunks_fts.rowid "  # noqa: S608
        f"WHERE rag_chunks_fts MATCH :match AND c.rag_id = :rag_id{files} ORDER BY 2 LIMIT :limit"
    )


def _counts(terms: int, *, in_rag: bool) -> str:
    """One statement counting each term's matches (`:t0`, `:t1`, …) up to `:cap` + 1, anywhere or in the RAG."""
    source = (
        "rag_chunks_fts CROSS JOIN rag_chunks c ON c.id = rag_chunks_fts.rowid "
        "WHERE rag_chunks_fts MATCH :t{i} AND c.rag_id = :rag_id"
        if in_rag
        else "rag_chunks_fts WHERE rag_chunks_fts MATCH :t{i}"
    )
    parts = [f"(SELECT count(*) FROM (SELECT 1 FROM {source.format(i=i)} LIMIT :cap))" for i in range(terms)]  # noqa: S608
    return "SELECT " + ", ".join(parts)


class SqliteChunkIndex(ChunkIndex):
    name = "sqlite"

    def __init__(self) -> None:
        self._dense = NumpyDense()
        self._known: dict[str, tuple[int, dict[str, int]]] = {}  # rag id: (generation, {term: matches up to cap + 1})

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

    async def candidates(
        self,
        session: AsyncSession,
        *,
        rag_id: str,
        query: str,
        vector: Vector | None,
        lexical: bool,
        limit: int,
        file_ids: Sequence[str] | None,
    ) -> tuple[list[Candidate], list[Candidate]]:
        matrix = await self._dense.matrix(session, rag_id)
        dense = None
        if vector is not None:
            # numpy releases the GIL: the dense scoring overlaps the lexical statements in SQLite's own thread.
            dense = asyncio.get_running_loop().run_in_executor(None, matrix.search, vector, limit, file_ids)
        words = searched_terms(query, limit, file_ids) if lexical else []
        found = (
            await self._lexical_in(
                session,
                matrix,
                rag_id=rag_id,
                words=words,
                limit=limit,
                file_ids=file_ids,
                with_dense=dense is not None,
            )
            if words
            else []
        )
        return (await dense if dense is not None else []), found

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
        matrix = await self._dense.matrix(session, rag_id)  # cached: costs the generation read
        return await self._lexical_in(
            session, matrix, rag_id=rag_id, words=words, limit=limit, file_ids=file_ids, with_dense=with_dense
        )

    async def _lexical_in(
        self,
        session: AsyncSession,
        matrix: Matrix,
        *,
        rag_id: str,
        words: list[str],
        limit: int,
        file_ids: Sequence[str] | None,
        with_dense: bool,
    ) -> list[Candidate]:
        words = await self._plan(session, matrix, rag_id, words, with_dense=with_dense)
        if not words:
            return []
        match = _match(words)
        if file_ids is None:
            found = await self._global(session, matrix, match, limit)
            if found is not None:
                return found
        statement = text(_joined(file_ids is not None))
        params: dict[str, object] = {"match": match, "rag_id": rag_id, "limit": limit}
        if file_ids is not None:
            statement = statement.bindparams(bindparam("file_ids", expanding=True))
            params["file_ids"] = list(file_ids)
        return _candidates(await session.execute(statement, params))

    @staticmethod
    async def _global(session: AsyncSession, matrix: Matrix, match: str, limit: int) -> list[Candidate] | None:
        """The RAG's best `limit` matches from the global ranking, or None when that ranking cannot tell them."""
        wide = limit * _WIDEN
        rows = (await session.execute(_GLOBAL, {"match": match, "limit": wide})).all()
        ids = np.fromiter((int(row[0]) for row in rows), dtype=np.int64, count=len(rows))
        mine = matrix.contains(ids)
        found = _candidates(row for row, ok in zip(rows, mine, strict=True) if ok)
        # Exact when `limit` of the RAG's rows are among the global best, or when the global ranking ran out.
        return found[:limit] if len(found) >= limit or len(rows) < wide else None

    async def _plan(
        self, session: AsyncSession, matrix: Matrix, rag_id: str, words: list[str], *, with_dense: bool
    ) -> list[str]:
        """`plan_terms` by the counts of FTS5, each stopping at `cap + 1`. The FTS table holds every RAG's chunks: a
        term rare in all of them is rare here (a cheap count, no join); only the others are counted within this RAG,
        through the join, which costs a lookup per match (~20 ms at the cap of 10k). Those counts are kept until
        the RAG's generation moves: the common terms are, by their nature, the ones queries repeat."""
        cap = common_cap(len(matrix.ids))
        if cap is None:
            return words
        known = self._known.get(rag_id)
        if known is None or known[0] != matrix.generation:
            known = (matrix.generation, {})
            self._known.pop(rag_id, None)
            self._known[rag_id] = known
            while len(self._known) > _KNOWN_RAGS:  # the least recently changed RAGs' counts go first
                self._known.pop(next(iter(self._known)))
        counts = known[1]
        unknown = [w for w in words if w not in counts]
        if unknown:
            params: dict[str, object] = {f"t{i}": f'"{w}"' for i, w in enumerate(unknown)} | {"cap": cap + 1}
            found = (await session.execute(text(_counts(len(unknown), in_rag=False)), params)).one()
            common = [w for w, n in zip(unknown, found, strict=True) if n > cap]
            for w, n in zip(unknown, found, strict=True):
                if n <= cap:
                    counts[w] = int(n)
            if common:
                params = {f"t{i}": f'"{w}"' for i, w in enumerate(common)} | {"cap": cap + 1, "rag_id": rag_id}
                in_rag = (await session.execute(text(_counts(len(common), in_rag=True)), params)).one()
                counts.update((w, int(n)) for w, n in zip(common, in_rag, strict=True))
            if len(counts) > _KNOWN_TERMS:
                counts.clear()
        return plan_terms(words, [counts.get(w, 0) for w in words], cap, with_dense=with_dense)
