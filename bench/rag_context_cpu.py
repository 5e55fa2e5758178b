"""The gateway's CPU time per `/context` call, by search mode: what a RAG search costs the gateway beyond the model.

One gateway process (`python -m gateway`, one worker) and one RAG of SWITCHBOARD_BENCH_CONTEXT_CHUNKS chunks (default
3,000; Zipf-distributed words and random 384-d vectors, stored as bench/rag.py stores them), on SQLite and on PostgreSQL
when it answers. The query is embedded by bench/rag.py's stand-in, which answers at once, so the embedding upstream
costs the gateway its HTTP call and nothing else. SWITCHBOARD_BENCH_CONTEXT_REQUESTS (default 1,500) sequential calls of
each kind, after 100 untimed ones; the CPU time is the gateway's process group's, from /proc.

The baseline, measured in the same run: `GET /v1/models` with the same key (authentication, the access cache, the
middleware and an HTTP response: what every gateway call pays). Printed: CPU ms a call, wall ms a call, and the ratio
of each to the baseline's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable

import aiohttp
import numpy as np
from aiohttp import web

from bench._backends import backends, using
from bench.common import cpu_seconds, gateway_env, gateway_process, running_server
from bench.rag import _Embedder, _fill, _rag_and_key, _serve, _zipf_texts
from server.store.db import Database
from server.store.rag_index import chunk_index_for

CHUNKS = int(os.environ.get("SWITCHBOARD_BENCH_CONTEXT_CHUNKS", "3000"))
REQUESTS = int(os.environ.get("SWITCHBOARD_BENCH_CONTEXT_REQUESTS", "1500"))
_WARM_UP = 100
_DIMS = 384
_MODES = {
    "/context lexical-only": {"dense": 0, "lexical": 1},
    "/context dense-only": {"dense": 1, "lexical": 0},
    "/context hybrid (the RAG's weights)": None,
}


async def _per_call(call: Callable[[int], Awaitable[None]], group: int) -> tuple[float, float]:
    """CPU and wall milliseconds a call, over REQUESTS calls after the warm-up."""
    for n in range(_WARM_UP):
        await call(n)
    cpu, wall = cpu_seconds(group=group), time.perf_counter()
    for n in range(REQUESTS):
        await call(n)
    return (cpu_seconds(group=group) - cpu) / REQUESTS * 1000, (time.perf_counter() - wall) / REQUESTS * 1000


async def _run(backend: str, embed_url: str) -> None:
    rng = np.random.default_rng(5)
    queries = _zipf_texts(rng, 50, words=4)
    async with running_server() as (base_url, _port, settings):
        rag_id, key = await _rag_and_key(base_url, settings, embed_url)
        db = Database(settings.database_url)
        try:
            await _fill(db, await chunk_index_for(db.engine), rag_id, _zipf_texts(rng, CHUNKS), rng=rng, dims=_DIMS)
        finally:
            await db.close()
        env = gateway_env(settings, SWITCHBOARD_GATEWAY_PORT="0")
        headers = {"Authorization": f"Bearer {key}"}
        async with (
            gateway_process(env, workers=1) as (gateway_url, group),
            aiohttp.ClientSession(headers=headers) as http,
        ):

            async def models(_n: int) -> None:
                async with http.get(f"{gateway_url}/v1/models") as resp:
                    assert resp.status == 200, await resp.text()
                    await resp.read()

            def context(weights: dict[str, int] | None) -> Callable[[int], Awaitable[None]]:
                async def call(n: int) -> None:
                    body: dict[str, object] = {"query": queries[n % len(queries)], "top_k": 5}
                    if weights is not None:
                        body["weights"] = weights
                    async with http.post(f"{gateway_url}/rag/{rag_id}/context", json=body) as resp:
                        assert resp.status == 200, await resp.text()
                        await resp.read()

                return call

            print(f"{backend}: {CHUNKS} chunks, {REQUESTS} sequential calls of each kind (gateway CPU, its wall time)")
            base_cpu, base_wall = await _per_call(models, group)
            print(f"  {'GET /v1/models (baseline)':<38} CPU {base_cpu:6.3f} ms  wall {base_wall:6.3f} ms")
            for label, weights in _MODES.items():
                cpu, wall = await _per_call(context(weights), group)
                print(
                    f"  {label:<38} CPU {cpu:6.3f} ms  wall {wall:6.3f} ms  "
                    f"x{cpu / base_cpu:.1f} / x{wall / base_wall:.1f} the baseline"
                )
            print(f"  (load average {os.getloadavg()[0]:.1f})")


async def main() -> None:
    embed_app = web.Application()
    embed_app.router.add_post("/v1/embeddings", _Embedder(_DIMS).embeddings)
    runner, embed_url = await _serve(embed_app)
    try:
        for backend in backends():
            with using(backend):
                await _run(backend, embed_url)
    finally:
        await runner.cleanup()
