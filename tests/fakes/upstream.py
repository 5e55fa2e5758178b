"""A fake model provider speaking the OpenAI wire format, at OpenAI paths (`/v1/...`) and Azure paths
(`/openai/deployments/{deployment}/...?api-version=`), recording every request it receives.

Behaviour is chosen by the model id the gateway sends (or the Azure deployment in the path):
- `fail-500` / `fail-400` / `fail-429`: answer that status with a body full of upstream secrets;
- `break-stream`: stream two chunks, then drop the connection;
- `slow-stream`: stream six pieces a second apart (a long generation in flight when a replica shuts down);
- `linger-stream`: after [DONE], hold the body open (its end unsent) until `lingering` is cleared (at most 10 s);
- `error-stream`: stream one chunk, then an upstream error event;
- `crlf-stream`: a stream framed with CRLF line endings;
- `snapshot-stream`: stream chunks naming a dated snapshot (`snapshot-stream-2026-01-01`), not the id it was sent;
- `floats-only`: embeddings always as float lists, whatever encoding was asked;
- `echo`: answers with the text of the last user message;
- `guard-llama` / `guard-json` / `guard-garbage`: output guardrails judging the last message — Llama-Guard style
  (`unsafe\nS1` when it contains FORBIDDEN-A, else `safe`), JSON (`{"allowed": false, ...}` when it contains
  FORBIDDEN-B) and an unrecognised verdict;
- anything else: a deterministic answer ("Hello from <model>"; tools → a call of the first tool; after a tool message,
  "The tool said: <its content>").
`script` (assistant messages, e.g. tool calls) answers the next chat requests in order (streamed ones as chunks),
before any of the above: a test scripts a model that calls tools the way it wants (`delay_seconds` in an entry:
answer that much later; `usage`: report that usage instead of the usual one; `finish_reason`: end with that one, e.g.
`length`, instead of `stop` or `tool_calls`; `body`: answer exactly that, unstreamed).
`fixed_embeddings` is a bare /v1/embeddings handler for the small stand-in apps of tests/capture_world.py and
tests/limits_world.py.
"""

from __future__ import annotations

import asyncio
import base64
import threading
import time
from array import array
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

UPSTREAM_SECRET = "UPSTREAM-INTERNAL-DETAIL-sk-live-0000"
PROMPT_TOKENS = 7
COMPLETION_TOKENS = 3
SLOW_STREAM_PIECES = ("Slowly", " ", "and", " ", "surely", ".")


@dataclass
class Received:
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: dict[str, Any] | None = None
    form: dict[str, Any] = field(default_factory=dict)


