"""Counting the management server's HTTP traffic: every request counted by the meter, for platform traffic reads.

An ASGI middleware around the router (given `observe`, also what feeds the request-duration metric). It sees the
status (for gRPC, the `grpc-status` of the trailers or of a trailers-only answer: gRPC errors travel over HTTP 200)
and the body bytes sent, and counts the request with the meter, which writes batches off the hot path.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from server.metering import Meter

__all__ = ["SERVICE", "TrafficCounter"]

SERVICE = "management"
Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
Observe = Callable[[str, int, float], None]  # (path, status, seconds): server.metrics.rpc_observer

_CLIENT_CLOSED = 499
# gRPC codes that are the server's fault (UNKNOWN, DEADLINE_EXCEEDED, INTERNAL, UNAVAILABLE, DATA_LOSS) count as
# 5xx; every other non-zero code as a refused request (4xx).
_SERVER_SIDE = {b"2": 500, b"4": 504, b"13": 500, b"14": 503, b"15": 500}


def _grpc_status(headers: list[tuple[bytes, bytes]]) -> int | None:
    for name, value in headers:
        if name == b"grpc-status":
            return 0 if value == b"0" else _SERVER_SIDE.get(value, 400)
    return None


def _content_length(scope: Scope) -> int:
    for name, value in scope["headers"]:
        if name == b"content-length":
            return int(value) if value.isdigit() else 0
    return 0


class TrafficCounter:
    def __init__(self, app: ASGIApp, meter: Meter, service: str = SERVICE, observe: Observe | None = None) -> None:
        self._app = app
        self._meter = meter
        self._service = service
        self._observe = observe  # the Prometheus histogram too, with the same status

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        self._meter.start()  # idempotent; it needs the running loop, which a request always has
        status = _CLIENT_CLOSED
        sent = received = 0
        started = time.perf_counter()

        async def counting_receive() -> Message:
            # A gRPC or chunked body has no Content-Length: its bytes are counted as the app reads them.
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
            return message

        async def counting_send(message: Message) -> None:
            nonlocal status, sent
            kind = message["type"]
            if kind == "http.response.start":
                status = message["status"]
                grpc = _grpc_status(message.get("headers", []))
                if grpc:
                    status = grpc
            elif kind == "http.response.body":
                sent += len(message.get("body", b""))
            elif kind == "http.response.trailers":
                grpc = _grpc_status(message.get("headers", []))
                if grpc:
                    status = grpc
            await send(message)

        try:
            await self._app(scope, counting_receive, counting_send)
        finally:
            self._meter.traffic(self._service, status, max(_content_length(scope), received), sent)
            if self._observe is not None:
                self._observe(scope["path"], status, time.perf_counter() - started)
