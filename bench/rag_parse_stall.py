"""What a costly upload does to the gateway's other requests: `GET /v1/models` latency while uploads parse.

One gateway process (`python -m gateway`, one worker) on SQLite, a RAG on bench/rag.py's embedding stand-in. The
hostile file is 72 KiB of HTML that passes every size and depth bound but costs lexbor's tree builder ~6 s of CPU:
a paragraph opens 990 distinct `<b>` elements, then `</p><p>x` repeats 8,000 times, and each new paragraph
reconstructs all 990 (the HTML standard's "reconstruct the active formatting elements").
SWITCHBOARD_BENCH_STALL_UPLOADS (default 2) of them are uploaded at once; meanwhile one client calls `GET /v1/models`
back to back until they are answered. The gateway gets 2 parse workers and a 4 GiB cap, so that the files are
parsed rather than refused (each builds a 2.8 GiB tree; the default 1 GiB cap refuses them at once with a 413).
The baseline, measured in the same run: the same calls with nothing else in flight. Printed: p50, p99 and the
slowest call of each, and the ratios.
"""

from __future__ import annotations

import asyncio
import os
import time

import aiohttp
from aiohttp import web

from bench.common import Measurement, gateway_env, gateway_process, running_server
from bench.rag import _Embedder, _rag_and_key, _serve

UPLOADS = int(os.environ.get("SWITCHBOARD_BENCH_STALL_UPLOADS", "2"))
_BASELINE_CALLS = 300
_HOSTILE = ("<p>" + "".join(f"<b id={i}>" for i in range(990)) + "</p><p>x" * 8000).encode()


async def _models(http: aiohttp.ClientSession, gateway_url: str) -> float:
    started = time.perf_counter()
    async with http.get(f"{gateway_url}/v1/models") as resp:
        assert resp.status == 200, await resp.text()
        await resp.read()
    return time.perf_counter() - started


async def _upload(http: aiohttp.ClientSession, rag_url: str, n: int) -> tuple[int, float]:
    form = aiohttp.FormData()
    form.add_field("file", _HOSTILE, filename=f"misnested-{n}.html", content_type="text/html")
    started = time.perf_counter()
    async with http.post(f"{rag_url}/files", data=form) as resp:
        await resp.read()
        return resp.status, time.perf_counter() - started


def _summary(latencies: list[float]) -> tuple[float, float, float]:
    """p50, p99 and the slowest, in ms."""
    calls = Measurement("", len(latencies), sum(latencies), latencies)
    return calls.percentile(0.5), calls.percentile(0.99), max(latencies) * 1000


async def main() -> None:
    embed_runner, embed_url = await _serve(_embed_app())
    try:
        async with running_server() as (base_url, _port, settings):
            rag_id, key = await _rag_and_key(base_url, settings, embed_url)
            # Room for the 2.8 GiB trees: under the default 1 GiB cap these files are refused at once (a 413).
            env = gateway_env(
                settings,
                SWITCHBOARD_GATEWAY_PORT="0",
                SWITCHBOARD_RAG_PARSE_WORKERS="2",
                SWITCHBOARD_RAG_PARSE_MEMORY_BYTES=str(4 * 1024**3),
            )
            async with (
                gateway_process(env, workers=1) as (gateway_url, _group),
                aiohttp.ClientSession(headers={"Authorization": f"Bearer {key}"}) as http,
            ):
                await _measure(http, gateway_url, f"{gateway_url}/rag/{rag_id}")
    finally:
        await embed_runner.cleanup()


def _embed_app() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/embeddings", _Embedder(384).embeddings)
    return app


async def _measure(http: aiohttp.ClientSession, gateway_url: str, rag_url: str) -> None:
    form = aiohttp.FormData()
    form.add_field("file", b"A warm-up note about heat pumps.", filename="warm.txt")
    async with http.post(f"{rag_url}/files", data=form) as resp:  # starts what parses uploads
        assert resp.status == 201, await resp.text()
    for _ in range(30):
        await _models(http, gateway_url)
    baseline = [await _models(http, gateway_url) for _ in range(_BASELINE_CALLS)]
    uploads = asyncio.gather(*(_upload(http, rag_url, n) for n in range(UPLOADS)))
    during: list[float] = []
    while not uploads.done():
        during.append(await _models(http, gateway_url))
    answers = await uploads
    base, busy = _summary(baseline), _summary(during)
    outcomes = ", ".join(f"{status} in {seconds:.1f} s" for status, seconds in answers)
    print(f"  {UPLOADS} uploads of {len(_HOSTILE) >> 10} KiB of misnested HTML: {outcomes}")
    print(f"  GET /v1/models alone:            {_line(base)} (baseline)")
    ratios = ", ".join(f"x{b / a:.2f} {name}" for name, a, b in zip(("p50", "p99", "max"), base, busy, strict=True))
    print(f"  GET /v1/models during the parse: {_line(busy)}  {ratios}  ({len(during)} calls)")


def _line(summary: tuple[float, float, float]) -> str:
    return "p50 {:7.2f} ms  p99 {:8.2f} ms  max {:8.2f} ms".format(*summary)
