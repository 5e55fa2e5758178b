"""The demo's MCP server (the `mcp` SDK's MCPServer, streamable HTTP, stateless, JSON answers): two deterministic
tools that `switchboard dev-models` serves at `/mcp` and the demo registers as the tenant's MCP server `demo-tools`.

The weather is fixed demo data, not a forecast, and says so.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

__all__ = ["DEMO_WEATHER", "demo_tools_app"]

DEMO_WEATHER = {
    "berlin": "12 °C, windy",
    "nairobi": "26 °C, clear",
    "new york": "15 °C, cloudy",
    "paris": "18 °C, light rain",
    "sydney": "20 °C, showers",
    "tokyo": "24 °C, sunny",
}


def _server() -> MCPServer:
    mcp = MCPServer(
        "switchboard-demo-tools",
        version="1.0.0",
        instructions="Deterministic demo tools of `switchboard dev-models`; the weather is fixed demo data.",
        log_level="WARNING",  # what it asks of the process's logging, which server.logs configures
    )

    @mcp.tool()
    def get_weather(city: str) -> str:
        """Today's weather in a city (fixed demo data, not a forecast)."""
        name = " ".join(city.split())
        found = DEMO_WEATHER.get(name.lower())
        if found is None:
            known = ", ".join(c.title() for c in DEMO_WEATHER)
            raise ToolError(f"No demo weather for {name!r}; the demo knows {known}.")
        return f"{name.title()}: {found} (demo data)"

    @mcp.tool()
    def add(a: float, b: float) -> str:
        """Add two numbers."""
        return f"{a + b:g}"

    return mcp


def demo_tools_app(host: str) -> Any:
    """The ASGI app serving the tools at `/mcp`; requests must name `host` (DNS-rebinding protection)."""
    return _server().streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host=host
    )
