"""What the rate-limit tests share: a model upstream whose usage they can predict, gateway processes configured for
limits (in process or on Redis), a fresh tenant with models and keys, and setting policies through LimitService.
Registered from conftest.py (`pytest_plugins`) for its fixtures: `limits_upstream` (that upstream, served on
loopback) and `limits_models` (the models on it, registered once per test module).

The upstream answers every chat call with 10 prompt tokens and min(60, max_tokens) completion tokens (so a call never
uses more than it reserved), embeddings with 8 tokens, rerank with 5, transcriptions with 4; `slow` answers after
1.5 s; `guard` (an output guardrail) answers `safe`; `nousage` reports no usage, streamed or not; `flood` streams
`FLOOD` chunks of one token each (`"tok "`), pauses, then ends without a usage; `broken` stops after those chunks,
without [DONE]; with tools it first calls the tool
whose name ends in `add`.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from aiohttp import web

from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.fakes.serve import serve_in_thread
from tests.fakes.upstream import fixed_embeddings
from tests.gateway_fixtures import start_gateway_process
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, platform_models, tenant_view
from tests.world import make_world, must

LIMITS = "switchboard.limits.v1.LimitService"
REDIS_URL = "redis://127.0.0.1:6379/0"
PROMPT = 10
FLOOD = 1500  # more than the 1024 output tokens a call that sets no max_tokens reserves
FLOOD_PAUSE = 0.5  # after the flood: a client that hangs up meanwhile is found gone at the next chunk


def _usage(payload: dict[str, Any]) -> dict[str, int]:
    wanted = payload.get("max_completion_tokens") or payload.get("max_tokens") or 60
    completion = min(60, int(wanted))
    return {"prompt_tokens": PROMPT, "completion_tokens": completion, "total_tokens": PROMPT + completion}


def _tool_call(tools: list[Any]) -> dict[str, Any] | None:
    for tool in tools:
        name = str((tool.get("function") or {}).get("name", ""))
        if name.endswith("add"):
            arguments = '{"a": 2, "b": 3}'
            return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
    return None


async def _flood(request: web.Request, base: dict[str, Any], *, breaks: bool = False) -> web.StreamResponse:
    """`FLOOD` content chunks of one token each, a pause, the last chunk and [DONE]; never a usage. One that
    `breaks` ends right after the flood, without the rest."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    chunk = {**base, "object": "chat.completion.chunk"}
    token = orjson.dumps({**chunk, "choices": [{"index": 0, "delta": {"content": "tok "}, "finish_reason": None}]})
    for _ in range(FLOOD):
        await resp.write(b"data: " + token + b"\n\n")
    if breaks:
        return resp
    await asyncio.sleep(FLOOD_PAUSE)
    last = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    with contextlib.suppress(ConnectionError):  # the gateway gave up on the stream when its client left
        await resp.write(b"data: " + orjson.dumps(last) + b"\n\n")
        await asyncio.sleep(FLOOD_PAUSE)
        await resp.write(b"data: [DONE]\n\n")
    return resp


