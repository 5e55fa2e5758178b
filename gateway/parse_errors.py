"""OpenAI error bodies for requests aiohttp cannot parse (headers over 8 KB, malformed request lines, broken chunked
framing), each with an `x-request-id` as every other answer has, and no error log for a body it cannot decode.

aiohttp answers those itself, as text/plain, before any middleware or signal runs, and has no hook for them
(aio-libs/aiohttp#3287). Its public seam is the protocol: `listen` accepts connections for an `AppRunner`'s web
server (`runner.server`) with a `web.RequestHandler` whose `handle_error` keeps aiohttp's status and writes the
OpenAI error shape the SDKs expect, with a request id that its log line names: a fresh one, as the request never
reached the middleware that gives one (or that one, for a failure past the middleware). No private attribute or
method of aiohttp is used. The same listener inflates compressed bodies itself (gateway.content_coding), with
aiohttp's decompression off.

After the answer, aiohttp reads and drops what is left of the request's body (`lingering_time`); a body that breaks
its own framing (or, where aiohttp inflates bodies, does not decode as its Content-Encoding says) raises there, and
aiohttp logged that at ERROR, once for every such request, authenticated or not, whatever it was answered (400, 401,
404, even 200). It is the client's fault and already answered: `log_exception` logs it at DEBUG and aiohttp closes
the connection.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError

from gateway.connections import ConnectionCap, Counted
from gateway.content_coding import decode_bodies
from gateway.context import REQUEST_ID
from gateway.header_deadline import HeaderDeadlineHandler, track_requests
from gateway.middleware import REQUEST_ID_HEADER, new_request_id

__all__ = ["listen"]

log = logging.getLogger("switchboard.gateway")

_MESSAGE = "We could not parse your HTTP request (for example, headers over 8 KB or a malformed header)."


class _Handler(Counted, HeaderDeadlineHandler):
    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        # The request's own id if the middleware gave it one (an error past it), else a fresh one.
        request_id = request.get(REQUEST_ID) or new_request_id()
        # The parser's message can quote the request's bytes (header values, credentials): only the type is logged.
        log.info(
            "answered an unparsable request with %d (%s), request id %s",
            status,
            type(exc).__name__ if exc else "no error",
            request_id,
        )
        if request.writer.output_size > 0:
            raise ConnectionError("a response was already under way; the connection is dropped")
        kind = "invalid_request_error" if status < 500 else "server_error"
        text = _MESSAGE if status < 500 else "internal error"
        body = orjson.dumps({"error": {"message": text, "type": kind, "param": None, "code": None}})
        answer = web.Response(status=status, body=body, content_type="application/json")
        answer.headers["x-should-retry"] = "false"
        answer.headers[REQUEST_ID_HEADER] = request_id
        answer.force_close()
        return answer

    def log_exception(self, *args: Any, **kwargs: Any) -> None:
        if isinstance(kwargs.get("exc_info"), RequestPayloadError):
            log.debug("dropped the rest of a request body that could not be read (RequestPayloadError)")
            return
        super().log_exception(*args, **kwargs)


async def listen(
    runner: web.AppRunner,
    host: str,
    port: int,
    *,
    backlog: int,
    header_timeout: float,
    max_connections: int,
    **handler_options: Any,
) -> asyncio.AbstractServer:
    """Accept connections on host:port (SO_REUSEPORT: the workers share it) for the set-up `runner`'s app, each
    served with `handler_options` (the request handler options given to the AppRunner, e.g. `lingering_time`) and
    a deadline of `header_timeout` seconds on each request's headers (gateway.header_deadline), at most
    `max_connections` at once (gateway.connections). Close the returned server before `runner.cleanup()`, which then
    lets in-flight requests finish. Compressed bodies are inflated by gateway.content_coding, not by aiohttp."""
    server = runner.server
    if server is None:
        raise RuntimeError("listen() needs a runner that has been set up")
    track_requests(server)
    decode_bodies(server)
    handler_options = {**handler_options, "auto_decompress": False}
    loop = asyncio.get_running_loop()
    connections = ConnectionCap(max_connections)
    return await loop.create_server(
        connections.protocols(
            lambda: _Handler(
                server, loop=loop, header_timeout=header_timeout, connections=connections, **handler_options
            )
        ),
        host,
        port,
        reuse_port=True,
        backlog=backlog,
    )
