"""A dense search restricted to some of a large RAG's files on PostgreSQL with pgvector (the embedded PostgreSQL 18 +
pgvector the tests use): from the files' own chunks, exactly, when they hold at most `postgres.FEW_EXACT`, against
the RAG's HNSW graph with pgvector's iterative scan (the baseline, measured in the same run on the same restriction).

One RAG of SWITCHBOARD_BENCH_FILTER_FILES files (default 4,000) of 10 chunks each, random 384-d vectors around 50
topic centres (a file's chunks share its topic), over the 20,000 chunks a RAG may have and still be searched in
memory; p50 of REPEATS, top 10. The restrictions: none, one file, 20 files of various topics, 40 files of the query's
own topic, 100 and 200 files of many.
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np
from sqlalchemy import text

from bench._backends import embedded_pgvector_url
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.models import RagFileRow
from server.store.rag_index import ChunkIndex, ChunkInput, SearchWeights, chunk_index_for, postgres, search
from tests.rag_helpers import stored_rag

FILES = int(os.environ.get("SWITCHBOARD_BENCH_FILTER_FILES", "4000"))
_PER_FILE = 10
_TOPICS = 50
_DIMS = 384
REPEATS = 15
_RAG = "rag_filters_bench"
_DENSE = SearchWeights(dense=1, lexical=0)


async def _fill(db: Database, index: ChunkIndex, rng: np.random.Generator, centres: np.ndarray) -> list[str]:
    file_ids = []
    async with db.transaction() as session:
        for n in range(FILES):
            file_id = f"rf_{n:07d}"
            file_ids.append(file_id)
            session.add(RagFileRow(id=file_id, rag_id=_RAG, filename=file_id, status="ready", chunk_count=_PER_FILE))
            await session.flush()
            vectors = centres[n % _TOPICS] + 0.8 * rng.standard_normal((_PER_FILE, _DIMS), dtype=np.float32)
            chunks = [
                ChunkInput(text=f"chunk {i} of {n}", token_count=4, vector=v.tolist()) for i, v in enumerate(vectors)
            ]
            await index.add(session, rag_id=_RAG, file_id=file_id, chunks=chunks)
        await session.execute(text("ANALYZE"))
    return file_ids


async def _p50(db: Database, index: ChunkIndex, query: list[float], file_ids: list[str] | None) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        async with db.read() as session:
            await search(
                index, session, rag_id=_RAG, query="", vector=query, top_k=10, file_ids=file_ids, weights=_DENSE
            )
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def main() -> None:
    few = postgres.FEW_EXACT
    with embedded_pgvector_url("bench_filters") as url:
        upgrade(url)
        db = Database(url)
        try:
            index = await chunk_index_for(db.engine)
            assert isinstance(index, postgres.PostgresChunkIndex) and index.pgvector, "pgvector is required"
            rng = np.random.default_rng(5)
            centres = rng.standard_normal((_TOPICS, _DIMS), dtype=np.float32)
            await stored_rag(db, _RAG)
            files = await _fill(db, index, rng, centres)
            query = (centres[7] + 0.8 * rng.standard_normal(_DIMS, dtype=np.float32)).tolist()
            restrictions: dict[str, list[str] | None] = {
                "none": None,
                "one file (10 chunks)": files[:1],
                "20 files of 20 topics (200)": files[1 : 20 * (_TOPICS + 1) : _TOPICS + 1],
                "40 files of the query's topic (400)": files[7::_TOPICS][:40],
                "100 files (1,000)": files[3::37][:100],
                "200 files (2,000)": files[3::19][:200],
            }
            print(
                f"pgvector: one RAG of {FILES * _PER_FILE:,} chunks, dense top 10, p50 of {REPEATS} (FEW_EXACT {few:,})"
            )
            for name, file_ids in restrictions.items():
                postgres.FEW_EXACT = 0
                graph = await _p50(db, index, query, file_ids)
                postgres.FEW_EXACT = few
                took = await _p50(db, index, query, file_ids)
                print(f"  {name:<38} graph {graph:7.2f} ms (baseline)  now {took:7.2f} ms  {graph / took:5.1f}x")
        finally:
            postgres.FEW_EXACT = few
            await db.close()
