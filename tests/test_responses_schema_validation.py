"""The tool loop's argument validation (gateway.responses.loop) on schemas as MCP servers list them: 2020-12
keywords and same-document `$ref`s are enforced, a network `$ref` is never fetched (it would bypass the egress
guard; SEP-2106), and the validator of a schema is built once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from gateway.responses.loop import _argument_errors, _Tool
from gateway.responses.mcp_tools import McpToolSpec
from server.mcp.tool_client import McpTool, ToolSource
from server.mcp.tool_schemas import vet


@pytest.fixture
def canary() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server serving a schema and recording every fetch: (its schema URL, the paths fetched)."""
    fetched: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            fetched.append(self.path)
            body = b'{"type": "object", "properties": {"displayName": {"type": "string"}}}'
            self.send_response(200)
            self.send_header("Content-Type", "application/schema+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/canary/profile-schema.json", fetched
    finally:
        server.shutdown()
        server.server_close()


def _tool(schema: dict[str, Any]) -> _Tool:
    spec = McpToolSpec(ToolSource("s_", "http://127.0.0.1:9/mcp"), allowed=None, approval_always=False)
    return _Tool(spec, McpTool("lookup_user", "", schema), vet(schema))


def test_network_refs_are_never_fetched_and_local_refs_still_apply(canary: tuple[str, list[str]]) -> None:
    url, fetched = canary
    tool = _tool(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"userId": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
            "properties": {"id": {"$ref": "#/$defs/userId"}, "profile": {"$ref": url}},
            "required": ["id"],
        }
    )
    arguments, error = _argument_errors(tool, '{"id": "Not Valid!"}')
    assert arguments is None and error is not None and "id" in error  # the local $ref is enforced
    arguments, error = _argument_errors(tool, '{"id": "ada-1", "profile": {"displayName": 3}}')
    assert error is None and arguments == {"id": "ada-1", "profile": {"displayName": 3}}  # left to the server
    assert fetched == []


def test_2020_12_keywords_are_enforced_and_validators_are_built_once() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
            "kind": {"const": "user"},
        },
        "dependentRequired": {"kind": ["pair"]},
        "unevaluatedProperties": False,
    }
    tool = _tool(schema)
    assert _argument_errors(tool, '{"pair": ["a", 1], "kind": "user"}') == ({"pair": ["a", 1], "kind": "user"}, None)
    for bad in ('{"pair": [1, "a"]}', '{"pair": ["a", 1, 2]}', '{"kind": "user"}', '{"pair": ["a", 1], "x": 1}'):
        arguments, error = _argument_errors(tool, bad)
        assert arguments is None and error is not None, bad
    assert vet(dict(reversed(list(schema.items())))) is tool.schema  # same schema, same validator
