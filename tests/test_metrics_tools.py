"""The Responses tool loop's MCP tool calls are counted by outcome, through the gateway process, a real MCP server
(the mcp SDK) and a scripted model; the tool's name, server label, arguments and bearer token stay out of /metrics."""

from __future__ import annotations

import asyncio
import secrets

import openai

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.fakes.mcp_servers import loop_tools_server, serve_asgi
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld
from tests.metrics_scrape import scrape
from tests.world import must

MCP = "platform.agents.v1.ExternalMcpServerService"
TOOL_CALLS = "switchboard_gateway_tool_calls_total"
BEARER = "sk-metrics-SECRET-bearer"


async def test_tool_calls_are_counted_by_outcome(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    base = gateway.base_url.removesuffix("/v1")
    with serve_asgi(loop_tools_server({"Authorization": f"Bearer {BEARER}"})) as port:
        label = f"m{secrets.token_hex(3)}_"
        spec = {
            "name": label,
            "serverUrl": f"http://127.0.0.1:{port}/mcp",
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"},
        }
        body = {"externalMcpServer": {**spec, "sharing": {"shareToAll": True}}, "apiKey": BEARER}
        connect = ConnectJsonCaller(server.base_url)
        must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
        before = await scrape(base)
        fakes.openai.script.clear()
        add = f"{label}add"
        # A call whose tool reports an error, then a good one.
        fakes.openai.script += [tool_calls((f"{label}fails", "{}")), tool_calls((add, '{"a": 2, "b": 3}'))]
        tools = [{"type": "mcp", "server_label": label, "require_approval": "never"}]
        async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as sdk:
            result = await sdk.responses.create(model=gw_world.model("chat"), input="2+3?", tools=tools)  # type: ignore[arg-type]
        fakes.openai.script.clear()
        assert result.output_text == "The tool said: 5"

    def added(outcome: str) -> float:
        return seen.value(TOOL_CALLS, outcome=outcome) - before.value(TOOL_CALLS, outcome=outcome)

    seen = await scrape(base)
    for _ in range(50):  # the workers fold their figures every second; bounded wait, not a timing assertion
        if added("ok") == 1 and added("tool_error") == 1:
            break
        await asyncio.sleep(0.1)
        seen = await scrape(base)
    assert (added("ok"), added("tool_error"), added("failed")) == (1, 1, 0)
    assert label not in seen.text and "add" not in seen.label_values(TOOL_CALLS, "outcome")
    assert BEARER not in seen.text and "the tool broke" not in seen.text
