"""The Responses tool loop's cost per MCP tool call, against the same MCP work done directly with the SDK client.

Processes (spawned, one worker each): a fake model upstream (calls `{server}add` once when offered, then answers),
an MCP server (the `mcp` SDK's MCPServer on uvicorn), the gateway. Cases, sequential (concurrency 1), interleaved
over rounds:
- plain turn: `/v1/responses` without tools (one model call), from a key that reads no RAG (the direct path);
- plain turn, RAG key: the same from a key that reads one RAG, which the default RAG tools send through the loop
  (the model answers without calling it);
- loop turn: `/v1/responses` with the MCP tool (listing, one validated tools/call, two model calls);
- direct cold: what a turn does at the MCP server, with the SDK client from this process: connect (version
  negotiation), tools/list, tools/call, close;
- direct warm: tools/call on an open SDK session.
Added latency of one tool call through the loop = loop turn - plain turn (it includes the second model call to a
fast fake). Goal: added / direct cold <= 1.2. Loop CPU per tool call = gateway CPU per loop turn - per plain turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
import ssl
import statistics
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import aiohttp
import httpx2
import orjson
from aiohttp import web

from bench.common import running_server
from bench.gateway import Served, _free_port
from server.settings import Settings
from server.tokens import PLATFORM_ROLES, mint_token

N = 150
ROUNDS = 3
MODEL = "bench-loop"
SERVER = "benchmcp_"


def _upstream() -> web.Application:
    async def chat(request: web.Request) -> web.StreamResponse:
        payload = orjson.loads(await request.read())
        last = payload["messages"][-1]
        message: dict[str, Any] = {"role": "assistant", "content": "done"}
        offered = {t["function"]["name"] for t in payload.get("tools") or ()}
        if f"{SERVER}add" in offered and last.get("role") != "tool":
            call = {"id": "c1", "type": "function", "function": {"name": f"{SERVER}add", "arguments": '{"a":1,"b":2}'}}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        body = {
            "id": "x",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
        }
        return web.json_response(body)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app


def _serve(kind: str, env: dict[str, str], port: int) -> None:
    """Process entry point (spawned)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if kind == "mcp":
        import uvicorn
        from mcp.server import MCPServer

        mcp = MCPServer("bench-tools", version="1")

        @mcp.tool()
        def add(a: int, b: int) -> int:
            return a + b

        uvicorn.run(mcp.streamable_http_app(host="127.0.0.1"), host="127.0.0.1", port=port, log_level="warning")
        return

    async def serve() -> None:
        if kind == "gateway":
            from gateway.app import make_app
            from server.settings import load_settings

            app = make_app(load_settings(env))
        else:
            app = _upstream()
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await runner.cleanup()

    asyncio.run(serve())


