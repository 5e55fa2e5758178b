"""The interface every chunk index engine implements, and what engines share."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from server.store.models import RagIndexGenerationRow

__all__ = ["RUNTIME_SCHEMA_PREFIXES", "Candidate", "ChunkIndex", "ChunkInput", "Vector", "bump_generation", "terms"]

# What the engines create at run time, not in the migrations: FTS5 and its shadow tables, the pgvector table and its
# per-RAG indexes, and PostgreSQL's full-text GIN index on rag_chunks (an expression index made with the engine).
RUNTIME_SCHEMA_PREFIXES = ("rag_chunks_fts", "rag_chunk_vectors", "ix_rag_chunks_tsv")
Vector = npt.NDArray[np.float32]
_TERM = re.compile(r"\w+")
_MAX_TERMS = 64
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
    async def dense(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]: ...

    @abstractmethod
    async def lexical(
        self, session: AsyncSession, *, rag_id: str, query: str, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]: ...


def terms(query: str) -> list[str]:
    """The distinct word tokens of a query, ORed by the lexical engines (AND semantics miss too much: rag.md §3),
    stopwords left out unless the query has nothing else ("the who" still searches for something)."""
    seen: dict[str, None] = {}
    for term in _TERM.findall(query.lower()):
        seen.setdefault(term, None)
    words = list(seen)
    content = [w for w in words if w not in STOPWORDS]
    return (content or words)[:_MAX_TERMS]


async def bump_generation(session: AsyncSession, rag_id: str) -> None:
    table: Any = RagIndexGenerationRow.__table__
    insert = sqlite_insert if session.get_bind().dialect.name == "sqlite" else postgresql_insert
    statement = insert(table).values(rag_id=rag_id, generation=1)
    statement = statement.on_conflict_do_update(index_elements=["rag_id"], set_={"generation": table.c.generation + 1})
    await session.execute(statement)


def normalized(vector: Sequence[float] | Vector) -> Vector:
    array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    return array / norm if norm > 0 else array
