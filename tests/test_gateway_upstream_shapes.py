"""/v1 surfaces against an upstream of this module's own that answers what the shared fake never does. Each was
found by probing:

- an upstream's HTTP 200 carrying its own `{"error": ...}` (or, for a transcription, a proxy's HTML page) was relayed
  to the client as a 200, the upstream's text and secrets included: embeddings, rerank and transcriptions now check
  the answer's shape as chat does (`gateway.surfaces._upstream.listed`) and answer a friendly 502;
- a call answered with a 502 (an unreadable vector, a completion without choices) was charged the usage its upstream
  reported; a non-streamed completion without usage was metered as 0 tokens (a stream cut off before its usage is
  estimated from its input and text, and so is it now: `Call.count_answer`);
- client mistakes a model server refuses (tools or response_format of the wrong type, a tool message without its
  tool_call_id, rerank documents without text, a transcription temperature that is no number, a file part's
  Content-Type that is not UTF-8) came back as a retryable 502 naming nothing, or a 500: they are 400s naming the
  param.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio
from aiohttp import web

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.serve import serve_in_thread
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, create_models
from tests.test_gateway_surface_edges import _usage_of

pytestmark = ONE_BACKEND

SECRET = "PROBE-UPSTREAM-SECRET-sk-live-4242"
ERROR_BODY = {"error": {"message": f"boom {SECRET}", "type": "upstream_error", "code": "x"}}
HTML = f"<html><body>502 Bad Gateway nginx {SECRET}</body></html>"


def _strict_chat(payload: dict[str, Any]) -> web.Response | None:
    """What OpenAI (and vLLM's pydantic models) refuse with a 400."""
    bad = None
    if "tools" in payload and not isinstance(payload["tools"], list):
        bad = "tools"
    if "response_format" in payload and not isinstance(payload["response_format"], dict):
        bad = "response_format"
    for m in payload.get("messages") or []:
        if isinstance(m, dict) and m.get("role") == "tool" and "tool_call_id" not in m:
            bad = "messages"
    if bad:
        body = {"error": {"message": f"invalid {bad} {SECRET}", "type": "invalid_request_error", "param": bad}}
        return web.json_response(body, status=400)
    return None


def _completion(model: str, usage: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-p",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "x" * 400}}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


async def _json(request: web.Request) -> web.StreamResponse:
    payload = orjson.loads(await request.read())
    model = payload.get("model")
    if model == "err200":
        return web.json_response(ERROR_BODY)
    if model == "html200":
        return web.Response(text=HTML, content_type="text/html")
    if model == "nochoice-usage":
        return web.json_response({"id": "x", "choices": [], "usage": {"prompt_tokens": 50, "total_tokens": 50}})
    if model == "emb-bad-usage":
        data = [{"object": "embedding", "index": 0, "embedding": ["a", None]}]
        return web.json_response({"object": "list", "data": data, "usage": {"prompt_tokens": 40, "total_tokens": 40}})
    if request.path.endswith("/chat/completions"):
        refused = _strict_chat(payload)
        if refused is not None:
            return refused
        return web.json_response(_completion(model, None if model == "no-usage" else {"prompt_tokens": 5}))
    if request.path.endswith("/rerank"):
        docs = payload["documents"]
        if not all(isinstance(d, str) or isinstance(d.get("text"), str) for d in docs):
            return web.json_response({"error": {"message": f"bad documents {SECRET}"}}, status=400)
        results = [{"index": i, "relevance_score": 1.0 / (i + 1), "document": {"text": "t"}} for i in range(len(docs))]
        return web.json_response({"id": "r", "model": model, "results": results, "usage": {"total_tokens": 3}})
    data = [{"object": "embedding", "index": 0, "embedding": [0.5, 0.25]}]
    return web.json_response({"object": "list", "data": data, "model": model, "usage": {"prompt_tokens": 2}})


async def _transcribe(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    model = form.get("model")
    temperature = form.get("temperature")
    if temperature is not None:
        try:
            float(str(temperature))
        except ValueError:
            return web.json_response({"error": {"message": f"bad temperature {SECRET}"}}, status=400)
    if model == "err200":
        return web.json_response(ERROR_BODY)
    if model == "html200":
        return web.Response(text=HTML, content_type="text/html")
    return web.json_response({"text": "hello"})


def _app() -> web.Application:
    app = web.Application()
    for path in ("chat/completions", "embeddings", "rerank"):
        app.router.add_post(f"/v1/{path}", _json)
    app.router.add_post("/v1/audio/transcriptions", _transcribe)
    return app


@pytest.fixture(scope="module")
def probe_url() -> Iterator[str]:
    with serve_in_thread(_app) as port:
        yield f"http://127.0.0.1:{port}/v1"


SERVED = {
    # public suffix: (served id, task)
    "emb-err200": ("err200", 2),
    "rr-err200": ("err200", 3),
    "stt-err200": ("err200", 4),
    "stt-html200": ("html200", 4),
    "rr-ok": ("rr-ok", 3),
    "stt-ok": ("stt-ok", 4),
    "chat-strict": ("strict", 1),
    "chat-nousage": ("no-usage", 1),
    "chat-nochoice": ("nochoice-usage", 1),
    "emb-bad": ("emb-bad-usage", 2),
}


@pytest_asyncio.fixture(scope="module")
async def models(server: Server, gw_world: GatewayWorld, probe_url: str) -> dict[str, str]:
    tag = secrets.token_hex(2)
    specs = [
        ModelSpec(
            f"p{tag}-{name}",
            upstream=probe_url,
            upstream_model=served,
            task=task,
            modalities=(3,) if task == 4 else (1,),
        )
        for name, (served, task) in SERVED.items()
    ]
    await create_models(ConnectJsonCaller(server.base_url), server.admin_token, gw_world, specs)
    return {name: gw_world.model(f"p{tag}-{name}") for name in SERVED}


async def _post(
    gateway: Gateway, key: str, path: str, headers: dict[str, str] | None = None, **kw: Any
) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {key}", **(headers or {})}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/{path}", headers=headers, **kw) as resp,
    ):
        return resp.status, await resp.read()


def _form(model: str, **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("model", model)
    form.add_field("file", b"RIFF" + b"\0" * 64, filename="speech.wav", content_type="audio/wav")
    for name, value in fields.items():
        form.add_field(name, value)
    return form


def _friendly_502(status: int, raw: bytes) -> None:
    assert status == 502, (status, raw[:300])
    assert SECRET.encode() not in raw, raw[:300]
    assert orjson.loads(raw)["error"]["type"] == "server_error"


# --- an upstream's 200 that carries its own error body ---


async def test_embeddings_upstream_200_error_body_is_a_friendly_502(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    body = {"model": models["emb-err200"], "input": "hi"}
    status, raw = await _post(gateway, gw_world.keys["all"], "embeddings", json=body)
    _friendly_502(status, raw)


async def test_rerank_upstream_200_error_body_is_a_friendly_502(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    body = {"model": models["rr-err200"], "query": "q", "documents": ["a", "b"]}
    status, raw = await _post(gateway, gw_world.keys["all"], "rerank", json=body)
    _friendly_502(status, raw)


@pytest.mark.parametrize("served", ["stt-err200", "stt-html200"])
async def test_transcription_upstream_200_that_is_not_a_transcript_is_a_friendly_502(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str], served: str
) -> None:
    status, raw = await _post(gateway, gw_world.keys["all"], "audio/transcriptions", data=_form(models[served]))
    _friendly_502(status, raw)


# --- client mistakes forwarded upstream come back as a 502 blaming the backend ---


@pytest.mark.parametrize(
    "documents",
    [pytest.param([{"text": 5}], id="text-a-number"), pytest.param([{"title": "no text"}], id="no-text")],
)
async def test_rerank_document_objects_without_text_are_a_400_naming_documents(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str], documents: list[Any]
) -> None:
    body = {"model": models["rr-ok"], "query": "q", "documents": documents}
    status, raw = await _post(gateway, gw_world.keys["all"], "rerank", json=body)
    assert status == 400, (status, raw[:300])
    assert orjson.loads(raw)["error"]["param"] == "documents"


async def test_transcription_temperature_not_a_number_is_a_400_naming_it(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    form = _form(models["stt-ok"], temperature="hot")
    status, raw = await _post(gateway, gw_world.keys["all"], "audio/transcriptions", data=form)
    assert status == 400, (status, raw[:300])
    assert orjson.loads(raw)["error"]["param"] == "temperature"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        pytest.param({"tools": "get_weather"}, "tools", id="tools-not-an-array"),
        pytest.param({"response_format": "json"}, "response_format", id="response-format-a-string"),
        pytest.param(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
                    },
                    {"role": "tool", "content": "42"},
                ]
            },
            "messages[2]",
            id="tool-message-without-tool-call-id",
        ),
    ],
)
async def test_chat_client_mistakes_are_a_400_naming_the_param(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str], extra: dict[str, Any], param: str
) -> None:
    body = {"model": models["chat-strict"], "messages": [{"role": "user", "content": "hi"}], **extra}
    status, raw = await _post(gateway, gw_world.keys["all"], "chat/completions", json=body)
    assert status == 400, (status, raw[:300])
    assert orjson.loads(raw)["error"]["param"].startswith(param)


