"""SQLite engine: FTS5 BM25 (porter + unicode61) and numpy dense search.

Each RAG has its own FTS5 table (`rag_chunks_fts_<rag id>`, external content over rag_chunks), because FTS5's
bm25() takes its document frequencies, chunk count and mean length from the table it ranks: with one table for all
RAGs, adding chunks to one RAG moved the scores and order of every other (a lexical-only nDCG@10 fell from 0.763 to
0.717 next to an unrelated 5,001-chunk RAG), which also let one tenant infer another's content. A RAG's table
changes only with its own chunks, so its ranking depends on its own content and nothing else. The tables are written
in the transaction that writes the chunks (no trigger can route a row to a table named by its value), and a RAG's
table goes with the RAG (`drop_rag`; `prepare` sweeps those of RAGs deleted by a cascade).

One query reads the RAG's generation once (its cached matrix lists the RAG's chunk ids) and scores the dense list
in a worker thread while the lexical statements run.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

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

__all__ = ["SqliteChunkIndex", "fts_table"]

_KNOWN_TERMS = 50_000  # term counts kept per RAG (then forgotten at once)
_KNOWN_RAGS = 64
_PREFIX = "rag_chunks_fts_"
_SAFE_ID = re.compile(r"^[A-Za-z0-9_]{1,60}$")
# The single FTS5 table of earlier versions (all RAGs in one ranking) and the triggers that kept it.
_LEGACY = [
    "DROP TRIGGER IF EXISTS rag_chunks_fts_insert",
    "DROP TRIGGER IF EXISTS rag_chunks_fts_delete",
    "DROP TABLE IF EXISTS rag_chunks_fts",
]


def fts_table(rag_id: str) -> str:
    """The name of a RAG's FTS5 table (ids are generated, but checked: the name is inlined in SQL)."""
    if not _SAFE_ID.fullmatch(rag_id):
        raise ValueError("rag id unusable in a table name")
    return _PREFIX + rag_id.lower()