@contextlib.contextmanager
def _process(kind: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    port = _free_port()
    proc = multiprocessing.get_context("spawn").Process(target=_serve, args=(kind, env or {}, port))
    proc.start()
    assert proc.pid is not None
    try:
        yield Served(f"http://127.0.0.1:{port}", proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.join(30)


async def _register(base_url: str, settings: Settings, upstream: str, mcp_url: str) -> tuple[str, str]:
    """(a key that can use the model and the MCP server and reads no RAG, a key that also reads one RAG)."""
    token = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

        async def call(method: str, body: dict[str, Any], package: str) -> dict[str, Any]:
            async with http.post(f"{base_url}/platform.{package}.v1.{method}", json=body) as resp:
                payload: dict[str, Any] = await resp.json()
                assert resp.status == 200, payload
                return payload

        deployment = {"name": "bench-loop", "publicModelId": MODEL, "endpointUrl": f"{upstream}/v1"}
        await call("ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment}, "modelmanager")
        share = {"name": "bench-loop", "sharing": {"shareToAll": True}}
        await call("ModelDeploymentService/UpdateModelDeploymentSharing", share, "modelmanager")
        server = {"name": SERVER, "serverUrl": mcp_url, "sharing": {"shareToAll": True}}
        await call("ExternalMcpServerService/CreatePlatformExternalMcpServer", {"externalMcpServer": server}, "agents")
        tenant = (await call("TenantService/CreateTenant", {"name": "bench"}, "tenants"))["tenant"]["id"]
        account = await call("ServiceAccountService/CreateServiceAccount", {"tenantId": tenant, "name": "b"}, "tenants")
        grants = [
            {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "bench-loop"},
            {"kind": "RESOURCE_KIND_MCP_SERVER", "name": SERVER},
        ]
        body = {
            "tenantId": tenant,
            "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
            "name": "bench",
            "serviceAccountId": account["serviceAccount"]["id"],
            "grants": grants,
        }
        key = str((await call("ApiKeyService/CreateApiKey", body, "tenants"))["secret"])
        embedder = {
            "name": "bench-embed",
            "publicModelId": "bench-embed",
            "endpointUrl": f"{upstream}/v1",
            "capabilities": {"taskType": "TASK_TYPE_EMBEDDING"},
        }
        await call("ModelDeploymentService/CreateModelDeployment", {"modelDeployment": embedder}, "modelmanager")
        shared = {**share, "name": "bench-embed"}
        await call("ModelDeploymentService/UpdateModelDeploymentSharing", shared, "modelmanager")
        rag = {"name": "bench-rag", "embeddingModel": "bench-embed"}
        rag_id = (await call("RagService/CreateRag", {"tenantId": tenant, "rag": rag}, "ragmanager"))["rag"]["id"]
        reader = {**body, "name": "bench-rag", "grants": [*grants, {"kind": "RESOURCE_KIND_RAG", "name": rag_id}]}
        return key, str((await call("ApiKeyService/CreateApiKey", reader, "tenants"))["secret"])


async def _timed(call: Callable[[], Awaitable[None]], n: int) -> list[float]:
    for _ in range(10):
        await call()
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await call()
        out.append(time.perf_counter() - start)
    return out


@contextlib.asynccontextmanager
async def _warm_session(url: str) -> AsyncIterator[Any]:
    from mcp import Client

    async with Client(url, cache=None) as client:
        yield client


async def main() -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with running_server() as (base_url, _port, settings):
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per direct request otherwise
        env = {
            "SWITCHBOARD_DATABASE_URL": settings.database_url,
            "SWITCHBOARD_VAR_DIR": str(settings.var_dir),
            "SWITCHBOARD_LOG_LEVEL": "WARNING",
            "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",
        }
        with _process("upstream") as upstream, _process("mcp") as mcp_server, _process("gateway", env) as gw:
            mcp_url = f"{mcp_server.url}/mcp"
            key, rag_key = await _register(base_url, settings, upstream.url, mcp_url)
            headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
            rag_headers = {**headers, "Authorization": f"Bearer {rag_key}"}
            tool = {"type": "mcp", "server_label": SERVER, "require_approval": "never"}
            plain = orjson.dumps({"model": MODEL, "input": "hi", "store": False})
            looped = orjson.dumps({"model": MODEL, "input": "1+2?", "store": False, "tools": [tool]})
            async with aiohttp.ClientSession() as http:

                def post(body: bytes, sent: dict[str, str] = headers) -> Callable[[], Awaitable[None]]:
                    async def go() -> None:
                        async with http.post(f"{gw.url}/v1/responses", data=body, headers=sent) as resp:
                            data = await resp.json()
                            assert resp.status == 200, data
                            assert body is plain or data["output"][1]["output"] == "3", data

                    return go

                for _ in range(300):  # until the gateway answers
                    with contextlib.suppress(aiohttp.ClientError, AssertionError):
                        await post(looped)()
                        break
                    await asyncio.sleep(0.1)

                tls = ssl.create_default_context()  # the SDK used well: one TLS context, as the gateway does

                async def cold() -> None:
                    async with (
                        httpx2.AsyncClient(verify=tls) as client_http,
                        Client(streamable_http_client(mcp_url, http_client=client_http), cache=None) as client,
                    ):
                        await client.list_tools()
                        await client.call_tool("add", {"a": 1, "b": 2})

                results: dict[str, list[float]] = {"plain": [], "rag": [], "loop": [], "cold": [], "warm": []}
                cpu: dict[str, float] = {"plain": 0.0, "rag": 0.0, "loop": 0.0}
                async with _warm_session(mcp_url) as warm_client:

                    async def warm() -> None:
                        await warm_client.call_tool("add", {"a": 1, "b": 2})

                    for _ in range(ROUNDS):
                        for label, call in (
                            ("plain", post(plain)),
                            ("rag", post(plain, rag_headers)),
                            ("loop", post(looped)),
                            ("cold", cold),
                            ("warm", warm),
                        ):
                            before = gw.cpu_seconds()
                            results[label] += await _timed(call, N)
                            if label in cpu:
                                cpu[label] += gw.cpu_seconds() - before
    p50 = {label: statistics.median(values) * 1000 for label, values in results.items()}
    calls = ROUNDS * (N + 10)
    added = p50["loop"] - p50["plain"]
    print(f"{'case':<44} {'p50 ms':>8}")
    for label, name in (
        ("plain", "a plain turn (1 model call)"),
        ("rag", "a' plain turn, the key reads a RAG (loop)"),
        ("loop", "b loop turn (list + 1 tool call + 2 model calls)"),
        ("cold", "c direct SDK: connect + list + call"),
        ("warm", "d direct SDK: call on an open session"),
    ):
        print(f"{name:<44} {p50[label]:>8.2f}")
    print(f"added latency of one tool call through the loop (b-a): {added:.2f} ms")
    vs_cold, vs_warm = added / p50["cold"], added / p50["warm"]
    print(f"  vs direct cold (c): {vs_cold:.2f}x (goal <= 1.2x)   vs direct warm (d): {vs_warm:.2f}x")
    per_call_cpu = (cpu["loop"] - cpu["plain"]) / calls * 1e6
    print(f"gateway CPU per tool call (loop turn - plain turn): {per_call_cpu:.0f} us")
    rag_cpu = (cpu["rag"] - cpu["plain"]) / calls * 1e6
    print(
        f"a key that reads a RAG, plain prompt (default RAG tools, a'-a): +{p50['rag'] - p50['plain']:.2f} ms,"
        f" +{rag_cpu:.0f} us gateway CPU per request"
    )