# --- metering ---


async def _fresh_key(server: Server, gw_world: GatewayWorld) -> tuple[str, str]:
    label = f"pe-{secrets.token_hex(3)}"
    secret = await all_resources_key(ConnectJsonCaller(server.base_url), gw_world, gw_world.tokens["editor"], label)
    return secret, gw_world.key_ids[label]


async def test_an_embeddings_upstream_error_body_is_metered_as_a_failure(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    secret, key_id = await _fresh_key(server, gw_world)
    await _post(gateway, secret, "embeddings", json={"model": models["emb-err200"], "input": "hi"})
    row = await _usage_of(gateway, key_id)
    assert row.status == 502, row.status


@pytest.mark.parametrize(
    ("path", "name", "body"),
    [
        pytest.param("embeddings", "emb-bad", {"input": "hi", "encoding_format": "base64"}, id="embeddings-unreadable"),
        pytest.param(
            "chat/completions", "chat-nochoice", {"messages": [{"role": "user", "content": "hi"}]}, id="chat-no-choices"
        ),
    ],
)
async def test_a_call_answered_with_a_502_is_not_charged_tokens(
    server: Server,
    gateway: Gateway,
    gw_world: GatewayWorld,
    *,
    models: dict[str, str],
    path: str,
    name: str,
    body: dict[str, Any],
) -> None:
    """The f500 convention (tests/test_gateway_metering.py): a failed call is metered with 0 tokens."""
    secret, key_id = await _fresh_key(server, gw_world)
    status, raw = await _post(gateway, secret, path, json={"model": models[name], **body})
    assert status == 502, raw[:300]
    row = await _usage_of(gateway, key_id)
    assert (row.status, row.total_tokens) == (502, 0), (row.status, row.total_tokens, row.embedding_tokens)


async def test_a_non_streamed_answer_without_usage_is_not_metered_as_zero_tokens(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    """A stream whose usage never arrived is metered with the estimate of its input and relayed text (docs/gateway.md);
    the same answer unstreamed (400 characters of text) is metered as 0 tokens: a free call."""
    secret, key_id = await _fresh_key(server, gw_world)
    body = {"model": models["chat-nousage"], "messages": [{"role": "user", "content": "hi " * 200}]}
    status, raw = await _post(gateway, secret, "chat/completions", json=body)
    assert status == 200, raw[:300]
    row = await _usage_of(gateway, key_id)
    assert row.total_tokens > 0, (row.prompt_tokens, row.completion_tokens)


async def test_a_file_part_content_type_that_is_not_utf8_is_a_400_not_a_500(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    body = (
        b'--b\r\nContent-Disposition: form-data; name="model"\r\n\r\n' + models["stt-ok"].encode() + b"\r\n"
        b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n'
        b"Content-Type: audio/wav\xff\xfe\r\n\r\nRIFF0000\r\n--b--\r\n"
    )
    headers = {"Content-Type": "multipart/form-data; boundary=b"}
    status, raw = await _post(gateway, gw_world.keys["all"], "audio/transcriptions", data=body, headers=headers)
    assert status == 400, (status, raw[:300])
    assert orjson.loads(raw)["error"]["param"] == "file"
