"""Listing a large RAG's files and filtering a search by their metadata (GET /rag/{id}/files, /context's `filters`).

One RAG of SWITCHBOARD_BENCH_RAG_FILES files (default 20,000; metadata of a topic out of 50 and a year), on SQLite and
on PostgreSQL when it answers. Timed through the domain functions the gateway calls (server.domain.rag_files), p50 of
REPEATS: the first page and a deep page of 20, a page filtered to one topic, the total, and the file ids a search
filtered to one topic (or by a filter every file meets) is restricted to, the latter read each time and held between
searches as the gateway does (server.domain.rag_ready_files). The baseline, measured in the same run:
every file row of the RAG read and matched in process, which is what both did before they read pages from the index.

Then the search itself restricted to every file's id (each file holds one chunk), lexical-only and dense-only,
against the same search unrestricted: what passing the filter's files to the index costs.
"""

from __future__ import annotations

import itertools
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
from sqlalchemy import insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from bench._backends import backends, database_url
from server.domain import rag_files
from server.domain.rag_filters import matches, parse_filters
from server.domain.rag_ready_files import ReadyFiles
from server.heap import freeze_startup_heap
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.models import RagFileRow
from server.store.rag_index import ChunkIndex, ChunkInput, SearchWeights, chunk_index_for, search
from tests.rag_helpers import stored_rag

FILES = int(os.environ.get("SWITCHBOARD_BENCH_RAG_FILES", "20000"))
REPEATS = 15
_RAG = "rag_files_bench"
_ONE_TOPIC = parse_filters({"topic": "t7"})
_EVERY_FILE = parse_filters([{"key": "year", "op": "gte", "value": 2000}])
_DIMS = 384
_QUERY = "report on topic seven"


async def _fill(db: Database, index: ChunkIndex) -> str:
    """The RAG's files, a chunk each; the cursor of the page that ends three quarters of the way through."""
    await stored_rag(db, _RAG)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    rows: list[dict[str, Any]] = [
        {
            "id": f"rf_{n:07d}",
            "rag_id": _RAG,
            "filename": f"doc{n}.txt",
            "status": "ready",
            "metadata_": {"topic": f"t{n % 50}", "year": 2000 + n % 25},
            "chunk_count": 5,
            "created_at": start + timedelta(seconds=n),
            "updated_at": start + timedelta(seconds=n),
        }
        for n in range(FILES)
    ]
    async with db.transaction() as session:
        for at in range(0, FILES, 5000):
            await session.execute(insert(RagFileRow), rows[at : at + 5000])
    vectors = np.random.default_rng(7).standard_normal((FILES, _DIMS), dtype=np.float32)
    async with db.transaction() as session:
        for n, row in enumerate(rows):
            text = f"report {n} on topic {row['metadata_']['topic']} from {row['metadata_']['year']}"
            chunk = ChunkInput(text=text, token_count=8, vector=vectors[n].tolist())
            await index.add(session, rag_id=_RAG, file_id=str(row["id"]), chunks=[chunk])
    cursor, seen = None, 0
    while seen < FILES * 3 // 4:  # walked to, page by page: a cursor is opaque
        async with db.read() as session:
            page = await rag_files.list_files(session, rag_id=_RAG, conditions=[], after=cursor, limit=100)
        cursor, seen = page.next_cursor, seen + len(page.files)
    assert cursor is not None
    return cursor


async def _whole(session: AsyncSession) -> None:
    """The baseline: every file of the RAG read as a row object and matched in process."""
    rows = (await session.scalars(select(RagFileRow).where(RagFileRow.rag_id == _RAG))).all()
    found = [r for r in rows if matches(r.metadata_ or {}, _ONE_TOPIC)]
    sorted(found, key=lambda r: (r.created_at, r.id))


async def _p50(db: Database, call: Callable[[AsyncSession], Awaitable[Any]]) -> float:
    times = []
    for _ in range(REPEATS):
        started = time.perf_counter()
        async with db.read() as session:
            await call(session)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


