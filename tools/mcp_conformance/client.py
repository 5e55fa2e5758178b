"""Our MCP client (server.mcp.tool_client.ToolConnection, through the egress guard) as a client under test of the
official MCP conformance suite (`@modelcontextprotocol/conformance`): the harness starts a mock server and runs
`python client.py <server URL>` with MCP_CONFORMANCE_SCENARIO set. Per scenario the client does what the tool loop
does: connect (version negotiated), list tools, call the scenario's tools with arguments built from their schemas.

Authorization scenarios are not driven here: the loop never runs an OAuth flow itself (per-user tokens come from
the chat client through ExchangeExternalMcpOAuthToken), so they are out of this client's scope.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from server.egress import EgressGuard
from server.mcp.tool_client import ToolConnection, ToolSource

_SAMPLES: dict[str, Any] = {"integer": 1, "number": 1.5, "string": "x", "boolean": True, "array": [], "object": {}}
_KNOWN = {"add_numbers": {"a": 5, "b": 3}}


def _arguments(name: str, schema: dict[str, Any]) -> dict[str, Any]:
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


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    headers = {"X-Conformance-Client": "switchboard"} if scenario == "http-custom-headers" else {}
    connection = ToolConnection(
        EgressGuard(None, allow_loopback=True),
        ToolSource("conformance", url, headers),
        timeout=30,
        max_result_bytes=1 << 20,
    )
    try:
        tools = await connection.list_tools()
        if scenario == "initialize":
            return 0
        for tool in tools:
            await connection.call_tool(tool.name, _arguments(tool.name, tool.input_schema))
    finally:
        await connection.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
