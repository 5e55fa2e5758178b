"""The first dense search after an upload: reading a RAG's matrix whole (the baseline, what every change cost before)
against bringing a cached one up to date with the chunks just added (server/store/rag_index/numpy_dense.py).

One RAG of SWITCHBOARD_BENCH_REFRESH_CHUNKS chunks (default 100,000; random 384-d vectors: reading them costs the
same whatever they hold) on SQLite, and on PostgreSQL without pgvector when it answers: the engines whose dense
search runs on that matrix, in files of SWITCHBOARD_BENCH_REFRESH_FILE_CHUNKS chunks (default 1,000; 5 gives a RAG of
20,000 files, as one of short documents). Then, SWITCHBOARD_BENCH_REFRESH_UPLOADS times (default 20), a one-chunk file
is stored and the matrix read again; then five times one of the first files is removed and the matrix read again;
then five times the most recent file (the matrix's last rows, whose ids SQLite gives to the next chunks).
"""

from __future__ import annotations

import os
import statistics
import time

import numpy as np

from bench._backends import backends, database_url
from bench.rag import _add, _add_in
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.rag_index import ChunkIndex, ChunkInput, chunk_index_for
from server.store.rag_index.numpy_dense import NumpyDense
from tests.rag_helpers import engine_matrices, stored_rag

CHUNKS = int(os.environ.get("SWITCHBOARD_BENCH_REFRESH_CHUNKS", "100000"))
UPLOADS = int(os.environ.get("SWITCHBOARD_BENCH_REFRESH_UPLOADS", "20"))
_PER_FILE = int(os.environ.get("SWITCHBOARD_BENCH_REFRESH_FILE_CHUNKS", "1000"))
_WHOLE_READS = 3
_REMOVALS = 5
_BLOCK = max(1000, _PER_FILE)


async def _read(db: Database, cache: NumpyDense, rag_id: str) -> float:
    started = time.perf_counter()
    async with db.read() as session:
        await cache.matrix(session, rag_id)
    return (time.perf_counter() - started) * 1000


async def _removed(db: Database, index: ChunkIndex, cache: NumpyDense, rag_id: str, file_id: str) -> float:
    """The file removed, then the time of the matrix's next read."""
    async with db.transaction() as session:
        await index.remove_file(session, rag_id=rag_id, file_id=file_id)
    return await _read(db, cache, rag_id)


async def _run(backend: str, url: str) -> None:
    upgrade(url)
    db = Database(url)
    rng = np.random.default_rng(27)
    try:
        index = await chunk_index_for(db.engine)
        rag_id = await stored_rag(db)
        started = time.perf_counter()
        for block in range(0, CHUNKS, _BLOCK):  # a transaction per block of chunks, however small the files
            async with db.transaction() as session:
                for start in range(block, min(block + _BLOCK, CHUNKS), _PER_FILE):
                    count = min(_PER_FILE, CHUNKS - start)
                    vectors = rng.normal(size=(count, 384)).astype(np.float32)
                    chunks = [ChunkInput(f"chunk {start + i}", 2, v.tolist()) for i, v in enumerate(vectors)]
                    await _add_in(session, index, rag_id, f"rf_bench{start // _PER_FILE}", chunks)
        files = -(-CHUNKS // _PER_FILE)
        print(f"{backend}: {CHUNKS} chunks in {files} files stored in {time.perf_counter() - started:.0f} s")
        matrices = engine_matrices(index)  # the engine's own, reading its vectors as its searches do
        whole = statistics.median([await _read(db, matrices.fresh(), rag_id) for _ in range(_WHOLE_READS)])
        cache = matrices.fresh()
        await _read(db, cache, rag_id)
        after_upload = []
        for upload in range(UPLOADS):
            vector = rng.normal(size=384).astype(np.float32).tolist()
            await _add(db, index, rag_id, f"rf_new{upload}", [ChunkInput(text="new", token_count=1, vector=vector)])
            after_upload.append(await _read(db, cache, rag_id))
        first = [f"rf_bench{removed}" for removed in range(_REMOVALS)]
        after_removal = [await _removed(db, index, cache, rag_id, file_id) for file_id in first]
        latest = [f"rf_new{upload}" for upload in range(UPLOADS - 1, max(-1, UPLOADS - 1 - _REMOVALS), -1)]
        after_latest = [await _removed(db, index, cache, rag_id, file_id) for file_id in latest]
        p50, removal_p50 = statistics.median(after_upload), statistics.median(after_removal)
        print(f"  whole read (baseline)          p50 {whole:8.1f} ms")
        print(f"  after an upload                p50 {p50:8.1f} ms  max {max(after_upload):.1f} ms")
        print(f"  after a file's removal         p50 {removal_p50:8.1f} ms  max {max(after_removal):.1f} ms")
        if after_latest:
            latest_p50 = statistics.median(after_latest)
            print(f"  after the latest file's        p50 {latest_p50:8.1f} ms  max {max(after_latest):.1f} ms")
        print(f"  whole read / after an upload   x{whole / p50:.0f}, / after a removal x{whole / removal_p50:.0f}")
    finally:
        await db.close()


async def main() -> None:
    for backend in backends():
        with database_url(backend, "refresh.db") as url:
            await _run(backend, url)
