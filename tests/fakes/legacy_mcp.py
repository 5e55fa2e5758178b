"""A handshake-era MCP server speaking exactly one protocol version over streamable HTTP (JSON answers), written
straight from the specification so the version is the test's choice, not the SDK's: no `server/discover` (a
method-not-found error), `initialize` answered with its own version and a session id, then tools/list and tools/call
(`add`). It records the `MCP-Protocol-Version` header of every request after the handshake."""

from __future__ import annotations

import secrets
from typing import Any

from aiohttp import web

__all__ = ["LegacyMcp"]


class LegacyMcp:
    def __init__(self, version: str) -> None:
        self.version = version
        self.session = secrets.token_hex(8)
        self.seen_versions: list[str] = []

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/mcp", self._post)
        app.router.add_get("/mcp", self._refuse)
        app.router.add_delete("/mcp", self._delete)
        return app

    async def _refuse(self, request: web.Request) -> web.Response:
        return web.Response(status=405)

    async def _delete(self, request: web.Request) -> web.Response:
        return web.Response(status=200)

    def _answer(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            return None  # a notification
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": self.version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"legacy-{self.version}", "version": "1"},
            }
        elif method == "tools/list":
            schema = {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            }
            result = {"tools": [{"name": "add", "description": "Add", "inputSchema": schema}]}
        elif method == "tools/call":
            args = (message.get("params") or {}).get("arguments") or {}
            result = {"content": [{"type": "text", "text": str(args["a"] + args["b"])}], "isError": False}
        elif method == "ping":
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": "Method not found"}}
        return {"jsonrpc": "2.0", "id": ident, "result": result}

    async def _post(self, request: web.Request) -> web.Response:
        message = await request.json()
        if message.get("method") not in ("initialize", "server/discover"):
            self.seen_versions.append(request.headers.get("MCP-Protocol-Version", ""))
        answer = self._answer(message)
        if answer is None:
            return web.Response(status=202)
        return web.json_response(answer, headers={"Mcp-Session-Id": self.session})
