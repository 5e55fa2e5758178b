"""OpenAI error bodies for requests aiohttp cannot parse (headers over 8 KB, malformed request lines).

aiohttp answers those itself, as text/plain, before any middleware runs, so the gateway's runner swaps in a
request handler whose `handle_error` keeps aiohttp's status and writes the OpenAI error shape the SDKs expect.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web
from aiohttp.web_protocol import RequestHandler

__all__ = ["OpenAIErrorRunner"]

_MESSAGE = "We could not parse your HTTP request (for example, headers over 8 KB or a malformed header)."


class _Handler(RequestHandler):
    def handle_error(
        self, request: Any, status: int = 500, exc: BaseException | None = None, message: str | None = None
    ) -> web.StreamResponse:
        response = super().handle_error(request, status, exc, message)
        kind = "invalid_request_error" if response.status < 500 else "server_error"
        text = _MESSAGE if response.status < 500 else "internal error"
        body = orjson.dumps({"error": {"message": text, "type": kind, "param": None, "code": None}})
        answer = web.Response(
            status=response.status, body=body, content_type="application/json", headers={"x-should-retry": "false"}
        )
        answer.force_close()
        return answer


class _Server(web.Server):
    def __call__(self) -> RequestHandler:
        return _Handler(self, loop=self._loop, **self._kwargs)


class OpenAIErrorRunner(web.AppRunner):
    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _Server  # same state; only the per-connection handler class differs
        return server
