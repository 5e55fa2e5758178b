"""/v1/chat/completions against callers and upstreams that break the protocol. Each was once a bug:

- an upstream answering a non-streamed chat with HTTP 200 and `{"error": ...}` (or anything without a `choices`
  array of objects) was relayed as it was, the upstream's own error text and secrets included: it is the backend's
  failure, a friendly 502 (`gateway.surfaces._upstream.completion_choices`, shared with the guarded path);
- a message that is not an object, has no known role, or whose content is neither text nor an array of parts went
  to the model, whose refusal came back as a retryable 502 naming nothing (`[42]`) or was sent on as it was: it is a
  400 `invalid_request_error` naming `messages[i]`, `messages[i].role` or `messages[i].content`, before any model is
  called, while every shape OpenAI takes still goes through (`gateway.surfaces.chat._check_messages`);
- a `data:` event that is not JSON (an HTML page a proxy slipped into the stream) was forwarded and the stream went
  on to [DONE], so the SDK died on a raw JSONDecodeError: the stream ends with the friendly error event, which the
  SDK raises as `openai.APIError` (`gateway.streaming._event`); a Responses stream over it ends `response.failed`
  (`gateway.streaming.chat_chunks`).

A failure once a response has started is tests/test_gateway_started_responses.py's.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterator
from typing import Any

import aiohttp
import openai
import orjson
import pytest
import pytest_asyncio
from aiohttp import web

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.serve import chat_upstream
from tests.fakes.upstream import UPSTREAM_SECRET
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld, ModelSpec, create_models

pytestmark = ONE_BACKEND

FRIENDLY = "The model backend returned an invalid response."


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


async def post(gateway: Gateway, key: str, body: dict[str, Any], path: str = "chat/completions") -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/{path}", json=body, headers={"Authorization": f"Bearer {key}"}) as resp,
    ):
        return resp.status, await resp.read()


@pytest.fixture(autouse=True)
def _clean_script(fakes: Fakes) -> Iterator[None]:
    fakes.openai.script.clear()
    yield
    fakes.openai.script.clear()


# --- an upstream's 200 that is not a completion ---


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"error": {"message": f"boom {UPSTREAM_SECRET}", "type": "server_error"}}, id="error-body"),
        pytest.param({"id": "x", "object": "chat.completion", "detail": UPSTREAM_SECRET}, id="no-choices"),
        pytest.param({"id": "x", "choices": {"0": UPSTREAM_SECRET}}, id="choices-not-an-array"),
        pytest.param({"id": "x", "choices": []}, id="no-choice"),
        pytest.param({"id": "x", "choices": [UPSTREAM_SECRET]}, id="choice-not-an-object"),
    ],
)
async def test_an_upstream_200_that_is_not_a_completion_is_a_friendly_502(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, body: dict[str, Any]
) -> None:
    fakes.openai.script.append({"body": body})
    status, raw = await post(gateway, gw_world.keys["all"], {"model": gw_world.model("chat"), "messages": ask("hi")})
    assert status == 502, raw[:300]
    assert UPSTREAM_SECRET.encode() not in raw
    error = orjson.loads(raw)["error"]
    assert error["type"] == "server_error" and error["message"] == FRIENDLY, error


# --- messages ---


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        pytest.param([42], "messages[0]", id="not-an-object"),
        pytest.param([{"role": "user", "content": "hi"}, "hi"], "messages[1]", id="second-a-string"),
        pytest.param([{"content": "no role"}], "messages[0].role", id="no-role"),
        pytest.param([{"role": "robot", "content": "hi"}], "messages[0].role", id="unknown-role"),
        pytest.param([{"role": ["user"], "content": "hi"}], "messages[0].role", id="role-not-a-string"),
        pytest.param([{"role": "user", "content": 42}], "messages[0].content", id="content-a-number"),
        pytest.param([{"role": "user"}], "messages[0].content", id="no-content"),
        pytest.param([{"role": "user", "content": None}], "messages[0].content", id="user-content-null"),
        pytest.param([{"role": "assistant", "content": None}], "messages[0].content", id="assistant-says-nothing"),
        pytest.param([{"role": "user", "content": {"text": "hi"}}], "messages[0].content", id="content-an-object"),
        pytest.param([{"role": "user", "content": ["hi"]}], "messages[0].content[0]", id="part-not-an-object"),
    ],
)
async def test_a_malformed_message_is_a_400_naming_it_before_any_model_is_called(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, messages: list[Any], param: str
) -> None:
    since = len(fakes.openai.received)
    status, raw = await post(gateway, gw_world.keys["all"], {"model": gw_world.model("chat"), "messages": messages})
    assert status == 400, raw[:300]
    error = orjson.loads(raw)["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param, error
    assert len(fakes.openai.received) == since  # the model never saw it


CALL = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    "messages",
    [
        pytest.param([{"role": "system", "content": "be brief"}, *ask("hi")], id="system"),
        pytest.param([{"role": "developer", "content": "be brief"}, *ask("hi")], id="developer"),
        pytest.param([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], id="parts"),
        pytest.param(
            [
                *ask("call f"),
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "call_1", "content": "done"},
            ],
            id="tool-call-and-answer",
        ),
        pytest.param(
            [
                *ask("call f"),
                {"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}},
                {"role": "function", "name": "f", "content": "done"},
            ],
            id="legacy-function-call",
        ),
        pytest.param(
            [*ask("hi"), {"role": "assistant", "content": None, "refusal": "no"}, *ask("please")], id="refusal"
        ),
    ],
)
async def test_every_message_shape_openai_takes_still_reaches_the_model(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, messages: list[Any]
) -> None:
    status, raw = await post(gateway, gw_world.keys["all"], {"model": gw_world.model("chat"), "messages": messages})
    assert status == 200, raw[:300]
    assert (fakes.openai.last().json or {})["messages"] == messages


# --- a stream event that is not JSON ---


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    body = {"id": "chatcmpl-odd", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": [choice]}
    return b"data: " + orjson.dumps(body) + b"\n\n"


GARBAGE = b"<html><body>502 Bad Gateway</body></html>"


async def _garbage_stream(request: web.Request) -> web.StreamResponse:
    """A stream into which a proxy in front of the model slips an HTML page, then goes on to [DONE]."""
    model = str((await request.json()).get("model"))
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(_chunk(model, {"role": "assistant", "content": ""}))
    await resp.write(_chunk(model, {"content": "partial"}))
    await resp.write(b"data: " + GARBAGE + b"\n\n")
    await resp.write(_chunk(model, {"content": " and more"}, "stop"))
    usage = {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
    await resp.write(b"data: " + orjson.dumps({"id": "x", "model": model, "choices": [], "usage": usage}) + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    return resp


@pytest.fixture(scope="module")
def garbage_upstream() -> Iterator[str]:
    with chat_upstream(_garbage_stream) as url:
        yield url


@pytest_asyncio.fixture(scope="module")
async def garbage_model(server: Server, gw_world: GatewayWorld, garbage_upstream: str) -> str:
    label = f"garbage-{secrets.token_hex(2)}"
    spec = ModelSpec(label, upstream=garbage_upstream, upstream_model="garbage-event")
    await create_models(ConnectJsonCaller(server.base_url), server.admin_token, gw_world, [spec])
    await asyncio.sleep(1.2)  # past the gateway's cache of what the key may use (1 s in tests)
    return gw_world.model(label)


async def test_a_stream_event_that_is_not_json_ends_the_stream_with_the_friendly_error(
    gateway: Gateway, gw_world: GatewayWorld, garbage_model: str
) -> None:
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0)
    stream = await sdk.chat.completions.create(model=garbage_model, messages=ask("hi"), stream=True)
    got: list[str] = []
    with pytest.raises(openai.APIError) as failed:
        try:
            async for chunk in stream:
                got.append(chunk.choices[0].delta.content or "" if chunk.choices else "")
        except json.JSONDecodeError as exc:  # what the SDK raised on the forwarded page
            pytest.fail(f"the SDK could not parse an event the gateway forwarded: {exc!r} after {got!r}")
    assert failed.value.message == FRIENDLY
    assert "".join(got) == "partial"  # what came before it reached the client; nothing after it did


async def test_a_responses_stream_over_an_event_that_is_not_json_fails(
    gateway: Gateway, gw_world: GatewayWorld, garbage_model: str
) -> None:
    body = {"model": garbage_model, "input": "hi", "stream": True, "store": False}
    status, raw = await post(gateway, gw_world.keys["all"], body, path="responses")
    assert status == 200, raw[:300]
    events = [orjson.loads(line[6:]) for line in raw.split(b"\n") if line.startswith(b"data: {")]
    assert events[-1]["type"] == "response.failed", events[-1]
    assert GARBAGE not in raw
