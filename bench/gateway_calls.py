"""Python function calls per proxied chat completion, the gateway against the bare proxy of `bench gateway`.

A count, not a time: it does not move with a noisy machine, so a change to the request path shows its cost in one
run (`bench gateway`'s ratios need a quiet machine and several rounds). Each target is served in this process under
cProfile while a separate process sends the requests (non-streamed and streamed, 8 in flight); the upstream is the
same fake as `bench gateway`'s. Calls counted are every Python-level and C-level function call the profiler sees in
the serving process, warm-up excluded.
"""

from __future__ import annotations

import asyncio
import cProfile
import multiprocessing
import pstats
from collections.abc import Awaitable, Callable

import aiohttp
from aiohttp import web

from bench import gateway as g
from bench.common import gateway_env, running_server
from server.settings import load_settings

REQUESTS = 600
CONCURRENCY = 8


def _send(url: str, headers: dict[str, str], body: bytes, requests: int) -> None:
    """Process entry point (spawned): send the requests, `CONCURRENCY` in flight, reading every answer whole."""

    async def run() -> None:
        async with aiohttp.ClientSession(headers={**headers, "Content-Type": "application/json"}) as http:
            remaining = requests

            async def worker() -> None:
                nonlocal remaining
                while remaining > 0:
                    remaining -= 1
                    async with http.post(url, data=body) as resp:
                        await resp.read()
                        assert resp.status == 200, resp.status

            await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))

    asyncio.run(run())


async def _load(url: str, headers: dict[str, str], body: bytes, requests: int) -> None:
    proc = multiprocessing.get_context("spawn").Process(target=_send, args=(url, headers, body, requests))
    proc.start()
    await asyncio.to_thread(proc.join)
    assert proc.exitcode == 0, f"the load generator failed ({proc.exitcode})"


async def _calls_per_request(app: web.Application, headers: dict[str, str], body: bytes) -> float:
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/v1/chat/completions"
        async with aiohttp.ClientSession() as http:
            await g._ready(http, url, headers)
        await _load(url, headers, body, 50)  # warm-up: caches filled, pooled connections open
        profile = cProfile.Profile()
        profile.enable()
        await _load(url, headers, body, REQUESTS)
        profile.disable()
    finally:
        await runner.cleanup()
    stats = pstats.Stats(profile)
    return sum(entry[1] for entry in stats.stats.values()) / REQUESTS  # type: ignore[attr-defined]


async def main() -> None:
    async with running_server() as (base_url, _port, settings):
        env = gateway_env(settings)
        with g._process("upstream") as upstream:
            key = await g._api_key(base_url, settings, upstream.url)
            from gateway.app import make_app  # imported here: the module is not needed to run other benchmarks

            targets: dict[str, tuple[Callable[[], Awaitable[web.Application]], dict[str, str]]] = {
                "bare": (g._bare_proxy_app(upstream.url), {}),
                "gateway": (_app_of(lambda: make_app(load_settings(env))), {"Authorization": f"Bearer {key}"}),
            }
            counts: dict[tuple[str, str], float] = {}
            for mode, body in (("non-streamed", g._PLAIN), ("streamed", g._STREAMED)):
                for target, (factory, headers) in targets.items():
                    counts[target, mode] = await _calls_per_request(await factory(), headers, body)
    print(f"-- function calls per request in the serving process ({REQUESTS} requests, {CONCURRENCY} in flight)")
    print(f"{'request':<14} {'bare':>8} {'gateway':>8} {'ratio':>7}")
    for mode in ("non-streamed", "streamed"):
        bare, gateway = counts["bare", mode], counts["gateway", mode]
        print(f"{mode:<14} {bare:>8.0f} {gateway:>8.0f} {gateway / bare:>6.2f}x")


def _app_of(make: Callable[[], web.Application]) -> Callable[[], Awaitable[web.Application]]:
    async def factory() -> web.Application:
        return make()

    return factory
