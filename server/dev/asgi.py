"""Serve an ASGI app (the demo's MCP server) on a path of the dev-models aiohttp app, so the demo needs no port of its
own: its ASGI lifespan runs for the aiohttp app's life (`cleanup_ctx`), and each request is handed over with its
whole body (MCP requests are small JSON-RPC messages) while the answer is streamed back as the app sends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

__all__ = ["mount_asgi"]

_HOP_BY_HOP = frozenset({"content-length", "transfer-encoding", "connection"})


def _lifespan(asgi: Any) -> Callable[[web.Application], AsyncIterator[None]]:
    async def run(_app: web.Application) -> AsyncIterator[None]:
        inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        stopped = asyncio.Event()

        async def send(message: dict[str, Any]) -> None:
            kind = message["type"]
            if kind == "lifespan.startup.complete" and not started.done():
                started.set_result(None)
            elif kind == "lifespan.startup.failed" and not started.done():
                started.set_exception(RuntimeError("the ASGI app did not start"))
            elif kind.startswith("lifespan.shutdown"):
                stopped.set()

        task = asyncio.create_task(asgi({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, inbox.get, send))
        await inbox.put({"type": "lifespan.startup"})
        await started
        try:
            yield
        finally:
            await inbox.put({"type": "lifespan.shutdown"})
            await asyncio.wait_for(stopped.wait(), 10)
            await task

    return run


def _scope(request: web.Request) -> dict[str, Any]:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": request.raw_path.split("?", 1)[0].encode(),
        "root_path": "",
        "query_string": request.query_string.encode(),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()],
        "client": request.transport.get_extra_info("peername") if request.transport else None,
        "server": None,
        "state": {},
    }


def _handler(asgi: Any) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        delivered = False
        response: web.StreamResponse | None = None

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await asyncio.Event().wait()  # the client stays until the answer is complete
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal response
            if message["type"] == "http.response.start":
                response = web.StreamResponse(status=message["status"])
                for key, value in message.get("headers", []):
                    name = key.decode("latin-1")
                    if name.lower() not in _HOP_BY_HOP:
                        response.headers.add(name, value.decode("latin-1"))
                await response.prepare(request)
            elif message["type"] == "http.response.body" and response is not None:
                await response.write(message.get("body", b""))
                if not message.get("more_body", False):
                    await response.write_eof()

        await asgi(_scope(request), receive, send)
        if response is None:
            raise web.HTTPInternalServerError()
        return response

    return handle


def mount_asgi(app: web.Application, path: str, asgi: Any) -> None:
    """Serve `asgi` at `path` (every method) of `app`, its lifespan tied to the app's."""
    app.cleanup_ctx.append(_lifespan(asgi))
    app.router.add_route("*", path, _handler(asgi))
