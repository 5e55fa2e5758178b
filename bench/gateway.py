"""Gateway overhead against the floor: the same chat completion (a) straight to a fast fake upstream, (b) through a
bare ~40-line aiohttp pass-through proxy, the floor for a Python proxy, and (c) through the gateway (one worker,
served exactly as `python -m gateway` serves it).

Scenarios: non-streaming at concurrency 1 (latency) and 32 (throughput, p99; by wrk when it is installed, which
leaves the CPU to the processes under test, else by the asyncio load generator), and streaming at concurrency 8
(complete streams per second, time to first chunk, CPU of the serving process per request). Targets are measured in
interleaved rounds so a noisy neighbour hits each alike; the table printed at the end is the gateway against the
bare proxy of the same run, with the goals: non-stream c=32 throughput >= 0.9x, p99 <= 1.5x, c=1 added p50
(over the direct call) <= 1.2x, stream c=8 throughput >= 0.8x, added time to first chunk <= 1.5x, CPU per streamed
request <= 1.4x. Absolute figures vary by machine; compare the ratios.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import re
import shutil
import signal
import socket
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from bench.common import gateway_env, measure, running_server
from server.heap import freeze_startup_heap
from server.settings import Settings, load_settings
from server.store.shared_counters import SharedCounters
from server.tokens import PLATFORM_ROLES, mint_token

C1_REQUESTS = 400
C32_REQUESTS = 3000  # without wrk
STREAM_REQUESTS = 1500
WRK_SECONDS = 5
ROUNDS = 3
MODEL = "bench-chat"
SHARED_COUNTERS = "BENCH_SHARED_COUNTERS"  # in a gateway env: count limits in shared memory (see _run)
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
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        import uvloop

        runner_cm = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:
        runner_cm = asyncio.Runner()

    if kind == "gateway":  # served exactly as a `python -m gateway` worker serves it
        from gateway.__main__ import serve_worker
        from server import metrics

        assert isinstance(arg, dict)
        settings = load_settings(arg)
        if settings.metrics_enabled:  # as `python -m gateway` does before forking: multiprocess metric files
            metrics.use_multiprocess_dir(settings.metrics_dir)
        # BENCH_SHARED_COUNTERS: count rate limits in the table a multi-worker gateway's workers share (this one
        # worker alone in it), as `python -m gateway` does without Redis.
        shared = SharedCounters(slots=settings.limits_shared_slots, workers=1) if arg.get(SHARED_COUNTERS) else None
        with runner_cm as runner:
            runner.run(serve_worker(settings, port, shared_counters=shared))
        return
    app_factory = _upstream_app if kind == "upstream" else _bare_proxy_app(str(arg))

    async def serve() -> None:
        runner = web.AppRunner(await app_factory(), access_log=None, handle_signals=False)
        await runner.setup()
        # This process imported the platform (this module's imports); a real bare proxy would not carry that heap
        # through every full collection. Frozen, as the gateway worker freezes its own: the same footing.
        freeze_startup_heap()
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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    url: str
    pid: int

    def cpu_seconds(self) -> float:
        """CPU time of the serving process so far, all its threads (Linux schedstat, in ns: /proc/PID/stat counts in
        10 ms ticks, too coarse for a few hundred µs per request; 0 elsewhere)."""
        total = 0
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{self.pid}/task").iterdir():
                with contextlib.suppress(OSError):
                    total += int((task / "schedstat").read_text().split()[0])
        return total / 1e9

    async def idle(self, *, busy: float = 0.01, longest: float = 5.0) -> None:
        """Wait until the process uses under `busy` of a core (or `longest` seconds): work a case left behind (usage
        events still being written, connections closing) must not be billed to the next case."""
        deadline = time.monotonic() + longest
        while time.monotonic() < deadline:
            before = self.cpu_seconds()
            await asyncio.sleep(0.1)
            if self.cpu_seconds() - before < busy * 0.1:
                return


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
class Case:
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us: float  # CPU of the serving process per request


async def _asyncio_case(call: Callable[[], Awaitable[float]], requests: int, concurrency: int, served: Served) -> Case:
    cpu = served.cpu_seconds()
    m = await measure("", call, requests=requests, concurrency=concurrency, self_timed=True)
    served_calls = requests + min(50, requests)  # measure() warms up first; its CPU counts too
    cpu_us = (served.cpu_seconds() - cpu) / served_calls * 1e6
    return Case(m.rps, m.percentile(0.5), m.percentile(0.99), cpu_us)


_WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = '%s'
wrk.headers["Content-Type"] = "application/json"
%s
"""
_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


