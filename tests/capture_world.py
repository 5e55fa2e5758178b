"""What the content capture tests share: an upstream that echoes its input into its answers (so a canary sent in a
request comes back in the response), a management server and a gateway of their own at DEBUG whose logs are kept
and whose traces go to an OTLP receiver, and a scan of every table of the database for a string."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from sqlalchemy import MetaData, select

from server.crypto import SecretBox
from server.settings import Settings
from server.store.db import Database as Db
from tests.conftest import Database, Server, server_env, start_server
from tests.fakes.upstream import fixed_embeddings
from tests.gateway_fixtures import start_gateway_process
from tests.gateway_world import ModelSpec
from tests.otlp import Receiver, otlp_env

CAPTURE = "switchboard.capture.v1.CaptureService"
MAX_BODY = 4096  # the gateway's SWITCHBOARD_CAPTURE_MAX_BODY_BYTES in these tests


def _last_user_text(payload: dict[str, Any]) -> str:
    messages = payload.get("messages") or [{}]
    content = messages[-1].get("content")
    return content if isinstance(content, str) else ""


async def _chat(request: web.Request) -> web.StreamResponse:
    payload = await request.json()
    text = f"echo: {_last_user_text(payload)}"
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    base = {"id": "chatcmpl-c", "created": 1, "model": payload.get("model")}
    if not payload.get("stream"):
        choice = {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        return web.json_response({**base, "object": "chat.completion", "choices": [choice], "usage": usage})
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    half = len(text) // 2
    for piece in (text[:half], text[half:]):  # the canary is split across two events: only a join shows it whole
        delta = {"index": 0, "delta": {"content": piece}, "finish_reason": None}
        chunk = {**base, "object": "chat.completion.chunk", "choices": [delta]}
        await resp.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await asyncio.sleep(0.05)  # apart, so the gateway relays them in separate writes
    if (payload.get("stream_options") or {}).get("include_usage"):
        chunk = {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
        await resp.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    return resp


async def _rerank(request: web.Request) -> web.StreamResponse:
    payload = await request.json()
    results = [
        {"index": i, "relevance_score": 1.0 / (i + 1), "document": {"text": d}}
        for i, d in enumerate(payload["documents"])
    ]
    return web.json_response({"results": results, "usage": {"total_tokens": 5}})


async def _transcriptions(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    return web.json_response({"text": f"heard: {form.get('prompt', '')}"})


def echo_app() -> web.Application:
    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", _chat)
    app.router.add_post("/v1/embeddings", fixed_embeddings)
    app.router.add_post("/v1/rerank", _rerank)
    app.router.add_post("/v1/audio/transcriptions", _transcriptions)
    return app


def specs(upstream: str) -> list[ModelSpec]:
    return [
        ModelSpec("cchat", upstream=upstream, upstream_model="echo"),
        ModelSpec("cembed", upstream=upstream, upstream_model="e", task=2),
        ModelSpec("crerank", upstream=upstream, upstream_model="r", task=3),
        ModelSpec("cwhisper", upstream=upstream, upstream_model="w", task=4, modalities=(3,)),
    ]


@dataclass
class Stack:
    """A management server and a gateway of the tests' own (DEBUG logs kept, traces to `receiver`)."""

    management_url: str
    gateway_url: str
    logs: Path
    receiver: Receiver

    def log_text(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.logs.iterdir()))


@contextlib.asynccontextmanager
async def capture_stack(database: Database, server: Server, receiver: Receiver) -> AsyncIterator[Stack]:
    otlp = {**otlp_env(receiver), "SWITCHBOARD_LOG_LEVEL": "DEBUG"}
    logs = Path(tempfile.mkdtemp(prefix="switchboard-capture-"))
    var_dir = server.settings.var_dir  # the models' provider keys and the captures are sealed with its key
    with (logs / "management.log").open("wb") as management_log, (logs / "gateway.log").open("wb") as gateway_log:
        management = await start_server(
            server_env(database, var_dir, **otlp), stdout=management_log, stderr=management_log
        )
        env = {
            **server_env(database, var_dir, **otlp),
            "SWITCHBOARD_GATEWAY_HOST": "127.0.0.1",
            "SWITCHBOARD_GATEWAY_PORT": "0",
            "SWITCHBOARD_CAPTURE_MAX_BODY_BYTES": str(MAX_BODY),
        }
        gateway = await start_gateway_process(env, workers=1, stderr=gateway_log)
        try:
            yield Stack(f"http://127.0.0.1:{management.listener_port}", gateway.base_url, logs, receiver)
        finally:
            gateway.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(gateway.proc.wait(), 60)
            await management.stop()


def _holds(value: Any, needle: str) -> bool:
    if value is None or isinstance(value, int | float):
        return False
    if isinstance(value, bytes | bytearray | memoryview):
        return needle.encode() in bytes(value)
    if isinstance(value, str):
        return needle in value
    return needle.encode() in orjson.dumps(value, default=str)


async def tables_holding(database: Database, needle: str) -> dict[str, int]:
    """Every table of the database (reflected, so tables added later are scanned too) with the number of its rows
    where some column holds `needle`, in the clear."""
    db = Db(database.url)
    try:
        async with db.engine.connect() as connection:
            metadata = MetaData()
            await connection.run_sync(metadata.reflect)
            found: dict[str, int] = {}
            for table in metadata.sorted_tables:
                rows = (await connection.execute(select(table))).all()
                hits = sum(1 for row in rows if any(_holds(value, needle) for value in row))
                if hits:
                    found[table.name] = hits
            return found
    finally:
        await db.close()


def secret_box(settings: Settings) -> SecretBox:
    return SecretBox(settings)
