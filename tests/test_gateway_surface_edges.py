"""Embeddings and transcriptions against upstreams that answer what the usual fake never does.

A scripted upstream of this module's own (real aiohttp on loopback, in a thread, like tests/fakes) answers each
served model id its own way. What each test guards:
- an embeddings answer the gateway cannot re-encode as base64 (a `data` item that is not an object, a vector holding
  a non-number or a number past float32's range) is the backend's failure, a 502, not a 500 with a traceback;
- every shape OpenAI takes for `input` (a string, strings, token ids, token-id arrays) still reaches the upstream
  as sent, now that other shapes are refused;
- a streamed transcription (`stream=true`: server-sent events ending with `transcript.text.done`, no [DONE]) reaches
  the client event by event, is metered by the usage its done event reports (it was metered at 0 tokens: a way around
  every token limit), and one cut off upstream ends with an error event rather than passing for complete.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio
from aiohttp import web
from sqlalchemy import select

from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.serve import serve_in_thread
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, create_models

pytestmark = ONE_BACKEND

# served model id -> the body of the scripted upstream's embeddings answer
UNREADABLE = {
    "emb-item-not-object": {"object": "list", "data": [[0.5, 0.25]], "model": "x"},
    "emb-item-null": {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}, None]},
    "emb-not-numbers": {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": ["a", None]}]},
    "emb-nested": {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [[0.5], [0.25]]}]},
    # float32 holds up to ~3.4e38: packed, this one was an infinity the client decoded as part of its vector
    "emb-past-float32": {"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -1e39]}]},
}
STREAM_USAGE = {"type": "tokens", "input_tokens": 14, "output_tokens": 45, "total_tokens": 59}
# The streamed transcription's last event waits for this: a test that must see the first event before the last
# sets it only then (a gateway that buffers the stream would never show it one), the others leave it set.
RELEASED = threading.Event()
RELEASED.set()
EMBEDDED: list[Any] = []  # the `input` of each request `emb-echo` received


def _embeddings(payload: dict[str, Any]) -> dict[str, Any]:
    """`emb-echo`: one float vector an input (a token-id array being one input), as OpenAI answers."""
    given = payload["input"]
    EMBEDDED.append(given)
    single = isinstance(given, str) or isinstance(given[0], int)
    data = [
        {"object": "embedding", "index": i, "embedding": [0.5, float(i)]} for i in range(1 if single else len(given))
    ]
    return {"object": "list", "data": data, "model": "emb-echo", "usage": {"prompt_tokens": 3, "total_tokens": 3}}


async def _transcript_stream(request: web.Request, *, cut: bool) -> web.StreamResponse:
    """OpenAI's streamed transcription: delta events, then transcript.text.done with the usage (and no [DONE]); `cut`
    drops the connection after the first delta."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(b'data: {"type":"transcript.text.delta","delta":"hello"}\n\n')
    if cut:
        await asyncio.sleep(0.05)
        assert request.transport is not None
        request.transport.close()
        return resp
    await asyncio.to_thread(RELEASED.wait, 30)
    done = {"type": "transcript.text.done", "text": "hello world", "usage": STREAM_USAGE}
    await resp.write(b"data: " + orjson.dumps(done) + b"\n\n")
    return resp


async def _scripted(request: web.Request) -> web.StreamResponse:
    if request.content_type == "application/json":
        payload = orjson.loads(await request.read())
        model = payload.get("model")
        if model == "emb-echo":
            return web.json_response(_embeddings(payload))
        return web.json_response(UNREADABLE[model])
    form = await request.post()
    return await _transcript_stream(request, cut=form.get("model") == "stt-cut")


def _app() -> web.Application:
    app = web.Application()
    app.router.add_post("/v1/embeddings", _scripted)
    app.router.add_post("/v1/audio/transcriptions", _scripted)
    return app


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    with serve_in_thread(_app) as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest_asyncio.fixture(scope="module")
async def models(server: Server, gw_world: GatewayWorld, scripted_url: str) -> dict[str, str]:
    """The scripted upstream's models, registered through the management API: served id -> public id."""
    tag = secrets.token_hex(2)
    tasks = {**dict.fromkeys([*UNREADABLE, "emb-echo"], 2), "stt-stream": 4, "stt-cut": 4}  # embedding, speech
    specs = [
        ModelSpec(
            f"edge{tag}-{served}",
            upstream=scripted_url,
            upstream_model=served,
            task=task,
            modalities=(3,) if task == 4 else (1,),
        )
        for served, task in tasks.items()
    ]
    await create_models(ConnectJsonCaller(server.base_url), server.admin_token, gw_world, specs)
    return {served: gw_world.model(f"edge{tag}-{served}") for served in tasks}