def _wrk_ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    assert match, text
    return float(match[1]) * _UNITS[match[2]]


async def _wrk_case(url: str, headers: dict[str, str], body: bytes, concurrency: int, served: Served) -> Case:
    """wrk (one thread, keep-alive connections) for the c=32 non-streaming rows: a C load generator leaves the CPU
    to the processes under test."""
    extra = "".join(f'wrk.headers["{k}"] = "{v}"\n' for k, v in headers.items())
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_WRK_SCRIPT % (body.decode(), extra))
    try:

        async def run(seconds: float) -> str:
            proc = await asyncio.create_subprocess_exec(
                "wrk",
                "-t1",
                f"-c{concurrency}",
                f"-d{seconds}s",
                "--latency",
                "-s",
                script.name,
                url,
                stdout=asyncio.subprocess.PIPE,
            )
            out, _ = await proc.communicate()
            return out.decode()

        await run(1)  # warm-up
        cpu = served.cpu_seconds()
        out = await run(WRK_SECONDS)
    finally:
        os.unlink(script.name)
    total = int(re.search(r"(\d+) requests in", out)[1])  # type: ignore[index]
    assert "Non-2xx" not in out, out
    p50 = _wrk_ms(re.search(r"^\s+50%\s+(\S+)", out, re.M)[1])  # type: ignore[index]
    p99 = _wrk_ms(re.search(r"^\s+99%\s+(\S+)", out, re.M)[1])  # type: ignore[index]
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out)[1])  # type: ignore[index]
    return Case(rps, p50, p99, (served.cpu_seconds() - cpu) / max(total, 1) * 1e6)


_PLAIN = b'{"model":"%s","messages":[{"role":"user","content":"hi"}]}' % MODEL.encode()
_STREAMED = b'{"model":"%s","messages":[{"role":"user","content":"hi"}],"stream":true}' % MODEL.encode()


def _calls(
    http: aiohttp.ClientSession, url: str, headers: dict[str, str]
) -> tuple[Callable[[], Awaitable[float]], Callable[[], Awaitable[float]]]:
    headers = {**headers, "Content-Type": "application/json"}

    async def non_stream() -> float:
        start = time.perf_counter()
        async with http.post(url, data=_PLAIN, headers=headers) as resp:
            await resp.read()
            assert resp.status == 200
        return time.perf_counter() - start

    async def stream() -> float:
        """The whole stream is read (throughput counts complete streams); the latency is to the first chunk."""
        start = time.perf_counter()
        async with http.post(url, data=_STREAMED, headers=headers) as resp:
            assert resp.status == 200
            await resp.content.readany()
            ttfc = time.perf_counter() - start
            await resp.read()
        return ttfc

    return non_stream, stream


@dataclass
class Row:
    measure: str
    goal: str
    bare: float
    gateway: float
    ratio: float
    ok: bool


def _median(cases: list[Case], field: str) -> float:
    return float(statistics.median(getattr(c, field) for c in cases))