async def _chat(request: web.Request) -> web.StreamResponse:
    payload = await request.json()
    if payload.get("model") in ("flood", "broken"):
        base = {"id": "chatcmpl-l", "created": 1, "model": payload["model"]}
        return await _flood(request, base, breaks=payload["model"] == "broken")
    if payload.get("model") == "slow":
        await asyncio.sleep(1.5)
    messages = payload.get("messages") or [{}]
    call = _tool_call(payload.get("tools") or []) if messages[-1].get("role") != "tool" else None
    usage = _usage(payload) if payload.get("model") != "nousage" else None
    message: dict[str, Any] = (
        {"role": "assistant", "content": "safe" if payload.get("model") == "guard" else "counted"}
        if call is None
        else {
            "role": "assistant",
            "content": None,
            "tool_calls": [call],
        }
    )
    finish = "stop" if call is None else "tool_calls"
    base = {"id": "chatcmpl-l", "created": 1, "model": payload.get("model")}
    if not payload.get("stream"):
        choice = {"index": 0, "finish_reason": finish, "message": message}
        answer = {**base, "object": "chat.completion", "choices": [choice]}
        return web.json_response(answer if usage is None else {**answer, "usage": usage})
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)

    async def send(chunk: dict[str, Any]) -> None:
        await resp.write(b"data: " + orjson.dumps({**base, "object": "chat.completion.chunk", **chunk}) + b"\n\n")

    delta = {"role": "assistant", "content": "counted"} if call is None else {"tool_calls": [{"index": 0, **call}]}
    await send({"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
    await send({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if usage is not None and (payload.get("stream_options") or {}).get("include_usage"):
        await send({"choices": [], "usage": usage})
    await resp.write(b"data: [DONE]\n\n")
    return resp


async def _rerank(request: web.Request) -> web.StreamResponse:
    payload = await request.json()
    results = [{"index": i, "relevance_score": 1.0 / (i + 1)} for i in range(len(payload["documents"]))]
    return web.json_response({"results": results, "usage": {"total_tokens": 5}})


async def _transcriptions(request: web.Request) -> web.StreamResponse:
    await request.read()
    return web.json_response(
        {"text": "hi", "usage": {"type": "tokens", "input_tokens": 3, "output_tokens": 1, "total_tokens": 4}}
    )


def upstream_app() -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_post("/v1/embeddings", fixed_embeddings)
    app.router.add_post("/v1/rerank", _rerank)
    app.router.add_post("/v1/audio/transcriptions", _transcriptions)
    return app


def specs(upstream: str) -> list[ModelSpec]:
    return [
        ModelSpec("lchat", upstream=upstream, upstream_model="counted"),
        ModelSpec("lchat2", upstream=upstream, upstream_model="counted"),
        ModelSpec("lslow", upstream=upstream, upstream_model="slow"),
        ModelSpec("lnousage", upstream=upstream, upstream_model="nousage"),
        ModelSpec("lflood", upstream=upstream, upstream_model="flood"),
        ModelSpec("lbroken", upstream=upstream, upstream_model="broken"),
        ModelSpec("lguard", upstream=upstream, upstream_model="guard", task=5),
        ModelSpec("lembed", upstream=upstream, upstream_model="e", task=2),
        ModelSpec("lrerank", upstream=upstream, upstream_model="r", task=3),
        ModelSpec("lwhisper", upstream=upstream, upstream_model="w", task=4, modalities=(3,)),
    ]


@dataclass
class LimitsGateway:
    base_url: str
    log_path: Path
    pid: int  # the gateway's parent process

    def workers(self) -> list[int]:
        """The pids of its worker processes now."""
        children = Path(f"/proc/{self.pid}/task/{self.pid}/children").read_text().split()
        return [int(pid) for pid in children]

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextlib.asynccontextmanager
async def limits_gateway(
    database: Database, server: Server, *, workers: int = 1, **extra: str
) -> AsyncIterator[LimitsGateway]:
    """A gateway process of its own (`SWITCHBOARD_<name>` settings in `extra`), on the run's database."""
    env = {
        "SWITCHBOARD_DATABASE_URL": database.url,
        "SWITCHBOARD_VAR_DIR": str(server.settings.var_dir),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        "SWITCHBOARD_API_KEY_CACHE_SECONDS": "1",
        "SWITCHBOARD_GATEWAY_HOST": "127.0.0.1",
        "SWITCHBOARD_GATEWAY_PORT": "0",
        "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",
        **{f"SWITCHBOARD_{k.upper()}": v for k, v in extra.items()},
    }
    log_path = Path(tempfile.mkdtemp(prefix="switchboard-limits-")) / "gateway.log"
    with log_path.open("wb") as log:
        proc = await start_gateway_process(env, workers=workers, stderr=log)
        try:
            yield LimitsGateway(proc.base_url, log_path, proc.proc.pid)
        finally:
            proc.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.proc.wait(), 60)


async def models_world(server: Server, upstream: str) -> GatewayWorld:
    """The limit tests' models (platform-owned, shared with every tenant), registered once."""
    return await platform_models(ConnectJsonCaller(server.base_url), server.admin_token, specs(upstream))


@pytest.fixture(scope="module")
def limits_upstream() -> Iterator[str]:
    with serve_in_thread(upstream_app) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
async def limits_models(server: Server, limits_upstream: str) -> GatewayWorld:
    return await models_world(server, limits_upstream)


@dataclass
class Tenant:
    """A fresh tenant (so no policy cached by an earlier test applies) and its admin's and member's tokens."""

    world: GatewayWorld
    connect: ConnectJsonCaller
    admin_token: str  # the platform operator's

    @property
    def id(self) -> str:
        return self.world.tenant_id

    async def key(self, label: str, person: str = "member") -> tuple[str, str]:
        """(key id, secret) of a new Personal (all resources) key."""
        secret = await all_resources_key(self.connect, self.world, self.world.tokens[person], label)
        return self.world.key_ids[label], secret

    async def limit(self, scope: tuple[str, str], tier: str = "LIMIT_TIER_PLATFORM", **limits: Any) -> None:
        kind, scope_id = scope
        body = {
            "tenantId": self.id,
            "tier": tier,
            "scope": {"kind": f"LIMIT_SCOPE_KIND_{kind}", "id": scope_id},
            "limits": limits,
        }
        token = self.admin_token if tier == "LIMIT_TIER_PLATFORM" else self.world.tokens["admin"]
        must(await self.connect.call(f"{LIMITS}/SetLimitPolicy", body, token=token))


async def new_tenant(server: Server, models: GatewayWorld) -> Tenant:
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    return Tenant(tenant_view(models, people), connect, server.admin_token)


async def early_in_a_minute(needed: float) -> None:
    """Wait for the next minute window when this one has less than `needed` seconds left: calls that a
    requests-per-minute limit must count together start in one window (on a loaded machine a test's calls take
    seconds, and one counted in the next minute would find the limit empty again)."""
    left = 60 - time.time() % 60
    if left < needed:
        await asyncio.sleep(left + 0.1)
