"""Serve an ASGI app (the MCP SDK's) inside an aiohttp app: the RAG's `/mcp` endpoint and the demo's MCP server need
no server or port of their own. The ASGI lifespan runs for the aiohttp app's life (`cleanup_ctx`), and each request
is handed over with its whole body (MCP requests are small JSON-RPC messages) while the answer is streamed back as
the app sends it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from aiohttp import web

__all__ = ["asgi_lifespan", "mount_asgi", "serve_asgi"]

_HOP_BY_HOP = frozenset({"content-length", "transfer-encoding", "connection"})


def asgi_lifespan(asgi: Any) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup_ctx entry running `asgi`'s lifespan (startup before the app serves, shutdown after)."""

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


def _scope(request: web.Request, path: str | None, extra: dict[str, Any]) -> dict[str, Any]:
    path = request.path if path is None else path
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": request.method,
        "scheme": request.scheme,
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": request.query_string.encode(),
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in request.headers.items()],
        "client": request.transport.get_extra_info("peername") if request.transport else None,
        "server": None,
        "state": {},
        **extra,
    }


def _handler(asgi: Any) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.StreamResponse:
        return await serve_asgi(request, asgi)

    return handle


async def serve_asgi(
    request: web.Request,
    asgi: Any,
    *,
    path: str | None = None,
    extra: dict[str, Any] | None = None,
    body: bytes | None = None,
) -> web.StreamResponse:
    """Hand `request` to `asgi` (as `path`, its own by default; `extra` added to the scope; with `body`, the request's
    body as its caller read it) and stream its answer."""
    if body is None:
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

    await asgi(_scope(request, path, extra or {}), receive, send)
    if response is None:
        raise web.HTTPInternalServerError()
    return response


def mount_asgi(app: web.Application, path: str, asgi: Any) -> None:
    """Serve `asgi` at `path` (every method) of `app`, its lifespan tied to the app's."""
    app.cleanup_ctx.append(asgi_lifespan(asgi))
    app.router.add_route("*", path, _handler(asgi))
