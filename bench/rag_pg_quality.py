"""Lexical-only retrieval quality on PostgreSQL: nDCG@10 on BEIR DBpedia (bench/rag.py's corpus, chunking and
judgements) of the PostgreSQL engine's BM25 over postings, of the ranking it replaced (ts_rank_cd over the stored
tsvector, the same terms ORed) on the same database, and of SQLite's FTS5 BM25 for reference, in one run.

Lexical-only needs no embedding model: every chunk gets the same placeholder vector. PostgreSQL is the local server
the tests use (SWITCHBOARD_BENCH_PG_URL), in a database of the run's own.
"""

from __future__ import annotations

import statistics
from typing import Any

import numpy as np
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from bench._backends import backends, database_url
from bench.rag import judged_chunks, load_judged, ndcg_at_10, ranked_docs
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.rag_index import SearchWeights, chunk_index_for, pg_lexical, search
from server.store.rag_index.base import searched_terms
from server.store.rag_index.search import POOL

LEXICAL = SearchWeights(dense=0, lexical=1)


async def main() -> None:
    judged = judged_chunks()
    if judged is None:
        return
    vectors = np.ones((len(judged.chunked), 8), dtype=np.float32)
    query_ids = sorted(judged.qrels)
    for backend in backends():
        with database_url(backend, "q.db") as url:
            upgrade(url)
            db = Database(url)
            try:
                index = await chunk_index_for(db.engine)
                file_of = await load_judged(db, index, "rag_dbpedia", judged, vectors)
                scores: dict[str, list[float]] = {index.name: []}
                async with db.read() as session:
                    for qid in query_ids:
                        hits = await search(
                            index,
                            session,
                            rag_id="rag_dbpedia",
                            query=judged.queries[qid],
                            vector=None,
                            top_k=POOL,
                            weights=LEXICAL,
                        )
                        scores[index.name].append(ndcg_at_10(ranked_docs(hits, file_of), judged.qrels[qid]))
                    if index.name == "postgresql":
                        baseline = "postgresql before (ts_rank_cd)"
                        scores[baseline] = [
                            await _ts_rank_ndcg(session, judged.queries[q], judged.qrels[q], file_of) for q in query_ids
                        ]
            finally:
                await db.close()
        for name, values in scores.items():
            print(f"  lexical-only nDCG@10, {name:<32} {statistics.fmean(values):.4f} ({len(values)} queries)")


async def _ts_rank_ndcg(session: AsyncSession, query: str, judged: dict[str, int], file_of: dict[str, str]) -> float:
    """The ranking before BM25 postings, for the terms the engine keeps now."""
    args: dict[str, Any] = {"rag_id": "rag_dbpedia", "limit": POOL, "file_ids": None, "with_dense": False}
    kept = (await pg_lexical.bm25(session, words=searched_terms(query, POOL, None), **args)).terms
    if not kept:
        return 0.0
    rows = await session.execute(
        text(
            "SELECT file_id FROM rag_chunks, to_tsquery('english', :match) AS q "
            "WHERE rag_id = 'rag_dbpedia' AND tsv @@ q ORDER BY ts_rank_cd(tsv, q) DESC, id LIMIT :limit"
        ),
        {"match": " | ".join(kept), "limit": POOL},
    )
    ranked: list[str] = []
    for (file_id,) in rows:
        if file_of[file_id] not in ranked:
            ranked.append(file_of[file_id])
    return ndcg_at_10(ranked, judged)
