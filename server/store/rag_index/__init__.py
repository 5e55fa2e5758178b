"""The chunk index of RAGs: one interface, two engines.

- SQLite (the embedded default): FTS5 (BM25) for lexical search; exact dense search in numpy over a matrix cached
  per RAG and invalidated through `rag_index_generations`.
- PostgreSQL: BM25 over per-RAG postings kept by triggers from a stored tsvector column, each term's list read best
  first with an exactness bound (pg_lexical; all made at run time); dense search with
  pgvector (a per-RAG partial HNSW index in the dimension pinned by the RAG's first embedding, iterative scans for
  filtered queries). Without the pgvector extension the numpy matrix serves dense search instead, so a plain
  PostgreSQL still works, exactly but slower.

`search` fuses the two ranked lists by a weighted sum of min-max normalised scores (search.py). Metadata filters
arrive here as the set of file ids that match, applied inside both searches, so a filtered query still returns
`top_k` chunks when that many match.
"""

from server.store.rag_index.base import (
    RUNTIME_SCHEMA_COLUMNS,
    RUNTIME_SCHEMA_PREFIXES,
    Candidate,
    ChunkIndex,
    ChunkInput,
)
from server.store.rag_index.factory import chunk_index_for
from server.store.rag_index.search import ChunkHit, SearchWeights, lexical_list, search

__all__ = [
    "RUNTIME_SCHEMA_COLUMNS",
    "RUNTIME_SCHEMA_PREFIXES",
    "Candidate",
    "ChunkHit",
    "ChunkIndex",
    "ChunkInput",
    "SearchWeights",
    "chunk_index_for",
    "lexical_list",
    "search",
]