def _rows(runs: dict[str, dict[str, list[Case]]]) -> list[Row]:
    """The issue's table: each gateway figure against the bare proxy's of the same run (medians of the rounds);
    "added" latencies are over the direct call to the upstream."""

    def med(target: str, scenario: str, field: str) -> float:
        return _median(runs[scenario][target], field)

    def added(scenario: str, field: str) -> tuple[float, float]:
        floor = med("direct", scenario, field)
        return med("bare", scenario, field) - floor, med("gateway", scenario, field) - floor

    rows = []
    b, g = med("bare", "c32", "rps"), med("gateway", "c32", "rps")
    rows.append(Row("non-stream c=32 throughput (req/s)", ">= 0.9x", b, g, g / b, g / b >= 0.9))
    b, g = med("bare", "c32", "p99_ms"), med("gateway", "c32", "p99_ms")
    rows.append(Row("non-stream c=32 p99 (ms)", "<= 1.5x", b, g, g / b, g / b <= 1.5))
    b, g = added("c1", "p50_ms")
    rows.append(Row("non-stream c=1 added p50 (ms)", "<= 1.2x", b, g, g / b, g / b <= 1.2))
    b, g = med("bare", "stream8", "rps"), med("gateway", "stream8", "rps")
    rows.append(Row("stream c=8 throughput (req/s)", ">= 0.8x", b, g, g / b, g / b >= 0.8))
    b, g = added("stream8", "p50_ms")
    rows.append(Row("stream c=8 added time to first chunk (ms)", "<= 1.5x", b, g, g / b, g / b <= 1.5))
    b, g = med("bare", "stream8", "cpu_us"), med("gateway", "stream8", "cpu_us")
    rows.append(Row("CPU per streamed request (us)", "<= 1.4x", b, g, g / b, g / b <= 1.4))
    return rows


def _print(runs: dict[str, dict[str, list[Case]]], generator: str) -> None:
    print(f"-- per scenario, median of {ROUNDS} interleaved rounds (c=32 non-streaming by {generator})")
    print(f"{'scenario':<12} {'target':<9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}")
    for scenario, targets in runs.items():
        for target, cases in targets.items():
            rps, p50, p99, cpu = (_median(cases, f) for f in ("rps", "p50_ms", "p99_ms", "cpu_us"))
            print(f"{scenario:<12} {target:<9} {rps:>8.0f} {p50:>8.2f} {p99:>8.2f} {cpu:>11.0f}")
    print("-- against the bare proxy (same run)")
    print(f"{'measure':<44} {'bare':>9} {'gateway':>9} {'ratio':>7}  goal")
    for row in _rows(runs):
        verdict = "ok" if row.ok else "MISSED"
        print(f"{row.measure:<44} {row.bare:>9.2f} {row.gateway:>9.2f} {row.ratio:>6.2f}x  {row.goal} {verdict}")


async def main() -> None:
    async with running_server() as (base_url, _port, settings):
        await _run_cases(base_url, settings)


async def _run_cases(base_url: str, settings: Settings) -> None:
    env = gateway_env(settings)
    wrk = shutil.which("wrk") is not None
    with _process("upstream") as upstream:
        key = await _api_key(base_url, settings, upstream.url)
        with _process("bare", upstream.url) as bare, _process("gateway", env) as gateway:
            targets = {
                "direct": (upstream, {}),
                "bare": (bare, {}),
                "gateway": (gateway, {"Authorization": f"Bearer {key}"}),
            }
            runs: dict[str, dict[str, list[Case]]] = {s: {t: [] for t in targets} for s in ("c1", "c32", "stream8")}
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as http:
                for served, headers in targets.values():
                    await _ready(http, f"{served.url}/v1/chat/completions", headers)
                for _ in range(ROUNDS):  # interleaved, so a noisy neighbour hits every target alike
                    for target, (served, headers) in targets.items():
                        url = f"{served.url}/v1/chat/completions"
                        non_stream, stream = _calls(http, url, headers)
                        runs["c1"][target].append(await _asyncio_case(non_stream, C1_REQUESTS, 1, served))
                        if wrk:
                            case = await _wrk_case(url, headers, _PLAIN, 32, served)
                        else:
                            case = await _asyncio_case(non_stream, C32_REQUESTS, 32, served)
                        runs["c32"][target].append(case)
                        runs["stream8"][target].append(await _asyncio_case(stream, STREAM_REQUESTS, 8, served))
    _print(runs, "wrk" if wrk else "the asyncio load generator")
