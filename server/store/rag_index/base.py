"""The interface every chunk index engine implements, and what engines share."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import bindparam, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from server.store.models import RagIndexGenerationRow

__all__ = [
    "REMOVALS",
    "RUNTIME_SCHEMA_COLUMNS",
    "RUNTIME_SCHEMA_PREFIXES",
    "Candidate",
    "ChunkIndex",
    "ChunkInput",
    "Vector",
    "bump_generation",
    "common_cap",
    "current_generation",
    "plan_terms",
    "searched_terms",
    "terms",
]

# What the engines create at run time, not in the migrations: FTS5 and its shadow tables, the pgvector table and its
# per-RAG indexes, PostgreSQL's BM25 postings and statistics (rag_terms, rag_term_stats, rag_lexical_stats and the
# index ix_rag_terms_impact), and the full-text GIN index of earlier versions.
RUNTIME_SCHEMA_PREFIXES = (
    "rag_chunks_fts",
    "rag_chunk_vectors",
    "ix_rag_chunks_tsv",
    "rag_term",
    "rag_lexical_stats",
    "ix_rag_terms",
)
# Columns an engine adds to a migrated table at run time: (table, column). PostgreSQL's stored tsvector.
RUNTIME_SCHEMA_COLUMNS = frozenset({("rag_chunks", "tsv")})
Vector = npt.NDArray[np.float32]
_TERM = re.compile(r"\w+")
_MAX_TERMS = 64
# A term in over a tenth of a RAG's chunks has a BM25 IDF under log(9): left out of the lexical query (plan_terms).
_COMMON_SHARE = 0.1
_COMMON_FLOOR = 100  # small RAGs are cheap to score whatever the terms: never prune below this many matches
# Function words: they carry no topic, and ORed into a BM25 query they only make every chunk a (slow) candidate.
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "but",
        "by",
        "can",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "not",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


@dataclass(frozen=True)
class ChunkInput:
    text: str
    token_count: int
    vector: Sequence[float]


@dataclass(frozen=True)
class Candidate:
    chunk_id: int
    score: float  # cosine similarity for dense, the engine's lexical score for lexical


class ChunkIndex(ABC):
    """Repositories for a RAG's chunks: they flush in the caller's transaction and never commit."""

    name: str

    @abstractmethod
    async def prepare(self, engine: AsyncEngine) -> None:
        """Create the engine-specific tables and indexes (idempotent; once per process)."""

    @abstractmethod
    async def add(self, session: AsyncSession, *, rag_id: str, file_id: str, chunks: Sequence[ChunkInput]) -> None:
        """Store a file's chunks with their vectors (all of one dimension)."""

    @abstractmethod
    async def remove_file(self, session: AsyncSession, *, rag_id: str, file_id: str) -> None: ...

    @abstractmethod
    async def drop_rag(self, session: AsyncSession, *, rag_id: str) -> None:
        """Drop what the engine keeps for a RAG beside its rows (which go by ON DELETE CASCADE with the RAG)."""

    @abstractmethod
    async def dense(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]: ...

    async def lexical(
        self,
        session: AsyncSession,
        *,
        rag_id: str,
        query: str,
        limit: int,
        file_ids: Sequence[str] | None,
        with_dense: bool = False,
    ) -> list[Candidate]:
        """BM25-like ranking of the chunks matching any of the query's terms (see `terms`, `plan_terms`);
        `with_dense` when a dense list ranks the same query too."""
        words = searched_terms(query, limit, file_ids)
        if not words:
            return []
        return await self._lexical(
            session, rag_id=rag_id, words=words, limit=limit, file_ids=file_ids, with_dense=with_dense
        )

    @abstractmethod
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
        """`lexical` with its terms taken from the query and the empty cases answered."""

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
        """The dense list (none without `vector`) and the lexical list (none unless `lexical`) of one query;
        an engine may compute them together."""
        dense = (
            []
            if vector is None
            else await self.dense(session, rag_id=rag_id, vector=vector, limit=limit, file_ids=file_ids)
        )
        found = (
            await self.lexical(
                session, rag_id=rag_id, query=query, limit=limit, file_ids=file_ids, with_dense=vector is not None
            )
            if lexical
            else []
        )
        return dense, found


def terms(query: str) -> list[str]:
    """The distinct word tokens of a query, ORed by the lexical engines (AND semantics miss too much: rag.md §3),
    stopwords left out unless the query has nothing else ("the who" still searches for something)."""
    seen: dict[str, None] = {}
    for term in _TERM.findall(query.lower()):
        seen.setdefault(term, None)
    words = list(seen)
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:_MAX_TERMS]


def searched_terms(query: str, limit: int, file_ids: Sequence[str] | None) -> list[str]:
    """The terms a lexical search looks for; none when it has nothing to find (no terms, no room, no file)."""
    if limit <= 0 or (file_ids is not None and not file_ids):
        return []
    return terms(query)


def common_cap(chunks: int) -> int | None:
    """How many of a RAG's chunks a term may match and still count as rare; None when every term does (a small
    RAG, which is cheap to score whatever the terms)."""
    cap = max(_COMMON_FLOOR, int(chunks * _COMMON_SHARE))
    return None if chunks <= cap else cap


def plan_terms(words: list[str], matches: Sequence[int], cap: int | None, *, with_dense: bool) -> list[str]:
    """The terms to OR: those matching at most `cap` chunks (all of them when `cap` is None).

    An ORed lexical query scores every chunk that matches any term, so one common term makes its cost grow with the
    RAG, while BM25 gives such a term almost no weight (its IDF tends to 0 at half the chunks): leaving it out hardly
    changes the ranking. When every term is that common, BM25 would rank much of the RAG by little more than chunk
    length, at the cost of scoring all of it: a hybrid query then ranks by its dense list alone (no terms), and a
    lexical-only one still searches for the rarest term.
    """
    if cap is None:
        return words
    kept = [w for w, n in zip(words, matches, strict=True) if n <= cap]
    if kept or with_dense:
        return kept
    return [min(zip(words, matches, strict=True), key=lambda pair: pair[1])[0]]


# A generation's part above this counts removals of chunks, the part below additions since the last removal.
REMOVALS = 1 << 32


async def bump_generation(session: AsyncSession, rag_id: str, *, removal: bool = False) -> None:
    """Moves the RAG's generation on: by one for added chunks (or changed file metadata, which a search's filter
    reads), to the next multiple of `REMOVALS` for removed ones, so a reader can tell from two generations whether
    chunks were only added in between (numpy_dense reads just those)."""
    table: Any = RagIndexGenerationRow.__table__
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
    statement = insert(table).values(rag_id=rag_id, generation=REMOVALS if removal else 1)
    moved = table.c.generation - table.c.generation % REMOVALS + REMOVALS if removal else table.c.generation + 1
    statement = statement.on_conflict_do_update(index_elements=["rag_id"], set_={"generation": moved})
    await session.execute(statement)


# Read by every search: built once, on the table (search.py's _CHUNK_ROWS says why).
_GENERATIONS = RagIndexGenerationRow.__table__.c
_GENERATION = select(_GENERATIONS.generation).where(_GENERATIONS.rag_id == bindparam("rag_id"))


async def current_generation(session: AsyncSession, rag_id: str) -> int:
    value = await session.scalar(_GENERATION, {"rag_id": rag_id})
    return int(value or 0)


def normalized(vector: Sequence[float] | Vector) -> Vector:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array
