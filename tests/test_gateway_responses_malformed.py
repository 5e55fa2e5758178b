"""/v1/responses on malformed input and malformed upstream answers: a client's content part whose text is not a
string is a 400 naming it (it was a 500 with a traceback); an upstream answer or stream chunk the gateway cannot read
is the backend's failure, a 502 or a stream ending `response.failed` (a non-object tool call was a 500, and a
streamed turn whose chunk carried a non-string `arguments` raised after the stream had started, leaving the client
waiting on an open stream with no terminal event)."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import orjson
import pytest

from tests.conftest import ONE_BACKEND
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld

pytestmark = ONE_BACKEND

# `vector_store_ids: []` opts out of the default RAG tools (docs/gateway.md), so these turns take the plain
# (loop-less) /v1/responses path whatever RAGs the key can read.
_NO_RAGS = {"type": "file_search", "vector_store_ids": []}


def _headers(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


async def _post(gateway: Gateway, path: str, key: str, body: Any) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}{path}", json=body, headers=_headers(key)) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


@pytest.mark.parametrize(
    ("item", "field"),
    [
        (
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": 5}]},
            "input[0].content[0].text",
        ),
        (
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": {"a": 1}}]},
            "input[0].content[0].text",
        ),
        (  # a user's was turned into "5" and sent on
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": 5}]},
            "input[0].content[0].text",
        ),
        (
            {"type": "function_call_output", "call_id": "c1", "output": [{"type": "input_text", "text": 7}]},
            "input[0].output[0].text",
        ),
    ],
)
async def test_responses_non_string_part_text_is_a_400_naming_the_field(
    gateway: Gateway, gw_world: GatewayWorld, item: Any, field: str
) -> None:
    body = {
        "model": gw_world.model("chat"),
        "input": [item, {"role": "user", "content": "hi"}],
        "tools": [_NO_RAGS],
        "store": False,
    }
    with gateway.logs_no_error():
        status, answer = await _post(gateway, "/responses", gw_world.keys["all"], body)
    assert status == 400, (status, answer)
    assert answer["error"]["type"] == "invalid_request_error"
    assert answer["error"]["param"] == field, answer


@pytest.mark.parametrize(
    "message",
    [
        {"tool_calls": ["not-an-object"]},
        {"tool_calls": [{"id": "c", "type": "function", "function": "not-an-object"}]},
        {"body": {"id": "chatcmpl-x", "choices": {"0": {"message": {"content": "hi"}}}}},  # choices not a list
    ],
)
async def test_responses_malformed_upstream_tool_calls_are_a_502(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, message: Any
) -> None:
    fakes.openai.script.append(message)
    body = {
        "model": gw_world.model("chat"),
        "input": "hi",
        "tools": [{"type": "function", "name": "f"}, _NO_RAGS],
        "store": False,
    }
    try:
        with gateway.logs_no_error():
            status, answer = await _post(gateway, "/responses", gw_world.keys["all"], body)
    finally:
        fakes.openai.script.clear()
    assert status == 502, (status, answer)
    assert "correlation id" not in answer["error"]["message"], answer  # the backend's failure, not an internal one


async def test_responses_stream_with_malformed_upstream_chunk_ends_instead_of_hanging(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    fakes.openai.script.append(
        {"tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": [1, 2, 3, 4, 5]}}]}
    )
    body = {
        "model": gw_world.model("chat"),
        "input": "hi",
        "tools": [{"type": "function", "name": "f"}, _NO_RAGS],
        "stream": True,
        "store": False,
    }
    raw, ended = b"", False
    start = len(gateway.log())
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.post(f"{gateway.base_url}/responses", json=body, headers=_headers(gw_world.keys["all"])) as resp,
        ):
            assert resp.status == 200
            try:
                async with asyncio.timeout(15):
                    async for piece in resp.content.iter_any():
                        raw += piece
                    ended = True
            except TimeoutError:
                pass
            except aiohttp.ClientPayloadError:
                ended = True  # cut off: at least the client is not left waiting
    finally:
        fakes.openai.script.clear()
    assert ended, f"the stream neither ended nor closed within 15 s; it sent: {raw[-400:]!r}"
    assert b"response.failed" in raw, raw[-400:]
    assert "Traceback" not in gateway.log()[start:]


async def test_a_streamed_usage_with_counts_that_are_not_integers_completes_with_zero_counts(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    """The usage only informs: counts the upstream sent as something else read as 0 (a string raised once the stream
    had started)."""
    fakes.openai.script.append({"content": "counted", "usage": {"prompt_tokens": "7", "completion_tokens": -2}})
    body = {"model": gw_world.model("chat"), "input": "hi", "tools": [_NO_RAGS], "stream": True, "store": False}
    try:
        with gateway.logs_no_error():
            async with (
                aiohttp.ClientSession() as http,
                http.post(f"{gateway.base_url}/responses", json=body, headers=_headers(gw_world.keys["all"])) as resp,
            ):
                raw = await asyncio.wait_for(resp.read(), 15)
    finally:
        fakes.openai.script.clear()
    completed = [line for line in raw.split(b"\n") if line.startswith(b"data: ") and b"response.completed" in line]
    assert len(completed) == 1, raw[-400:]
    usage = orjson.loads(completed[0][6:])["response"]["usage"]
    assert (usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]) == (0, 0, 0)