def _create(table: str) -> str:
    return (
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING fts5("
        "text, content='rag_chunks', content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')"
    )


def _match(words: list[str]) -> str:
    return " OR ".join(f'"{w}"' for w in words)  # \w+ tokens: no quotes inside, so quoting is exact


def _candidates(rows: Iterable[Any]) -> list[Candidate]:
    # bm25() is lower-is-better and negative; report it as a positive score.
    return [Candidate(chunk_id=int(row[0]), score=-float(row[1])) for row in rows]


def _ranked(table: str, file_filter: bool) -> str:
    if not file_filter:
        return f"SELECT rowid, bm25({table}) FROM {table} WHERE {table} MATCH :match ORDER BY 2 LIMIT :limit"  # noqa: S608
    # CROSS JOIN pins the FTS5 scan as the outer loop: with a plain JOIN SQLite walked the chunks through an index
    # and ran the MATCH once per chunk (0.44 s instead of 6 ms for one term over 3.7k chunks).
    return (
        f"SELECT c.id, bm25({table}) FROM {table} CROSS JOIN rag_chunks c ON c.id = {table}.rowid "  # noqa: S608
        f"WHERE {table} MATCH :match AND c.file_id IN (SELECT value FROM json_each(:file_ids)) ORDER BY 2 LIMIT :limit"
    )


def _counts(table: str, terms: int) -> str:
    """One statement counting each term's matches (`:t0`, `:t1`, …) in the RAG's table, up to `:cap` + 1."""
    parts = [
        f"(SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH :t{i} LIMIT :cap))"  # noqa: S608
        for i in range(terms)
    ]
    return "SELECT " + ", ".join(parts)


async def _tables(connection: AsyncConnection) -> set[str]:
    """The per-RAG FTS5 tables (not their shadow tables, which are plain tables sharing the prefix)."""
    rows = await connection.execute(
        text(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE :prefix ESCAPE '\\' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        ),
        {"prefix": _PREFIX.replace("_", "\\_") + "%"},
    )
    return {str(row[0]) for row in rows}


class SqliteChunkIndex(ChunkIndex):
    name = "sqlite"

    def __init__(self) -> None:
        self._dense = NumpyDense()
        self._known: dict[str, tuple[int, dict[str, int]]] = {}  # rag id: (generation, {term: matches up to cap + 1})
        self._created: set[str] = set()  # FTS tables known to exist

    async def prepare(self, engine: AsyncEngine) -> None:
        async with engine.begin() as connection:
            legacy = await connection.scalar(
                text("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'rag_chunks_fts'")
            )
            if legacy:  # chunks indexed in the shared table move to their RAG's own
                for statement in _LEGACY:
                    await connection.execute(text(statement))
                for (rag_id,) in (await connection.execute(text("SELECT DISTINCT rag_id FROM rag_chunks"))).all():
                    table = fts_table(str(rag_id))
                    await connection.execute(text(_create(table)))
                    await connection.execute(
                        text(f"INSERT INTO {table}(rowid, text) SELECT id, text FROM rag_chunks WHERE rag_id = :r"),  # noqa: S608
                        {"r": rag_id},
                    )
            live = {
                fts_table(str(r)) for (r,) in (await connection.execute(text("SELECT id FROM rag_deployments"))).all()
            }
            for table in await _tables(connection):
                if table not in live:  # its RAG went by a cascade (a tenant's deletion)
                    await connection.execute(text(f"DROP TABLE IF EXISTS {table}"))
                else:
                    self._created.add(table)

    async def _ensure_table(self, session: AsyncSession, rag_id: str) -> str:
        # Asked in every writing transaction (a no-op once the table exists): a table this process created in a
        # transaction that then rolled back must not be taken as existing.
        table = fts_table(rag_id)
        await session.execute(text(_create(table)))
        return table

    async def _existing_table(self, session: AsyncSession, rag_id: str) -> str | None:
        """The RAG's table, or None while it has never had chunks (another replica may have created it since)."""
        table = fts_table(rag_id)
        if table in self._created:
            return table
        found = await session.scalar(
            text("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = :name"), {"name": table}
        )
        if not found:
            return None
        self._created.add(table)
        return table

    async def add(self, session: AsyncSession, *, rag_id: str, file_id: str, chunks: Sequence[ChunkInput]) -> None:
        blobs = [NumpyDense.encode(c.vector) for c in chunks]
        rows = await insert_chunk_rows(session, rag_id=rag_id, file_id=file_id, chunks=chunks, blobs=blobs)
        if not rows:
            return
        table = await self._ensure_table(session, rag_id)
        await session.execute(
            text(f"INSERT INTO {table}(rowid, text) VALUES (:id, :text)"),  # noqa: S608
            [{"id": row.id, "text": row.text} for row in rows],
        )

    async def remove_file(self, session: AsyncSession, *, rag_id: str, file_id: str) -> None:
        table = await self._existing_table(session, rag_id)
        if table is not None:
            # External content: FTS5 forgets a row only when told the text it indexed.
            await session.execute(
                text(
                    f"INSERT INTO {table}({table}, rowid, text) "  # noqa: S608
                    "SELECT 'delete', id, text FROM rag_chunks WHERE rag_id = :rag_id AND file_id = :file_id"
                ),
                {"rag_id": rag_id, "file_id": file_id},
            )
        await delete_chunk_rows(session, rag_id=rag_id, file_id=file_id)

    async def drop_rag(self, session: AsyncSession, *, rag_id: str) -> None:
        table = fts_table(rag_id)
        await session.execute(text(f"DROP TABLE IF EXISTS {table}"))
        self._created.discard(table)
        self._known.pop(rag_id, None)

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
        named = matrix.file_mask(file_ids)
        if named is None:  # a filter every file meets restricts neither list
            file_ids = None
        dense = None
        if vector is not None:
            # numpy releases the GIL: the dense scoring overlaps the lexical statements in SQLite's own thread.
            dense = asyncio.get_running_loop().run_in_executor(None, matrix.search_named, vector, limit, named)
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
        if matrix.file_mask(file_ids) is None:  # the matrix holds the FTS table's chunks, read in this transaction
            file_ids = None
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
        table = await self._existing_table(session, rag_id)
        if table is None:
            return []
        words = await self._plan(session, matrix, table, rag_id, words, with_dense=with_dense)
        if not words:
            return []
        params: dict[str, object] = {"match": _match(words), "limit": limit}
        if file_ids is not None:
            params["file_ids"] = orjson.dumps(list(file_ids)).decode()  # one parameter, however many files
        return _candidates(await session.execute(text(_ranked(table, file_ids is not None)), params))

    async def _plan(
        self, session: AsyncSession, matrix: Matrix, table: str, rag_id: str, words: list[str], *, with_dense: bool
    ) -> list[str]:
        """`plan_terms` by the counts of the RAG's FTS5 table, each stopping at `cap + 1`, kept until the RAG's
        generation moves: the common terms are, by their nature, the ones queries repeat."""
        cap = common_cap(matrix.chunk_count)
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
            found = (await session.execute(text(_counts(table, len(unknown))), params)).one()
            counts.update((w, int(n)) for w, n in zip(unknown, found, strict=True))
            if len(counts) > _KNOWN_TERMS:
                counts.clear()
        return plan_terms(words, [counts.get(w, 0) for w in words], cap, with_dense=with_dense)
