"""Our MCP client (server.mcp.tool_client, through the egress guard; the tool loop's sessions are the same
`McpSession`) as a client under test of the official MCP conformance suite (`@modelcontextprotocol/conformance`): the
harness starts a mock server and runs `python client.py <server URL>` with MCP_CONFORMANCE_SCENARIO set. Per
scenario the client does what the tool loop does: connect (version negotiated), list tools, call the tools with the
arguments a model would send:
- the arguments the scenario gives in MCP_CONFORMANCE_CONTEXT (`toolCalls`) when it gives them (e.g. the values
  whose `Mcp-Param-*` header encoding http-custom-headers checks);
- json-schema-2020-12-preservation: the listed `inputSchema` of its focal tool, passed back as the echo tool's
  `schema` argument, so the suite sees the schema exactly as the loop would hand it to the model;
- otherwise arguments built from each tool's schema.
A failed tool call is not a client failure (the loop gives the model an error output and goes on); a failed
connection or listing is.

Authorization scenarios are not driven here: the loop never runs an OAuth flow itself (per-user tokens come from
the chat client through ExchangeExternalMcpOAuthToken), so they are out of this client's scope.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from server.egress import EgressGuard
from server.mcp.tool_client import McpTool, ToolConnection, ToolFailure, ToolSource

_SAMPLES: dict[str, Any] = {"integer": 1, "number": 1.5, "string": "x", "boolean": True, "array": [], "object": {}}
_KNOWN = {"add_numbers": {"a": 5, "b": 3}}
_ECHO, _FOCAL = "json_schema_echo", "json_schema_2020_12_tool"


def _from_schema(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    if name in _KNOWN:
        return _KNOWN[name]
    properties = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for key in schema.get("required") or ():
        spec = properties.get(key) or {}
        if "default" in spec:
            out[key] = spec["default"]
        elif spec.get("enum"):
            out[key] = spec["enum"][0]
        else:
            out[key] = _SAMPLES.get(str(spec.get("type")), "x")
    return out


def _calls(tools: list[McpTool]) -> list[tuple[str, dict[str, Any]]]:
    """(tool, arguments) in the order to call them (see the module docstring)."""
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    given = context.get("toolCalls") if isinstance(context, dict) else None
    if isinstance(given, list) and given:
        return [(str(c["name"]), dict(c.get("arguments") or {})) for c in given if isinstance(c, dict)]
    schemas = {t.name: t.input_schema for t in tools}
    calls = []
    for tool in tools:
        if tool.name == _ECHO and _FOCAL in schemas:
            calls.append((tool.name, {"schema": schemas[_FOCAL]}))
        else:
            calls.append((tool.name, _from_schema(tool.name, tool.input_schema)))
    return calls


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    connection = ToolConnection(
        EgressGuard(None, allow_loopback=True), ToolSource("conformance", url), timeout=30, max_result_bytes=1 << 20
    )
    try:
        tools = await connection.list_tools()
        if scenario == "initialize":
            return 0
        for name, arguments in _calls(tools):
            try:
                await connection.call_tool(name, arguments)
            except ToolFailure as failed:
                print(f"tools/call {name}: {failed.message}", file=sys.stderr)
    finally:
        await connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
