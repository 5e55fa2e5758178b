"""A failure once a response has started (its status and headers sent, a stream's first events perhaps too) can no
longer be answered with an error response. On a bare app: the gateway's middleware and response hook around one
handler, so each rule is proved on its own path, whichever surface meets it. Each was once a bug:

- a handler failing after its response had started made the middleware write a whole second HTTP response
  (`HTTP/1.1 500 ...`) into the open chunked body, which clients read as broken framing: the connection is closed
  instead, the body left short of its last chunk (every HTTP client reports that as a failure, never a complete
  answer), counted as a 500, and logged by the failure's type and place, never its text, which may quote what the
  model sent (`gateway.middleware._abandon`);
- a guarded agent's stream whose replay of the checked answer failed let the failure escape the handler, so the
  stream got no error event (and met the bug above): the replay is inside the stream's failure handling, and the
  stream ends with an error event like any other failure (`gateway.surfaces.agent_chat._stream`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from types import SimpleNamespace
from typing import Any, cast

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from gateway.context import METER, METRICS, TRACING
from gateway.event_stream import EventStream
from gateway.middleware import middlewares, on_response_prepare
from gateway.surfaces import agent_chat
from server.errors import InvalidArgument

MODEL_TEXT = "the-model-said-" + secrets.token_hex(4)  # what an exception's text may quote


class _Meter:
    """The traffic counts the middleware hands the meter: one status a request."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    def traffic(self, service: str, status: int, received: int, sent: int) -> None:
        self.statuses.append(status)


@contextlib.asynccontextmanager
async def bare_gateway(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]],
) -> AsyncIterator[tuple[str, _Meter]]:
    """The gateway's middleware and response hook (as `gateway.app.make_app` installs them) around one handler, at
    a path that needs no key (`/healthz`); yields its address and what it metered."""
    meter = _Meter()
    app = web.Application(middlewares=middlewares())
    app[TRACING], app[METRICS], app[METER] = False, False, cast(Any, meter)
    app.on_response_prepare.append(on_response_prepare)
    app.router.add_post("/healthz", handler)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield f"{server.host}:{server.port}", meter
    finally:
        await server.close()


async def exchange(address: str) -> bytes:
    """POST /healthz on a connection of its own; all the server sends until it closes the connection."""
    host, port = address.split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    request = f"POST /healthz HTTP/1.1\r\nHost: {address}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    writer.write(request.encode())
    await writer.drain()
    try:
        return await asyncio.wait_for(reader.read(), 30)  # read() returns at the end of the connection
    finally:
        writer.close()


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(RuntimeError(f"'{MODEL_TEXT}' has no attribute 'get'"), id="unexpected"),
        pytest.param(InvalidArgument(f"bad {MODEL_TEXT}"), id="a-domain-error"),
        pytest.param(ConnectionResetError(MODEL_TEXT), id="connection-reset"),
    ],
)
async def test_a_failure_after_the_response_started_closes_it_rather_than_answering_twice(
    caplog: pytest.LogCaptureFixture, failure: Exception
) -> None:
    async def streams_then_fails(request: web.Request) -> web.StreamResponse:
        out = EventStream()
        await out.prepare(request)
        await out.write(b'data: {"partial": true}\n\n')
        raise failure

    caplog.set_level(logging.DEBUG, logger="switchboard")
    async with bare_gateway(streams_then_fails) as (address, meter):
        raw = await exchange(address)
    assert raw.startswith(b"HTTP/1.1 200 "), raw[:200]
    assert raw.count(b"HTTP/1.1 ") == 1, f"a second response inside the first: {raw!r}"
    assert b'data: {"partial": true}' in raw  # what was sent before the failure still went
    assert not raw.endswith(b"0\r\n\r\n"), raw[-100:]  # no last chunk: the client sees a body cut short
    assert MODEL_TEXT.encode() not in raw
    assert meter.statuses == [500]
    assert type(failure).__name__ in caplog.text and "correlation id" in caplog.text
    assert MODEL_TEXT not in caplog.text  # the failure's type and place, never its text


async def test_a_guarded_stream_whose_replay_fails_ends_with_an_error_event(monkeypatch: pytest.MonkeyPatch) -> None:
    """No answer the guardrails passed is known to fail its replay now (each is rebuilt to a known shape first):
    the failure is forced, to prove that any would still end the stream as the protocol says."""
    message = {"role": "assistant", "content": "checked"}
    checked = {"id": "c", "created": 1, "model": "agent", "choices": [{"index": 0, "message": message}]}

    async def answered(*_: object) -> dict[str, Any]:
        return checked

    def replay_fails(*_: object) -> bytes:
        raise RuntimeError(MODEL_TEXT)

    monkeypatch.setattr(agent_chat, "_answer", answered)
    monkeypatch.setattr(agent_chat, "_replay", replay_fails)
    call = SimpleNamespace(status=200, response_bytes=0)

    async def guarded(request: web.Request) -> web.StreamResponse:
        return await agent_chat._stream(request, cast(Any, call), cast(Any, None), {"messages": []}, False)

    async with bare_gateway(guarded) as (address, _meter):
        raw = await exchange(address)
    assert raw.count(b"HTTP/1.1 ") == 1, raw
    assert b": accepted" in raw
    assert b'data: {"error":{"message":"internal error (correlation id ' in raw, raw[-300:]
    assert raw.endswith(b"0\r\n\r\n")  # the stream ended as a stream ends, with its error event
    assert MODEL_TEXT.encode() not in raw
    assert call.status == 500
