"""Gateway overhead: the same chat completion (a) straight to a fast upstream, (b) through a bare aiohttp
pass-through proxy — the floor for a Python proxy — and (c) through the gateway, non-streaming and streaming
(time to first chunk), at concurrency 1 and 32.

Upstream, proxy and gateway each run in their own process with one worker (same footing); the load generator is
this process. The machine is shared, so compare the ratios c/a and c/b, not absolute numbers.
Goal at concurrency 32: gateway p50 within 1.3x of the bare proxy, throughput at least 80% of it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.common import Measurement, measure, running_server
from server.settings import Settings, load_settings
from server.tokens import PLATFORM_ROLES, mint_token

REQUESTS = {1: 400, 32: 3000}
ROUNDS = 3
MODEL = "bench-chat"
_COMPLETION = (
    b'{"id":"chatcmpl-b","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,'
    b'"finish_reason":"stop","message":{"role":"assistant","content":"Hello there"}}],'
    b'"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}'
)
_CHUNK_HEAD = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
_CHUNK = _CHUNK_HEAD + b'"choices":[{"index":0,"delta":{"content":"tok"},"finish_reason":null}]}\n\n'
_USAGE = _CHUNK_HEAD + b'"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":8,"total_tokens":13}}\n\n'
_STREAM_CHUNKS = 8


# ---- the processes under test -----------------------------------------------------------------------------------


def _run(kind: str, arg: object, port: int) -> None:
    """Process entry point (spawned): serve one of the apps under test on 127.0.0.1:port until SIGTERM."""
    factories = {"upstream": lambda _arg: _upstream_app, "bare": _bare_proxy_app, "gateway": _gateway_app}
    app_factory: Callable[[], Awaitable[web.Application]] = factories[kind](arg)  # type: ignore[operator]
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import uvloop

        runner_cm = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner_cm = asyncio.Runner()

    async def serve() -> None:
        runner = web.AppRunner(await app_factory(), access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port, backlog=1024).start()
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await runner.cleanup()

    with runner_cm as runner:
        runner.run(serve())


async def _upstream_app() -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        if b'"stream":true' not in body and b'"stream": true' not in body:
            return web.Response(body=_COMPLETION, content_type="application/json")
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        for _ in range(_STREAM_CHUNKS):
            await resp.write(_CHUNK)
        await resp.write(_USAGE + b"data: [DONE]\n\n")
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


def _bare_proxy_app(upstream: str) -> Callable[[], Awaitable[web.Application]]:
    async def make() -> web.Application:
        app = web.Application()
        http_key = web.AppKey("http", aiohttp.ClientSession)

        async def session(app: web.Application) -> AsyncIterator[None]:
            app[http_key] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
            yield
            await app[http_key].close()

        async def proxy(request: web.Request) -> web.StreamResponse:
            body = await request.read()
            headers = {"Content-Type": "application/json"}
            async with request.app[http_key].post(f"{upstream}/v1/chat/completions", data=body, headers=headers) as up:
                if up.content_type != "text/event-stream":
                    return web.Response(body=await up.read(), content_type=up.content_type)
                resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
                await resp.prepare(request)
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
                return resp

        app.cleanup_ctx.append(session)
        app.router.add_post("/v1/chat/completions", proxy)
        return app

    return make


def _gateway_app(env: dict[str, str]) -> Callable[[], Awaitable[web.Application]]:
    async def make() -> web.Application:
        from gateway.app import make_app

        return make_app(load_settings(env))

    return make


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    pid: int

    def cpu_seconds(self) -> float:
        """User + system CPU time of the serving process so far (Linux /proc; 0 elsewhere)."""
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def _process(kind: str, arg: object = None) -> Iterator[Served]:
    port = _free_port()
    proc = multiprocessing.get_context("spawn").Process(target=_run, args=(kind, arg, port))
    proc.start()
    assert proc.pid is not None
    try:
        yield Served(f"http://127.0.0.1:{port}", proc.pid)
    finally:
        if proc.pid is not None:
            os.kill(proc.pid, signal.SIGTERM)
        proc.join(30)


async def _api_key(base_url: str, settings: Settings, upstream: str) -> str:
    """The bench model (shared with every tenant) and a service-account key granted it, through the management API."""
    token = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

        async def call(method: str, body: dict[str, Any], package: str = "tenants") -> dict[str, Any]:
            async with http.post(f"{base_url}/platform.{package}.v1.{method}", json=body) as resp:
                payload: dict[str, Any] = await resp.json()
                assert resp.status == 200, payload
                return payload

        deployment = {"name": "bench-chat", "publicModelId": MODEL, "endpointUrl": f"{upstream}/v1"}
        await call("ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment}, "modelmanager")
        sharing = {"name": "bench-chat", "sharing": {"shareToAll": True}}
        await call("ModelDeploymentService/UpdateModelDeploymentSharing", sharing, "modelmanager")

        tenant = (await call("TenantService/CreateTenant", {"name": "bench"}))["tenant"]["id"]
        account = await call("ServiceAccountService/CreateServiceAccount", {"tenantId": tenant, "name": "bench"})
        key = await call(
            "ApiKeyService/CreateApiKey",
            {
                "tenantId": tenant,
                "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
                "name": "bench",
                "serviceAccountId": account["serviceAccount"]["id"],
                "grants": [{"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "bench-chat"}],
            },
        )
        return str(key["secret"])


# ---- measuring --------------------------------------------------------------------------------------------------


async def _ready(http: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    for _ in range(300):
        with contextlib.suppress(aiohttp.ClientError):
            async with http.post(url, json=body, headers=headers) as resp:
                if resp.status == 200:
                    return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not become ready")


@dataclass
class Case(Measurement):
    cpu_us: float = 0.0  # CPU of the serving process per request


async def _measure(
    label: str, call: Callable[[], Awaitable[float]], requests: int, concurrency: int, served: Served
) -> Case:
    cpu = served.cpu_seconds()
    m = await measure(label, call, requests=requests, concurrency=concurrency, self_timed=True)
    served_calls = requests + min(50, requests)  # measure() warms up first; its CPU counts too
    return Case(m.label, m.requests, m.seconds, m.latencies, (served.cpu_seconds() - cpu) / served_calls * 1e6)


def _calls(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str]
) -> tuple[Callable[[], Awaitable[float]], Callable[[], Awaitable[float]]]:
    plain = b'{"model":"%s","messages":[{"role":"user","content":"hi"}]}' % MODEL.encode()
    streamed = b'{"model":"%s","messages":[{"role":"user","content":"hi"}],"stream":true}' % MODEL.encode()
    headers = {**headers, "Content-Type": "application/json"}

    async def non_stream() -> float:
        start = time.perf_counter()
        async with http.post(url, data=plain, headers=headers) as resp:
            await resp.read()
            assert resp.status == 200
        return time.perf_counter() - start

    async def first_chunk() -> float:
        start = time.perf_counter()
        async with http.post(url, data=streamed, headers=headers) as resp:
            assert resp.status == 200
            await resp.content.readany()
            ttfc = time.perf_counter() - start
            await resp.read()
        return ttfc

    return non_stream, first_chunk


def _print(rows: list[Case]) -> None:
    print(f"{'case':<40} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}")
    for row in rows:
        p50, p99 = row.percentile(0.5), row.percentile(0.99)
        print(f"{row.label:<40} {row.rps:>8.0f} {p50:>8.2f} {p99:>8.2f} {row.cpu_us:>11.0f}")


def _ratios(direct: Case, bare: Case, gw: Case) -> str:
    return (
        f"  c/a: p50 {gw.percentile(0.5) / direct.percentile(0.5):.2f}x, req/s {gw.rps / direct.rps:.2f}x   "
        f"c/b: p50 {gw.percentile(0.5) / bare.percentile(0.5):.2f}x, req/s {gw.rps / bare.rps:.2f}x, "
        f"CPU/req {gw.cpu_us / max(bare.cpu_us, 1):.2f}x"
    )


async def main() -> None:
    async with running_server() as (base_url, _port, settings):
        await _run_cases(base_url, settings)


async def _run_cases(base_url: str, settings: Settings) -> None:
    db_url = settings.database_url
    env = {
        "SWITCHBOARD_DATABASE_URL": db_url,
        "SWITCHBOARD_VAR_DIR": str(settings.var_dir),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",  # the upstream listens on loopback
    }
    with _process("upstream") as upstream:
        key = await _api_key(base_url, settings, upstream.url)
        with _process("bare", upstream.url) as bare, _process("gateway", env) as gateway:
            targets = {
                "a direct": (upstream, {}),
                "b bare proxy": (bare, {}),
                "c gateway": (gateway, {"Authorization": f"Bearer {key}"}),
            }
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as http:
                for served, headers in targets.values():
                    await _ready(http, f"{served.url}/v1/chat/completions", headers)
                for concurrency in (1, 32):
                    for mode in ("non-streaming", "streaming (time to first chunk)"):
                        runs: dict[str, list[Case]] = {label: [] for label in targets}
                        for _ in range(ROUNDS):  # interleaved, so a noisy neighbour hits every target alike
                            for label, (served, headers) in targets.items():
                                url = f"{served.url}/v1/chat/completions"
                                non_stream, first_chunk = _calls(http, url, headers)
                                call = non_stream if mode == "non-streaming" else first_chunk
                                n = REQUESTS[concurrency]
                                case = await _measure(f"{label}, c={concurrency}", call, n, concurrency, served)
                                runs[label].append(case)
                        rows = [sorted(r, key=lambda c: c.rps)[len(r) // 2] for r in runs.values()]  # median run
                        n = REQUESTS[concurrency]
                        print(f"-- {mode}, concurrency {concurrency}, {n} requests, median of {ROUNDS} runs")
                        _print(rows)
                        print(_ratios(*rows))
