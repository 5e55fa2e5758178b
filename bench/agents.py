"""Guarded preset agents: time to the first byte and to the first data event of a stream, for an agent without
guardrails and for agents with one and two output guardrails, all over the same fake upstream, which waits
LATENCY_MS before answering anything (the first chunk of a stream, a whole completion, a guardrail verdict).

A guarded agent buffers: its first data event can only come after the base model's whole answer and every
guardrail's verdict. The claim checked here is that this costs the guardrail calls themselves and nothing more:
`overhead = guarded - unguarded - n * direct guardrail call` should be a few milliseconds, not a multiple of the
latency. The first byte of a guarded stream (an SSE comment) comes before any of that work.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from aiohttp import web

from bench.common import Measurement, measure, running_server
from bench.gateway import _process
from server.settings import Settings
from server.tokens import PLATFORM_ROLES, mint_token

LATENCY_MS = 50
REQUESTS = 40
_CHUNK = b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
_USAGE = b'"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}'


async def _upstream(request: web.Request) -> web.StreamResponse:
    payload = orjson.loads(await request.read())
    await asyncio.sleep(LATENCY_MS / 1000)
    if payload.get("model") == "guard":
        text = "safe"
    elif not payload.get("stream"):
        text = "Hello there"
    else:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(_CHUNK + b'"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}\n\n')
        await resp.write(_CHUNK + b'"delta":{},"finish_reason":"stop"}]}\n\n')
        await resp.write(b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],')
        await resp.write(_USAGE + b"}\n\ndata: [DONE]\n\n")
        return resp
    message = {"role": "assistant", "content": text}
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": payload.get("model"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
    }
    return web.json_response(body)


@contextlib.asynccontextmanager
async def _fake() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", _upstream)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _setup(base_url: str, settings: Settings, upstream: str) -> str:
    """Base and guardrail models, three platform agents (0, 1, 2 guardrails) and a key granted them."""
    token = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

        async def call(method: str, body: dict[str, Any]) -> dict[str, Any]:
            async with http.post(f"{base_url}/platform.{method}", json=body) as resp:
                payload: dict[str, Any] = await resp.json()
                assert resp.status == 200, payload
                return payload

        for name, task, served in (
            ("base", "TASK_TYPE_TEXT_GENERATION", "base"),
            ("guard", "TASK_TYPE_GUARDRAIL", "guard"),
        ):
            deployment = {
                "name": name,
                "publicModelId": name,
                "endpointUrl": f"{upstream}/v1",
                "servedModelId": served,
                "capabilities": {"taskType": task},
                "sharing": {"shareToAll": True},
            }
            await call("modelmanager.v1.ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment})
        deployment = {
            "name": "guard2",
            "publicModelId": "guard2",
            "endpointUrl": f"{upstream}/v1",
            "servedModelId": "guard",
        }
        deployment |= {"capabilities": {"taskType": "TASK_TYPE_GUARDRAIL"}, "sharing": {"shareToAll": True}}
        await call("modelmanager.v1.ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment})
        grants = []
        for name, guards in (("agent-0", []), ("agent-1", ["guard"]), ("agent-2", ["guard", "guard2"])):
            agent: dict[str, Any] = {"name": name, "publicModelId": name, "baseModel": "base"}
            agent |= {"outputGuardrails": guards, "sharing": {"shareToAll": True}}
            await call("agents.v1.PresetAgentService/CreatePlatformPresetAgent", {"presetAgent": agent})
            grants.append({"kind": "RESOURCE_KIND_PRESET_AGENT", "name": name})
        tenant = (await call("tenants.v1.TenantService/CreateTenant", {"name": "bench"}))["tenant"]["id"]
        account = await call("tenants.v1.ServiceAccountService/CreateServiceAccount", {"tenantId": tenant, "name": "b"})
        key = await call(
            "tenants.v1.ApiKeyService/CreateApiKey",
            {
                "tenantId": tenant,
                "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
                "name": "bench",
                "serviceAccountId": account["serviceAccount"]["id"],
                "grants": grants,
            },
        )
        return str(key["secret"])


def _stream_call(
    http: aiohttp.ClientSession, url: str, key: str, model: str, first_byte: bool
) -> Callable[[], Awaitable[float]]:
    body = orjson.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": True})
    headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    async def run() -> float:
        start = time.perf_counter()
        async with http.post(url, data=body, headers=headers) as resp:
            assert resp.status == 200
            seen = None
            async for line in resp.content:
                if seen is None and (first_byte or line.startswith(b"data: {")):
                    seen = time.perf_counter() - start
            assert seen is not None
        return seen

    return run


def _direct_guard_call(http: aiohttp.ClientSession, upstream: str) -> Callable[[], Awaitable[float]]:
    body = orjson.dumps({"model": "guard", "messages": [{"role": "user", "content": "hi"}]})

    async def run() -> float:
        start = time.perf_counter()
        async with http.post(f"{upstream}/v1/chat/completions", data=body) as resp:
            await resp.read()
        return time.perf_counter() - start

    return run


async def main() -> None:
    async with running_server() as (base_url, _port, settings), _fake() as upstream:
        key = await _setup(base_url, settings, upstream)
        env = {
            "SWITCHBOARD_DATABASE_URL": settings.database_url,
            "SWITCHBOARD_VAR_DIR": str(settings.var_dir),
            "SWITCHBOARD_LOG_LEVEL": "WARNING",
            "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",  # the fake upstream is on loopback
        }
        with _process("gateway", env) as gateway:
            url = f"{gateway.url}/v1/chat/completions"
            async with aiohttp.ClientSession() as http:
                for _ in range(300):
                    with contextlib.suppress(aiohttp.ClientError, AssertionError):
                        await _stream_call(http, url, key, "agent-0", False)()
                        break
                    await asyncio.sleep(0.1)
                guard = await measure(
                    "direct guardrail call",
                    _direct_guard_call(http, upstream),
                    requests=REQUESTS,
                    concurrency=1,
                    self_timed=True,
                )
                rows: list[Measurement] = [guard]
                for model in ("agent-0", "agent-1", "agent-2"):
                    call = _stream_call(http, url, key, model, False)
                    rows.append(
                        await measure(
                            f"{model}: first data event", call, requests=REQUESTS, concurrency=1, self_timed=True
                        )
                    )
                call = _stream_call(http, url, key, "agent-2", True)
                rows.append(
                    await measure("agent-2: first byte", call, requests=REQUESTS, concurrency=1, self_timed=True)
                )
        print(f"fake upstream latency {LATENCY_MS} ms per answer; {REQUESTS} sequential streams per case (p50, ms)")
        for row in rows:
            print(f"  {row.label:<32} p50 {row.percentile(0.5):8.2f}   p99 {row.percentile(0.99):8.2f}")
        g, a0, a1, a2 = (r.percentile(0.5) for r in rows[:4])
        for n, guarded in ((1, a1), (2, a2)):
            overhead = guarded - a0 - n * g
            print(
                f"  {n} guardrail(s): guarded/unguarded {guarded / a0:.2f}x; "
                f"guarded - unguarded - {n} x direct guardrail call = {overhead:+.2f} ms"
            )