class FakeUpstream:
    def __init__(self, name: str = "fake") -> None:
        self.name = name
        self.received: list[Received] = []
        self.script: list[dict[str, Any]] = []
        self.lingering = threading.Event()  # set while `linger-stream` streams hold their ends back

    def last(self) -> Received:
        return self.received[-1]

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024 * 1024)
        for prefix in ("/v1", "/openai/deployments/{deployment}"):
            app.router.add_post(f"{prefix}/chat/completions", self.chat)
            app.router.add_post(f"{prefix}/embeddings", self.embeddings)
            app.router.add_post(f"{prefix}/audio/transcriptions", self.transcriptions)
        app.router.add_post("/v1/rerank", self.rerank)
        return app

    async def _record(self, request: web.Request) -> Received:
        rec = Received(request.path, dict(request.query), {k.lower(): v for k, v in request.headers.items()})
        if request.content_type == "application/json":
            rec.json = orjson.loads(await request.read())
        self.received.append(rec)
        return rec

    @staticmethod
    def _model(request: web.Request, rec: Received) -> str:
        return request.match_info.get("deployment") or str((rec.json or rec.form).get("model", ""))

    @staticmethod
    def _failure(model: str) -> web.Response | None:
        for status in (400, 429, 500):
            if model == f"fail-{status}":
                body = {"error": {"message": f"boom {UPSTREAM_SECRET}", "type": "upstream"}}
                return web.json_response(body, status=status, headers={"x-upstream-secret": UPSTREAM_SECRET})
        return None

    async def chat(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        payload = rec.json or {}
        model = self._model(request, rec)
        failure = self._failure(model)
        if failure is not None:
            return failure
        if self.script:
            scripted = dict(self.script.pop(0))
            await asyncio.sleep(float(scripted.pop("delay_seconds", 0)))  # a slow model, when a test asks for one
            usage = scripted.pop("usage", None) or _usage()  # what it reports, when a test sets it
            finish = scripted.pop("finish_reason", None)
            if "body" in scripted:  # a whole answer, as it is (a test of answers of the wrong shape)
                return web.json_response(scripted["body"])
            if payload.get("stream"):
                return await self._stream_scripted(request, payload, model, scripted, usage, finish=finish)
            return web.json_response(_completion(model, scripted, usage, finish=finish))
        tools = payload.get("tools") or []
        messages = payload.get("messages") or [{}]
        if messages[-1].get("role") == "tool":  # a tool answered: now the model answers in words
            tools = []
        if payload.get("stream"):
            return await self._stream(request, payload, model, tools)
        text = (
            f"Hello from {model}" if messages[-1].get("role") != "tool" else f"The tool said: {messages[-1]['content']}"
        )
        text = _scripted(model, messages) or text
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
        finish = "stop"
        if tools:
            message = {"role": "assistant", "content": None, "tool_calls": [_tool_call(tools)]}
            finish = "tool_calls"
        body = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None, "message": message}],
            "usage": _usage(),
        }
        return web.json_response(body)

    async def _stream(
        self, request: web.Request, payload: dict[str, Any], model: str, tools: list[Any]
    ) -> web.StreamResponse:
        include_usage = bool((payload.get("stream_options") or {}).get("include_usage"))
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        named = f"{model}-2026-01-01" if model == "snapshot-stream" else model
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": named}
        extra = {"usage": None} if include_usage else {}

        end = b"\r\n\r\n" if model == "crlf-stream" else b"\n\n"

        async def send(choices: list[Any], **more: Any) -> None:
            await resp.write(b"data: " + orjson.dumps({**base, "choices": choices, **extra, **more}) + end)

        await send([{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}])
        if model == "error-stream":
            await resp.write(b'data: {"error": {"message": "' + UPSTREAM_SECRET.encode() + b'"}}\n\n')
            return resp
        if tools:
            call = _tool_call(tools)
            first = {
                "index": 0,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            await send([{"index": 0, "delta": {"tool_calls": [first]}, "finish_reason": None}])
            args = call["function"]["arguments"]
            for part in (args[:5], args[5:]):
                delta = {"tool_calls": [{"index": 0, "function": {"arguments": part}}]}
                await send([{"index": 0, "delta": delta, "finish_reason": None}])
            await send([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}])
        else:
            messages = payload.get("messages") or [{}]
            scripted = _scripted(model, messages)
            if not scripted and messages[-1].get("role") == "tool":
                scripted = f"The tool said: {messages[-1]['content']}"
            pieces: tuple[str, ...] = (scripted,) if scripted else ("Hello", " from ", model)
            if model == "slow-stream":
                pieces = SLOW_STREAM_PIECES
            for piece in pieces:
                if model == "slow-stream":
                    await asyncio.sleep(1.0)
                await send([{"index": 0, "delta": {"content": piece}, "finish_reason": None}])
                if model == "break-stream" and piece == " from ":
                    await asyncio.sleep(0.05)
                    assert request.transport is not None
                    request.transport.close()
                    return resp
            await send([{"index": 0, "delta": {}, "finish_reason": "stop"}])
        if include_usage:
            await resp.write(
                b": a comment line\n" + b"data: " + orjson.dumps({**base, "choices": [], "usage": _usage()}) + end
            )
        await resp.write(b"data: [DONE]" + end)
        if model == "linger-stream":
            await self._linger()
        return resp

    async def _linger(self) -> None:
        """Hold a stream's end back until a test clears `lingering` (10 s at most)."""
        self.lingering.set()
        for _ in range(1000):
            if not self.lingering.is_set():
                return
            await asyncio.sleep(0.01)

    async def _stream_scripted(
        self,
        request: web.Request,
        payload: dict[str, Any],
        model: str,
        message: dict[str, Any],
        usage: Any,
        *,
        finish: str | None = None,
    ) -> web.StreamResponse:
        """A scripted answer as a stream: its text in two pieces, each tool call as a name delta then its arguments
        in two pieces."""
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": model}

        async def send(delta: dict[str, Any], finish: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "finish_reason": finish}
            await resp.write(b"data: " + orjson.dumps({**base, "choices": [choice]}) + b"\n\n")

        await send({"role": "assistant", "content": ""})
        text = str(message.get("content") or "")
        for piece in (text[: len(text) // 2], text[len(text) // 2 :]) if text else ():
            await send({"content": piece})
        calls = message.get("tool_calls") or []
        for i, call in enumerate(calls):
            function = call["function"]
            await send(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": function["name"], "arguments": ""},
                        }
                    ]
                }
            )
            args = function["arguments"]
            for part in (args[:3], args[3:]):
                await send({"tool_calls": [{"index": i, "function": {"arguments": part}}]})
        await send({}, finish or ("tool_calls" if calls else "stop"))
        if (payload.get("stream_options") or {}).get("include_usage"):
            await resp.write(b"data: " + orjson.dumps({**base, "choices": [], "usage": usage}) + b"\n\n")
        await resp.write(b"data: [DONE]\n\n")
        return resp

    async def embeddings(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        payload = rec.json or {}
        failure = self._failure(self._model(request, rec))
        if failure is not None:
            return failure
        inputs = payload["input"] if isinstance(payload["input"], list) else [payload["input"]]
        data = []
        for i, text in enumerate(inputs):
            vector = [float(len(text)), 0.5, -1.0, float(i)]
            embedding: Any = vector
            if payload.get("encoding_format") == "base64" and self._model(request, rec) != "floats-only":
                embedding = base64.b64encode(array("f", vector).tobytes()).decode()
            data.append({"object": "embedding", "index": i, "embedding": embedding})
        tokens = sum(len(str(t)) for t in inputs)
        body = {
            "object": "list",
            "data": data,
            "model": self._model(request, rec),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
        return web.json_response(body)

    async def rerank(self, request: web.Request) -> web.StreamResponse:
        rec = await self._record(request)
        payload = rec.json or {}
        failure = self._failure(self._model(request, rec))
        if failure is not None:
            return failure
        query_words = set(payload["query"].lower().split())
        docs = [d if isinstance(d, str) else d.get("text", "") for d in payload["documents"]]
        overlap = [len(query_words & set(d.lower().split())) / 10 for d in docs]
        scored = [
            {"index": i, "document": {"text": docs[i]}, "relevance_score": overlap[i]}
            for i in sorted(range(len(docs)), key=lambda i: -overlap[i])
        ]
        if payload.get("top_n"):
            scored = scored[: payload["top_n"]]
        body = {
            "id": "rerank-fake",
            "model": payload.get("model"),
            "results": scored,
            "usage": {"prompt_tokens": 11, "total_tokens": 11},
        }
        return web.json_response(body)

    async def transcriptions(self, request: web.Request) -> web.StreamResponse:
        rec = Received(request.path, dict(request.query), {k.lower(): v for k, v in request.headers.items()})
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            value = await part.read()  # type: ignore[union-attr]
            name = part.name or ""  # type: ignore[union-attr]
            if part.filename:  # type: ignore[union-attr]
                rec.form[name] = {"filename": part.filename, "size": len(value)}  # type: ignore[union-attr]
            else:
                rec.form[name] = value.decode()
        self.received.append(rec)
        failure = self._failure(self._model(request, rec))
        if failure is not None:
            return failure
        fmt = rec.form.get("response_format", "json")
        text = "hello world"
        if fmt == "text":
            return web.Response(text=text + "\n", content_type="text/plain")
        if fmt == "srt":
            return web.Response(text=f"1\n00:00:00,000 --> 00:00:01,000\n{text}\n\n", content_type="text/plain")
        if fmt == "vtt":
            return web.Response(text=f"WEBVTT\n\n00:00:00.000 --> 00:00:01.000\n{text}\n\n", content_type="text/plain")
        if fmt == "verbose_json":
            segment = {
                "id": 0,
                "seek": 0,
                "start": 0.0,
                "end": 1.0,
                "text": text,
                "tokens": [1, 2],
                "temperature": 0.0,
                "avg_logprob": -0.1,
                "compression_ratio": 1.0,
                "no_speech_prob": 0.0,
            }
            return web.json_response(
                {
                    "task": "transcribe",
                    "language": "english",
                    "duration": 1.0,
                    "text": text,
                    "segments": [segment],
                    "words": [{"word": "hello", "start": 0.0, "end": 0.5}],
                }
            )
        usage = {"type": "tokens", "input_tokens": 20, "output_tokens": 2, "total_tokens": 22}
        # Some servers (vLLM) name their model in the answer; the gateway must show the id the client asked for.
        return web.json_response({"text": text, "usage": usage, "model": rec.form.get("model")})


def _scripted(model: str, messages: list[Any]) -> str | None:
    """The answer of the echo model and of the fake guardrails (see the module docstring)."""
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    content = str(last.get("content") or "")
    if model == "echo":
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        return str(users[-1].get("content") or "") if users else ""
    if model == "guard-llama":
        return "unsafe\nS1,S10" if "FORBIDDEN-A" in content else "safe"
    if model == "guard-json":
        if "FORBIDDEN-B" in content:
            return orjson.dumps({"allowed": False, "reason": "mentions B"}).decode()
        return '{"allowed": true}'
    if model == "guard-garbage":
        return "perhaps"
    return None


def _completion(model: str, message: dict[str, Any], usage: Any, *, finish: str | None = None) -> dict[str, Any]:
    message = {"role": "assistant", "content": None, **message}
    finish = finish or ("tool_calls" if message.get("tool_calls") else "stop")
    choice = {"index": 0, "finish_reason": finish, "logprobs": None, "message": message}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [choice],
        "usage": usage,
    }


def tool_calls(*calls: tuple[str, str]) -> dict[str, Any]:
    """A scripted assistant message calling these (name, arguments) tools."""
    return {
        "tool_calls": [
            {"id": f"call_s{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(calls)
        ]
    }


def _usage() -> dict[str, int]:
    return {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    }


def _tool_call(tools: list[Any]) -> dict[str, Any]:
    name = tools[0]["function"]["name"]
    return {"id": "call_1", "type": "function", "function": {"name": name, "arguments": '{"city": "Paris"}'}}


async def fixed_embeddings(request: web.Request) -> web.StreamResponse:
    """/v1/embeddings of a stand-in model: one fixed 2-d vector an input, 8 prompt tokens."""
    payload = await request.json()
    count = len(payload["input"]) if isinstance(payload["input"], list) else 1
    data = [{"object": "embedding", "index": i, "embedding": [0.5, 0.25]} for i in range(count)]
    return web.json_response({"object": "list", "data": data, "usage": {"prompt_tokens": 8, "total_tokens": 8}})
