"""A deadline on receiving each request's line and headers, per gateway connection (slowloris).

aiohttp has no such timeout: a client that sends a header byte every few seconds holds its connection (and a file
descriptor) until the keep-alive timeout, about an hour. `HeaderDeadlineHandler` arms one timer per connection:
- when the connection opens (a connection that never sends a request is held no longer than a slow one),
- at the first byte that can only belong to the next request: on an idle connection, or while a request is handled
  once that request's body has been received in full;
and disarms it when the request reaches the application (its headers have been parsed). If the deadline passes
while another request on the connection is being handled (a pipelined request queued behind it), the next request
gets a fresh deadline when that one ends. Idle keep-alive time between requests is not counted.

Not covered: the start of a next request arriving in the same read as the end of the previous one (glued into one
TCP segment) and then nothing more. Which of those bytes are the next request only aiohttp's parser knows, and it
does not say; such a connection is closed by aiohttp's keep-alive timeout instead.

Only public seams are used: the protocol's `data_received`/`connection_made`/`connection_lost`/`force_close`,
`request.protocol`, `request.content.is_eof()` (of the body as received: gateway.content_coding), and the web
server's `request_handler`, wrapped once by `track_requests` so the handler hears when each request starts and ends.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiohttp import web
from aiohttp.web import BaseRequest

from gateway.content_coding import DecodedBody

__all__ = ["HeaderDeadlineHandler", "track_requests"]

log = logging.getLogger("switchboard.gateway")


class HeaderDeadlineHandler(web.RequestHandler):
    """aiohttp's request handler with a deadline of `header_timeout` seconds on each request's line and headers."""

    def __init__(self, *args: Any, header_timeout: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timeout = header_timeout
        self._head_timer: asyncio.TimerHandle | None = None
        self._handling: BaseRequest | None = None
        self._late_while_handling = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._head_timer is None and data and (self._handling is None or _body_received(self._handling)):
            self._arm()
        super().data_received(data)

    def connection_lost(self, exc: BaseException | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def request_started(self, request: BaseRequest) -> None:
        self._disarm()
        self._handling = request
        self._late_while_handling = False

    def request_finished(self) -> None:
        self._handling = None
        if self._late_while_handling:
            self._late_while_handling = False
            self._arm()

    def _arm(self) -> None:
        self._head_timer = asyncio.get_running_loop().call_later(self._header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expired(self) -> None:
        self._head_timer = None
        if self._handling is not None:
            self._late_while_handling = True  # what arrived may be a whole request queued behind this one
            return
        log.debug("closed a connection that sent no complete request headers within %g s", self._header_timeout)
        self.force_close()


def _body_received(request: BaseRequest) -> bool:
    """Whether the whole of the request's body has been received (a compressed one: as sent, not as inflated)."""
    content = request.content
    return (content.raw if isinstance(content, DecodedBody) else content).is_eof()


def track_requests(server: web.Server) -> None:
    """Let each `HeaderDeadlineHandler` of `server` hear when a request reaches the application and when it ends.
    Call once, before the server accepts connections (each connection's handler reads `request_handler` once)."""
    inner = server.request_handler

    async def tracked(request: BaseRequest) -> web.StreamResponse:
        protocol = request.protocol
        if not isinstance(protocol, HeaderDeadlineHandler):
            return await inner(request)
        protocol.request_started(request)
        try:
            return await inner(request)
        finally:
            protocol.request_finished()

    server.request_handler = tracked
