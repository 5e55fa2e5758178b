"""Requests aiohttp cannot parse (a malformed request line or header line, headers over 8 KB, broken chunked
framing, both Content-Length and Transfer-Encoding) are answered by gateway.parse_errors before any middleware runs:
with an OpenAI error body and, as every other gateway answer, an `x-request-id`, which they lacked. The log line for
such a refusal names that id, so an operator can find the one a client reports (the gateway's listener in-process,
logging at INFO; the shared gateway logs at WARNING). aiohttp's 417 for an unknown `Expect`, answered before the
gateway's middleware, had no id either.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio
from aiohttp import web

from gateway.parse_errors import listen
from tests.conftest import ONE_BACKEND
from tests.gateway_fixtures import Gateway
from tests.rawhttp import RawResponse, raw_exchange

REQUEST_ID = re.compile(r"req_[0-9a-f]{24}")
MALFORMED = {
    "request line": b"NOT A REQUEST\r\n\r\n",
    "header line without a colon": b"GET /v1/models HTTP/1.1\r\nHost: gw\r\nno colon here\r\n\r\n",
    "headers over 8 KB": b"GET /v1/models HTTP/1.1\r\nHost: gw\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n",
    "chunk size": (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n"
    ),
    "length and chunked": (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\n{}\r\n0\r\n\r\n"
    ),
}


def _refusal(answer: RawResponse) -> str:
    """The answer's request id, once its status and OpenAI error body are checked."""
    assert answer.status == 400, answer
    assert answer.headers["content-type"].startswith("application/json"), answer
    error: dict[str, Any] = orjson.loads(answer.body)["error"]
    assert error["type"] == "invalid_request_error" and "could not parse" in error["message"], error
    assert answer.headers["x-should-retry"] == "false", answer
    request_id = answer.headers.get("x-request-id", "")
    assert REQUEST_ID.fullmatch(request_id), answer
    return request_id


@ONE_BACKEND
@pytest.mark.parametrize("malformed", MALFORMED)
async def test_an_unparsable_request_is_answered_with_a_request_id(malformed: str, gateway: Gateway) -> None:
    url = gateway.base_url.removesuffix("/v1")
    with gateway.logs_no_error():
        first = _refusal(await raw_exchange(url, MALFORMED[malformed]))
        second = _refusal(await raw_exchange(url, MALFORMED[malformed]))
    assert first != second  # a fresh one each


@ONE_BACKEND
async def test_an_unknown_expectation_is_answered_with_a_request_id(gateway: Gateway) -> None:
    url = gateway.base_url.removesuffix("/v1")
    request = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nExpect: a-teapot\r\nContent-Length: 0\r\n\r\n"
    with gateway.logs_no_error():
        answer = await raw_exchange(url, request)
    assert answer.status == 417, answer
    assert REQUEST_ID.fullmatch(answer.headers.get("x-request-id", "")), answer


@pytest_asyncio.fixture
async def listener() -> AsyncIterator[str]:
    """The gateway's listener (gateway.parse_errors.listen) over an app with one route; yields its base URL."""

    async def hello(request: web.Request) -> web.Response:
        return web.Response(text="hello")

    app = web.Application()
    app.router.add_get("/hello", hello)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    server = await listen(runner, "127.0.0.1", 0, backlog=16, header_timeout=10.0, max_connections=16)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        await runner.cleanup()
        await asyncio.wait_for(server.wait_closed(), 10)


@pytest.mark.parametrize("malformed", ["request line", "chunk size"])
async def test_the_log_line_names_the_answer_s_request_id(
    malformed: str, listener: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="switchboard.gateway"):
        request_id = _refusal(await raw_exchange(listener, MALFORMED[malformed]))
    lines = [r.getMessage() for r in caplog.records if r.name == "switchboard.gateway"]
    assert [line for line in lines if "unparsable" in line and request_id in line], lines