async def _post(gateway: Gateway, key: str, path: str, **kw: Any) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/{path}", headers={"Authorization": f"Bearer {key}"}, **kw) as resp,
    ):
        return resp.status, orjson.loads(await resp.read())


@pytest.mark.parametrize("served", list(UNREADABLE))
async def test_a_base64_embeddings_answer_the_gateway_cannot_encode_is_a_502(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str], served: str
) -> None:
    body = {"model": models[served], "input": "x", "encoding_format": "base64"}
    status, answer = await _post(gateway, gw_world.keys["all"], "embeddings", json=body)
    assert status == 502, answer
    assert answer["error"]["type"] == "server_error" and "invalid response" in answer["error"]["message"], answer


@pytest.mark.parametrize(
    ("value", "vectors"),
    [("a text", 1), (["a", "b"], 2), ([17] * 2048, 1), ([[1, 2], [3] * 5000], 2)],
    ids=["string", "strings", "token-ids", "token-id-arrays"],
)
async def test_every_openai_input_shape_reaches_the_upstream_as_sent(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str], value: Any, vectors: int
) -> None:
    status, answer = await _post(
        gateway, gw_world.keys["all"], "embeddings", json={"model": models["emb-echo"], "input": value}
    )
    assert status == 200, answer
    assert len(answer["data"]) == vectors and EMBEDDED[-1] == value


def _form(model: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    form.add_field("model", model)
    form.add_field("file", b"RIFF" + b"\0" * 64, filename="speech.wav", content_type="audio/wav")
    form.add_field("stream", "true")
    return form


async def test_a_streamed_transcription_reaches_the_client_as_it_arrives(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    """The upstream holds its last event back until this test has seen the first: read whole first, the stream
    would show nothing until the wait below gives up."""
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    RELEASED.clear()
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.post(
                f"{gateway.base_url}/audio/transcriptions", data=_form(models["stt-stream"]), headers=headers
            ) as resp,
        ):
            assert resp.status == 200 and resp.content_type == "text/event-stream"
            first = await asyncio.wait_for(resp.content.readuntil(b"\n\n"), 20)
            RELEASED.set()
            rest = await resp.read()
    finally:
        RELEASED.set()
    assert b"transcript.text.delta" in first
    assert b"transcript.text.done" in rest and b"[DONE]" not in rest and b"error" not in rest


async def _usage_of(gateway: Gateway, key_id: str) -> UsageEventRow:
    for _ in range(200):
        async with gateway.db.read() as s:
            rows = list(await s.scalars(select(UsageEventRow).where(UsageEventRow.api_key_id == key_id)))
        if rows:
            assert len(rows) == 1
            return rows[0]
        await asyncio.sleep(0.05)
    raise AssertionError("no usage event")


async def _transcribed(gateway: Gateway, model: str, key: str) -> bytes:
    """A transcription's answer, as streamed (200)."""
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{gateway.base_url}/audio/transcriptions", data=_form(model), headers={"Authorization": f"Bearer {key}"}
        ) as resp,
    ):
        assert resp.status == 200
        return await resp.read()


async def test_a_streamed_transcription_is_metered_by_its_done_event(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    label = f"stt-{secrets.token_hex(2)}"
    secret = await all_resources_key(ConnectJsonCaller(server.base_url), gw_world, gw_world.tokens["editor"], label)
    assert b"transcript.text.done" in await _transcribed(gateway, models["stt-stream"], secret)
    row = await _usage_of(gateway, gw_world.key_ids[label])
    assert (row.prompt_tokens, row.completion_tokens, row.status) == (14, 45, 200)


async def test_a_streamed_transcription_cut_off_upstream_ends_with_an_error_event(
    gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    events = (await _transcribed(gateway, models["stt-cut"], gw_world.keys["all"])).split(b"\n\n")
    assert b"transcript.text.delta" in events[0]
    error = orjson.loads(events[1].removeprefix(b"data: "))["error"]
    assert error["type"] == "server_error" and "stopped responding" in error["message"], error
