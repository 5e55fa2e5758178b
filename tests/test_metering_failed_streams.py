"""Metering of streamed chats that fail upstream or that their client cuts off, against an upstream of this module's
own. Found by probing: a stream whose upstream sent an error event at once, or a role-only chunk (no text) before
an error or a break, was metered as a 502 charged its estimated input and a token per event read (the error event
included), while the same failure through /v1/responses was charged nothing, as docs/gateway.md says a call answered
with an error is."""

from __future__ import annotations

import asyncio
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
from tests.fakes.serve import chat_upstream
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld, ModelSpec, all_resources_key, create_models
from tests.test_gateway_surface_edges import _usage_of

pytestmark = ONE_BACKEND

_ERROR = b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
_ROLE = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\n\n'  # noqa: E501
_TOKEN = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tok "}}]}\n\n'
_TOKENS = 200


async def _chat(request: web.Request) -> web.StreamResponse:
    model = orjson.loads(await request.read()).get("model")
    out = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await out.prepare(request)
    if model == "error-first":
        await out.write(_ERROR)
    elif model == "role-then-error":  # in two reads: the relay measures the text of the first read only
        await out.write(_ROLE)
        await asyncio.sleep(0.05)
        await out.write(_ERROR)
    elif model == "role-then-break":  # the body ends without [DONE]
        await out.write(_ROLE)
    elif model == "slow":
        for _ in range(_TOKENS):
            await out.write(_TOKEN)
            await asyncio.sleep(0.01)
        await out.write(b"data: [DONE]\n\n")
    return out


@pytest.fixture(scope="module")
def upstream_url() -> Iterator[str]:
    with chat_upstream(_chat) as url:
        yield url


SERVED = ("error-first", "role-then-error", "role-then-break", "slow")


@pytest_asyncio.fixture(scope="module")
async def models(server: Server, gw_world: GatewayWorld, upstream_url: str) -> dict[str, str]:
    tag = secrets.token_hex(2)
    specs = [ModelSpec(f"fs{tag}-{name}", upstream=upstream_url, upstream_model=name, task=1) for name in SERVED]
    await create_models(ConnectJsonCaller(server.base_url), server.admin_token, gw_world, specs)
    return {name: gw_world.model(f"fs{tag}-{name}") for name in SERVED}


async def _fresh_key(server: Server, gw_world: GatewayWorld) -> tuple[str, str]:
    label = f"fs-{secrets.token_hex(3)}"
    secret = await all_resources_key(ConnectJsonCaller(server.base_url), gw_world, gw_world.tokens["editor"], label)
    return secret, gw_world.key_ids[label]


@pytest.mark.parametrize("name", ["error-first", "role-then-error", "role-then-break"])
@pytest.mark.parametrize("path", ["chat/completions", "responses"])
async def test_a_stream_that_fails_upstream_before_any_text_is_charged_nothing(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, *, models: dict[str, str], name: str, path: str
) -> None:
    secret, key_id = await _fresh_key(server, gw_world)
    body: dict[str, Any] = {"model": models[name], "stream": True}
    if path == "responses":
        body["input"] = "hi " * 200
    else:
        body["messages"] = [{"role": "user", "content": "hi " * 200}]
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/{path}", headers={"Authorization": f"Bearer {secret}"}, json=body) as resp,
    ):
        answer = await resp.read()
    assert b"error" in answer, answer[-300:]
    row = await _usage_of(gateway, key_id)
    assert (row.status, row.prompt_tokens, row.completion_tokens, row.total_tokens) == (502, 0, 0, 0)


async def test_a_stream_its_client_cuts_off_is_metered_once_for_what_it_relayed(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, models: dict[str, str]
) -> None:
    secret, key_id = await _fresh_key(server, gw_world)
    body = {"model": models["slow"], "messages": [{"role": "user", "content": "hi"}], "stream": True}
    seen = 0
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{gateway.base_url}/chat/completions", headers={"Authorization": f"Bearer {secret}"}, json=body
        ) as resp,
    ):
        async for chunk in resp.content.iter_any():
            seen += chunk.count(b"tok ")
            if seen >= 20:
                break
    row = await _usage_of(gateway, key_id)  # exactly one row
    await asyncio.sleep(_TOKENS * 0.01)  # past the upstream's end: still the one row
    row = await _usage_of(gateway, key_id)
    assert row.status == 499
    assert seen <= row.completion_tokens < _TOKENS, (seen, row.completion_tokens)
    assert row.prompt_tokens > 0 and row.total_tokens == row.prompt_tokens + row.completion_tokens