async def _searches(db: Database, index: ChunkIndex) -> None:
    """The search restricted to the files of a filter every file meets, of one topic, and to one file, against the
    same search unrestricted."""
    async with db.read() as session:
        every = await rag_files.matching_file_ids(session, rag_id=_RAG, conditions=_EVERY_FILE, status="ready")
        topic = await rag_files.matching_file_ids(session, rag_id=_RAG, conditions=_ONE_TOPIC, status="ready")
    restrictions = {
        f"every file ({len(every):,})": every,
        f"one topic ({len(topic):,} files)": topic,
        "one file": every[:1],
    }
    vector = np.random.default_rng(8).standard_normal(_DIMS, dtype=np.float32).tolist()
    for mode, weights in (("lexical-only", SearchWeights(dense=0, lexical=1)), ("dense-only", SearchWeights(1, 0))):

        def searching(file_ids: list[str] | None, w: SearchWeights = weights) -> Callable[[AsyncSession], Any]:
            return lambda s: search(
                index, s, rag_id=_RAG, query=_QUERY, vector=vector, top_k=10, file_ids=file_ids, weights=w
            )

        unrestricted = await _p50(db, searching(None))
        print(f"  {f'search {mode}, unrestricted (baseline)':<44} {unrestricted:8.2f} ms")
        for name, file_ids in restrictions.items():
            took = await _p50(db, searching(file_ids))
            print(f"  {f'  restricted to {name}':<44} {took:8.2f} ms  {took / unrestricted:6.1f}x the baseline's time")


async def _run(backend: str, url: str) -> None:
    upgrade(url)
    db = Database(url)
    try:
        index = await chunk_index_for(db.engine)
        deep = await _fill(db, index)
        # As a server does once started: full collections of this process's own heap would otherwise land in the
        # timings (~70 ms every other call of a 20,000-file read here), which the gateway's requests do not see.
        freeze_startup_heap()
        held = ReadyFiles()
        # More filters in turn than a held RAG keeps answers for: each is matched against every file again.
        unseen = itertools.cycle([parse_filters([{"key": "year", "op": "gte", "value": 1990 + i}]) for i in range(10)])
        cases: dict[str, Callable[[AsyncSession], Awaitable[Any]]] = {
            "first page of 20": lambda s: rag_files.list_files(s, rag_id=_RAG, conditions=[]),
            "a page three quarters in": lambda s: rag_files.list_files(s, rag_id=_RAG, conditions=[], after=deep),
            "first page filtered to one topic (1/50)": lambda s: rag_files.list_files(
                s, rag_id=_RAG, conditions=_ONE_TOPIC
            ),
            "first page with include_total": lambda s: rag_files.list_files(
                s, rag_id=_RAG, conditions=[], include_total=True
            ),
            "a search's files of one topic (/context)": lambda s: rag_files.matching_file_ids(
                s, rag_id=_RAG, conditions=_ONE_TOPIC, status="ready"
            ),
            "a search's files, a filter all meet": lambda s: rag_files.matching_file_ids(
                s, rag_id=_RAG, conditions=_EVERY_FILE, status="ready"
            ),
            # What /context does: the files held since the first call (the RAG's generation stands meanwhile).
            "  the same, held (rag_ready_files)": lambda s: held.matching(s, _RAG, _EVERY_FILE),
            "  held, a filter not answered lately": lambda s: held.matching(s, _RAG, next(unseen)),
        }
        baseline = await _p50(db, _whole)
        print(f"{backend}: {FILES:,} files, p50 of {REPEATS}")
        print(f"  {'every file read and matched (baseline)':<44} {baseline:8.2f} ms")
        for label, call in cases.items():
            took = await _p50(db, call)
            print(f"  {label:<44} {took:8.2f} ms  {baseline / took:6.0f}x faster")
        await _searches(db, index)
    finally:
        await db.close()


async def main() -> None:
    for backend in backends():
        with database_url(backend, "rag_files.db") as url:
            await _run(backend, url)
