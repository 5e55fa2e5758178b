"""The demo's MCP server as dev-models serves it: the `mcp` SDK's app mounted on an aiohttp app (server.asgi_bridge),
called by the SDK's own client over streamable HTTP on loopback."""

from __future__ import annotations

import aiohttp
from aiohttp import web
from mcp import Client

from server.asgi_bridge import mount_asgi
from server.dev.demo_tools import demo_tools_app
from server.dev.models import MCP_PATH
from tests.fakes.serve import serve_in_thread


def _app() -> web.Application:
    app = web.Application()
    mount_asgi(app, MCP_PATH, demo_tools_app("127.0.0.1"))
    return app


async def test_the_demo_tools_answer_over_mcp_through_the_aiohttp_mount() -> None:
    with serve_in_thread(_app) as port:
        async with Client(f"http://127.0.0.1:{port}{MCP_PATH}") as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            weather = await client.call_tool("get_weather", {"city": " new  YORK "})
            total = await client.call_tool("add", {"a": 2, "b": 40.5})
            unknown = await client.call_tool("get_weather", {"city": "Atlantis"})
    assert set(listed) == {"get_weather", "add"} and listed["get_weather"].input_schema["required"] == ["city"]
    assert not weather.is_error and weather.content[0].text == "New York: 15 °C, cloudy (demo data)"  # type: ignore[union-attr]
    assert not total.is_error and total.content[0].text == "42.5"  # type: ignore[union-attr]
    assert unknown.is_error and "No demo weather for 'Atlantis'; the demo knows Berlin" in unknown.content[0].text  # type: ignore[union-attr]


async def test_a_request_naming_another_host_is_refused() -> None:
    """DNS-rebinding protection: the loopback server answers only requests addressed to loopback."""
    with serve_in_thread(_app) as port:
        async with aiohttp.ClientSession() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
            headers = {"Host": "evil.example", "Accept": "application/json, text/event-stream"}
            async with http.post(f"http://127.0.0.1:{port}{MCP_PATH}", json=body, headers=headers) as resp:
                assert resp.status == 421, await resp.text()
