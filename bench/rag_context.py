"""`/context` end to end through the gateway, the query embedded by the real dev embedder (issue 27: no bimodal
latency; p95 <= 1.5x p50).

The embedder is `switchboard dev-models` as `make run` starts it, its model on the threads dev-models picks (half
the cores, one on a 2-core machine: server.dev.models.model_threads says why; OMP_NUM_THREADS overrides it),
registered with e5's query prefix. The gateway is its own process (`python -m gateway`, one worker). One RAG holds
SWITCHBOARD_BENCH_CONTEXT_CHUNKS chunks (default 3000): BEIR DBpedia abstracts from SWITCHBOARD_BENCH_RAG_DATA when
there (else Zipf-distributed words), stored through the chunk index's own write path with their e5 passage
vectors (embedded in process before the run, cached under var/bench-cache/ as bench/rag.py does: an HNSW search's
cost depends on the vectors, and random ones are its worst case).
SWITCHBOARD_BENCH_CONTEXT_PER_FILE (default 500) chunks a file. SWITCHBOARD_BENCH_CONTEXT_REQUESTS (default 500)
queries (DBpedia's, in turn) are sent one after another, and for each, in turn on the same connection pool, four
requests, so that all four see the same machine load:
- the embedder alone: the query's /v1/embeddings call straight to dev-models (the baseline);
- `/context` lexical-only (`weights.dense` 0): the gateway and the search without any embedding call;
- `/context` with the RAG's default hybrid weights: what a client gets, the query embedded through the gateway;
- the same with a metadata filter every file meets: what finding the files a filter allows adds (every file's
  metadata is read; with one chunk a file, `SWITCHBOARD_BENCH_CONTEXT_PER_FILE=1`, that is the most).
Printed: p50, p95, p99 and p95/p50 of each (over all requests, and within a query), a histogram of the full
`/context`, whose two modes, if it has two, show (the stage figures say which part a slow mode comes from), what
the gateway adds to the embedding (each hybrid request's time minus its query's embedding just before), and what
the filter adds (each filtered request's time minus the unfiltered one's). On SQLite, and on PostgreSQL when it
answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np
import orjson

from bench._backends import backends, using
from bench.common import gateway_env, gateway_process, running_server
from bench.rag import DATA, _add, _embed, _jsonl, _rag_and_key, _zipf_texts
from server.dev.models import EMBEDDING_MODEL
from server.store.db import Database
from server.store.rag_index import ChunkInput, chunk_index_for
from tests.serving import free_port

CHUNKS = int(os.environ.get("SWITCHBOARD_BENCH_CONTEXT_CHUNKS", "3000"))
REQUESTS = int(os.environ.get("SWITCHBOARD_BENCH_CONTEXT_REQUESTS", "500"))
PER_FILE = int(os.environ.get("SWITCHBOARD_BENCH_CONTEXT_PER_FILE", "500"))
EVERY_FILE = [{"key": "lang", "op": "ne", "value": "xx"}]  # the files have no metadata: each meets it


@contextlib.asynccontextmanager
async def _dev_models() -> AsyncIterator[str]:
    """`switchboard dev-models` on a free loopback port, its model on the threads it picks; yields its /v1 URL."""
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        *(str(Path(sys.executable).parent / "switchboard"), "dev-models", "--port", str(port)),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(1200):
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(f"{url}/models") as resp:
                        if resp.status == 200:
                            break
                await asyncio.sleep(0.1)
            else:
                raise RuntimeError("switchboard dev-models did not start")
        yield url
    finally:
        proc.terminate()
        await proc.wait()


def _corpus(rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """The chunks' texts and the queries: DBpedia's when the data set is there."""
    if (DATA / "corpus.jsonl").exists():
        docs = _jsonl(DATA / "corpus.jsonl")[:CHUNKS]
        texts = [f"{d.get('title', '')}\n{d['text']}".strip() for d in docs]
        queries = [q["text"] for q in _jsonl(DATA / "queries.jsonl")]
        return texts, queries
    return _zipf_texts(rng, CHUNKS), _zipf_texts(rng, 50, words=4)


async def _fill(database_url: str, rag_id: str, texts: list[str]) -> None:
    vectors = _embed(texts, query=False)
    db = Database(database_url)
    try:
        index = await chunk_index_for(db.engine)
        for start in range(0, len(texts), PER_FILE):
            part = texts[start : start + PER_FILE]
            chunks = [
                ChunkInput(text=t, token_count=len(t.split()), vector=v.tolist())
                for t, v in zip(part, vectors[start : start + PER_FILE], strict=True)
            ]
            await _add(db, index, rag_id, f"file_bench{start // PER_FILE}", chunks)
    finally:
        await db.close()


def _line(label: str, times: list[float], queries: list[int]) -> float:
    """p50, p95, p99 and p95/p50 over all requests, and p95/p50 within a query: each request's time over its own
    query's median, so that what differs between queries (e5's cost grows with a query's length, and DBpedia's run
    from two words to a sentence) is not counted as the spread of one query's latency (issue 27's complaint: the
    same query alternating between ~30 and ~72 ms)."""
    ordered = sorted(times)
    p50, p95, p99 = (ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000 for q in (0.5, 0.95, 0.99))
    by_query: dict[int, list[float]] = {}
    for q, t in zip(queries, times, strict=True):
        by_query.setdefault(q, []).append(t)
    medians = {q: statistics.median(ts) for q, ts in by_query.items()}
    relative = sorted(t / medians[q] for q, t in zip(queries, times, strict=True))
    within = relative[int(0.95 * len(relative))] / relative[len(relative) // 2]
    print(
        f"  {label:<44} p50 {p50:7.2f}  p95 {p95:7.2f}  p99 {p99:7.2f} ms  p95/p50 {p95 / p50:5.2f}, "
        f"within a query {within:5.2f}"
    )
    return p50


def _histogram(times: list[float], p50_ms: float) -> None:
    """Bins a tenth of the median wide (at least 1 ms) up to 3x the median, and what lies beyond in one."""
    width = max(1.0, round(p50_ms / 10))
    last = int(3 * p50_ms // width)
    bins = [0] * (last + 1)
    for t in times:
        bins[min(last, int(t * 1000 // width))] += 1
    most = max(bins)
    used = [b for b, n in enumerate(bins) if n]
    for b in range(used[0], used[-1] + 1):
        upper = f"{(b + 1) * width:<5.0f}" if b < last else "..."
        print(f"    {b * width:5.0f}-{upper} ms {bins[b]:5d} {'#' * round(40 * bins[b] / most)}")


async def _timed(http: aiohttp.ClientSession, url: str, body: dict[str, Any], headers: dict[str, str]) -> float:
    started = time.perf_counter()
    async with http.post(url, data=orjson.dumps(body), headers=headers) as resp:
        payload = await resp.read()
        assert resp.status == 200, payload
    return time.perf_counter() - started


async def _measure(http: aiohttp.ClientSession, embed_url: str, rag_url: str, key: str, queries: list[str]) -> None:
    json = {"Content-Type": "application/json"}
    keyed = {**json, "Authorization": f"Bearer {key}"}
    alone, filtered = "embedder alone (/v1/embeddings)", "/context hybrid, a filter every file meets"
    stages: dict[str, list[float]] = {alone: [], "/context lexical-only": [], filtered: []}
    full: list[float] = []
    asked: list[int] = []  # each timed request's query
    for n in range(REQUESTS + 20):  # the first 20: warm-up (connections, the RAG's matrix, caches)
        query = queries[n % len(queries)]
        embed = {"model": EMBEDDING_MODEL, "input": [f"query: {query}"]}
        timings = (
            await _timed(http, f"{embed_url}/embeddings", embed, json),
            await _timed(http, f"{rag_url}/context", {"query": query, "weights": {"dense": 0, "lexical": 1}}, keyed),
            await _timed(http, f"{rag_url}/context", {"query": query, "filters": EVERY_FILE}, keyed),
            await _timed(http, f"{rag_url}/context", {"query": query}, keyed),
        )
        if n >= 20:
            asked.append(n % len(queries))
            for times, t in zip((*stages.values(), full), timings, strict=True):
                times.append(t)
    for label, times in stages.items():
        _line(label, times, asked)
    _histogram(full, _line("/context hybrid, query embedded (the goal)", full, asked))
    # Request by request (each pair ran back to back): what the gateway adds to the embedding it waits for, and
    # what a filter adds to the search.
    _paired("hybrid minus the embedder alone", full, stages[alone])
    _paired("the filtered minus the unfiltered", stages[filtered], full)


def _paired(label: str, times: list[float], baseline: list[float]) -> None:
    added = sorted(t - b for t, b in zip(times, baseline, strict=True))
    print(
        f"  {label + ', paired':<44} p50 {added[len(added) // 2] * 1000:7.2f}  "
        f"p95 {added[int(0.95 * len(added))] * 1000:7.2f} ms"
    )


async def _run(backend: str, embed_url: str, rng: np.random.Generator) -> None:
    texts, queries = _corpus(rng)
    async with running_server() as (base_url, _port, settings):
        deployment = {"servedModelId": EMBEDDING_MODEL, "queryPrefix": "query: "}
        rag_id, key = await _rag_and_key(base_url, settings, embed_url.removesuffix("/v1"), deployment)
        await _fill(settings.database_url, rag_id, texts)
        env = gateway_env(settings, SWITCHBOARD_GATEWAY_PORT="0")
        async with gateway_process(env, workers=1) as (gateway_url, _group), aiohttp.ClientSession() as http:
            print(
                f"{backend}: {len(texts)} chunks, {REQUESTS} sequential requests of each kind, {len(queries)} queries"
            )
            await _measure(http, embed_url, f"{gateway_url}/rag/{rag_id}", key, queries)
            print(f"  (load average {os.getloadavg()[0]:.1f})")


async def main() -> None:
    async with _dev_models() as embed_url:
        for backend in backends():
            with using(backend):
                await _run(backend, embed_url, np.random.default_rng(5))
