"""Connect error bodies for the refusals connectrpc answers with an empty body: 404 (no such method in a mounted
service), 405 (GET on a method with side effects, or another HTTP method) and 415 (an unsupported content type or
GET `encoding`).

An empty body leaves a client to infer a code from the status alone (the Connect spec's table makes 415 and 405
`unknown`) with no message. The status is kept (the spec requires 415 for an unsupported codec), the `Allow` /
`Accept-Post` headers are kept, and the body becomes a Connect error: `unimplemented`, the code the spec gives an
unsupported encoding and an unknown procedure (404 infers `unimplemented`), with a message saying what is
supported. A gRPC or gRPC-Web request gets the same as a trailers-only answer (grpc-status 12), as gRPC defines.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import quote

__all__ = ["connect_error_bodies", "error_body"]

Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_REFUSALS = frozenset({404, 405, 415})
_SHOWN = 100  # at most this much of a client's header is quoted back


def error_body(code: str, message: str) -> bytes:
    return json.dumps({"code": code, "message": message}).encode()


def _message(status: int, scope: MutableMapping[str, Any], headers: list[tuple[bytes, bytes]]) -> str:
    path = str(scope["path"])[:_SHOWN]
    named = {name.lower(): value.decode("latin-1") for name, value in headers}
    if status == 404:
        return f"{path} is not a method of this service"
    if status == 405:
        allowed = named.get(b"allow", "POST")
        return f"HTTP {scope['method'][:_SHOWN]} is not supported by {path}; use {allowed}"
    request_headers = dict(scope["headers"])
    sent = request_headers.get(b"content-type", b"").decode("latin-1")[:_SHOWN] or "none"
    supported = named.get(b"accept-post", "application/json, application/proto")
    if scope["method"] == "GET":
        return f"unsupported message encoding; GET takes encoding=json or encoding=proto ({supported})"
    return f"unsupported content type {sent!r}; supported: {supported}"


def connect_error_bodies(scope: MutableMapping[str, Any], send: Send) -> Send:
    """`send`, with a Connect error body written for an empty 404/405/415 answer."""
    held: MutableMapping[str, Any] | None = None

    async def wrapped(message: MutableMapping[str, Any]) -> None:
        nonlocal held
        if held is None:
            if message["type"] == "http.response.start" and message["status"] in _REFUSALS:
                headers = list(message.get("headers", ()))
                if not any(name.lower() == b"content-type" for name, _ in headers):
                    held = {**message, "headers": headers}
                    return
            await send(message)
            return
        if message["type"] != "http.response.body" or message.get("body") or message.get("more_body"):
            await send(held)  # not the empty answer this expects: pass both on unchanged
            held = None
            await send(message)
            return
        status = held["status"]
        text = _message(status, scope, held["headers"])
        request_type = dict(scope["headers"]).get(b"content-type", b"")
        if request_type.startswith(b"application/grpc"):
            # gRPC and gRPC-Web clients read a status from a trailers-only answer, not from a body.
            grpc_headers = [
                (b"content-type", request_type.split(b";")[0]),
                (b"grpc-status", b"12"),  # UNIMPLEMENTED
                (b"grpc-message", quote(text).encode()),
            ]
            held = None
            await send({"type": "http.response.start", "status": 200, "headers": grpc_headers})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        body = error_body("unimplemented", text)
        headers = [
            *((name, value) for name, value in held["headers"] if name.lower() != b"content-length"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        await send({**held, "headers": headers})
        held = None
        await send({"type": "http.response.body", "body": body, "more_body": False})

    return wrapped
