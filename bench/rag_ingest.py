"""Ingest throughput against the embedder's own, same run (issue 27's goal: at least 0.9x).

The embedder is a loopback stand-in that works like a CPU model serving one batch at a time: each call costs
SWITCHBOARD_BENCH_INGEST_CALL_MS (default 5) plus SWITCHBOARD_BENCH_INGEST_TEXT_MS (default 10) per text, calls
queued behind one another. Its own throughput is measured first: batches of 32 sent back to back, 4 in flight (what
an ideal client gets from it). Then SWITCHBOARD_BENCH_INGEST_FILES (default 400) one-chunk files are uploaded the way
`switchboard rag ingest` uploads them: one multipart request per file with its external id, 16 in flight, through
the real gateway (parse, chunk, embed, store, index) on SQLite. Before the batcher every upload was its own call.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from bench.common import gateway_env, running_server
from bench.rag import _rag_and_key, _serve
from server.settings import load_settings

CALL = float(os.environ.get("SWITCHBOARD_BENCH_INGEST_CALL_MS", "5")) / 1000
PER_TEXT = float(os.environ.get("SWITCHBOARD_BENCH_INGEST_TEXT_MS", "10")) / 1000
FILES = int(os.environ.get("SWITCHBOARD_BENCH_INGEST_FILES", "400"))
CONCURRENCY = 16


class _SerialModel:
    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.calls = self.texts = 0

    async def embeddings(self, request: web.Request) -> web.Response:
        body = await request.json()
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        async with self.lock:  # one batch at a time, as a model on a CPU
            await asyncio.sleep(CALL + PER_TEXT * len(inputs))
        self.calls += 1
        self.texts += len(inputs)
        data = [{"object": "embedding", "index": i, "embedding": [1.0 + i % 7, 0.5, 0.25]} for i in range(len(inputs))]
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        payload = {"object": "list", "model": body["model"], "data": data, "usage": usage}
        return web.Response(body=orjson.dumps(payload), content_type="application/json")


async def _own_throughput(http: aiohttp.ClientSession, embed_url: str, texts: int) -> float:
    slots = asyncio.Semaphore(4)

    async def batch(n: int) -> None:
        async with slots:
            payload = {"model": "m", "input": [f"own {n} {i}" for i in range(32)]}
            async with http.post(f"{embed_url}/v1/embeddings", json=payload) as resp:
                await resp.read()

    started = time.perf_counter()
    await asyncio.gather(*(batch(n) for n in range(-(-texts // 32))))
    return (-(-texts // 32) * 32) / (time.perf_counter() - started)


async def _ingest(http: aiohttp.ClientSession, rag_url: str) -> tuple[float, int]:
    slots = asyncio.Semaphore(CONCURRENCY)
    chunks = 0

    async def upload(n: int) -> None:
        nonlocal chunks
        async with slots:
            form = aiohttp.FormData()
            form.add_field("file", f"Note {n}: the heat pump in building {n % 97} was serviced.", filename=f"n{n}.txt")
            form.add_field("external_id", f"/bench/n{n}.txt")
            async with http.post(f"{rag_url}/files", data=form) as resp:
                body: dict[str, Any] = await resp.json()
                assert resp.status == 201, body
                chunks += sum(f["chunk_count"] for f in body["data"])

    started = time.perf_counter()
    await asyncio.gather(*(upload(n) for n in range(FILES)))
    return chunks / (time.perf_counter() - started), chunks


async def main() -> None:
    from gateway.app import make_app

    model = _SerialModel()
    embed_app = web.Application()
    embed_app.router.add_post("/v1/embeddings", model.embeddings)
    embed_runner, embed_url = await _serve(embed_app)
    try:
        async with running_server() as (base_url, _port, settings):
            env = gateway_env(settings)
            rag_id, key = await _rag_and_key(base_url, settings, embed_url)
            gateway_runner, gateway_url = await _serve(make_app(load_settings(env)))
            try:
                async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as http:
                    own = await _own_throughput(http, embed_url, FILES)
                    calls = model.calls
                    ingest, chunks = await _ingest(http, f"{gateway_url}/rag/{rag_id}")
                    calls = model.calls - calls
            finally:
                await gateway_runner.cleanup()
    finally:
        await embed_runner.cleanup()
    print(f"embedder alone, batches of 32, 4 in flight: {own:7.1f} texts/s (baseline)")
    print(
        f"ingest of {FILES} one-file uploads, {CONCURRENCY} in flight: {ingest:7.1f} chunks/s "
        f"({chunks} chunks in {calls} embedding calls, {chunks / max(calls, 1):.1f} a call)  x{ingest / own:.2f}"
    )
