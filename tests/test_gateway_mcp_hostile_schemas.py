"""Hostile tool schemas from a registered MCP server (issue 22): a real MCP server (the `mcp` SDK's low-level Server,
which lists whatever schema it is given) behind the real gateway process, with a scripted model.

- `^(a+)+$` against 34 `a`s and a `!` used to hold a worker's event loop for minutes (Python's backtracking `re`):
  the answer now comes back with a validation error and the worker keeps answering /readyz;
- the same pattern in an `outputSchema`, against the server's own structured result, stalls nothing either;
- a `$ref` cycle used to end in RecursionError (a 500): the tool is refused, naming the cycle;
- a pattern only a backtracking engine runs (lookahead) is refused, not run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import aiohttp
import mcp_types as types
import openai
import pytest
from mcp.server.lowlevel import Server as LowLevelServer

from tests.conftest import Server
from tests.fakes.mcp_servers import serve_asgi
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway, shared_mcp_server
from tests.gateway_world import GatewayWorld

MCP = "platform.agents.v1.ExternalMcpServerService"
EVIL = "^(a+)+$"
ATTACK = "a" * 34 + "!"

_SCHEMAS: dict[str, dict[str, Any]] = {
    "match": {"type": "object", "properties": {"text": {"type": "string", "pattern": EVIL}}, "required": ["text"]},
    "loop": {
        "type": "object",
        "$defs": {"node": {"$ref": "#/$defs/node"}},
        "properties": {"x": {"$ref": "#/$defs/node"}},
    },
    "peek": {"type": "object", "properties": {"text": {"type": "string", "pattern": "^(?=x)x+$"}}},
    "report": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
}
_OUTPUT = {"type": "object", "properties": {"s": {"type": "string", "pattern": EVIL}}, "required": ["s"]}
_WITH_OUTPUT = {"report"}  # listed with _OUTPUT as its outputSchema


def _hostile_server(port: int) -> Any:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=name,
                    description=f"The {name} tool.",
                    input_schema=schema,
                    output_schema=_OUTPUT if name in _WITH_OUTPUT else None,
                )
                for name, schema in _SCHEMAS.items()
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "report":  # its text as structured content: the attack breaks its own outputSchema
            text = str((params.arguments or {}).get("text"))
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], structured_content={"s": text}
            )
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} ran")])

    server: LowLevelServer[Any] = LowLevelServer(
        "hostile", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server.streamable_http_app(host="127.0.0.1")


@pytest.fixture(scope="module")
def hostile_port() -> Iterator[int]:
    with serve_asgi(_hostile_server) as port:
        yield port


@pytest.fixture(scope="module")
async def hostile(server: Server, hostile_port: int, gw_world: GatewayWorld) -> str:
    """The hostile server, registered and shared with every tenant: its label."""
    return await shared_mcp_server(server, f"http://127.0.0.1:{hostile_port}/mcp", "h")


def _mcp(label: str) -> Any:
    return {"type": "mcp", "server_label": label, "require_approval": "never"}


async def _readyz(gateway: Gateway) -> int:
    url = gateway.base_url.removesuffix("/v1") + "/readyz"
    async with aiohttp.ClientSession() as http, http.get(url, timeout=aiohttp.ClientTimeout(total=5)) as resp:
        return resp.status


async def test_a_backtracking_pattern_gets_a_validation_error_and_the_worker_keeps_answering(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, hostile: str, gateway: Gateway
) -> None:
    fakes.openai.script += [
        tool_calls((f"{hostile}match", f'{{"text": "{ATTACK}"}}')),
        tool_calls((f"{hostile}match", '{"text": "aaaa"}')),
    ]
    before = len(fakes.openai.received)
    answer = asyncio.create_task(
        asyncio.to_thread(sdk.responses.create, model=gw_world.model("chat"), input="match", tools=[_mcp(hostile)])
    )
    while not answer.done():  # the workers keep answering while the turn runs (bounded by the test timeout)
        assert await _readyz(gateway) == 200
        await asyncio.sleep(0.05)
    result = await answer
    assert result.status == "completed"
    assert [i.type for i in result.output] == ["mcp_list_tools", "mcp_call", "mcp_call", "message"]
    bad, good = result.output[1], result.output[2]
    assert bad.status == "failed" and "does not match" in str(bad.error)  # type: ignore[union-attr]
    assert "text" in str(bad.error)  # names the argument
    assert good.status == "completed" and good.output == "match ran"  # type: ignore[union-attr]
    # The model saw the server's schema as listed: the pattern is not a reason to hide it.
    sent = fakes.openai.received[before].json or {}
    match = next(t for t in sent["tools"] if t["function"]["name"] == f"{hostile}match")
    assert match["function"]["parameters"] == _SCHEMAS["match"]
    assert await _readyz(gateway) == 200


def test_a_ref_cycle_and_a_lookahead_are_refused_naming_the_problem(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, hostile: str, gateway: Gateway
) -> None:
    fakes.openai.script += [tool_calls((f"{hostile}loop", '{"x": 1}'), (f"{hostile}peek", '{"text": "xx"}'))]
    before = len(fakes.openai.received)
    result = sdk.responses.create(model=gw_world.model("chat"), input="go", tools=[_mcp(hostile)])
    assert result.status == "completed"
    listing = result.output[0]
    assert {t.name for t in listing.tools} == set(_SCHEMAS)  # type: ignore[union-attr]
    loop, peek = result.output[1], result.output[2]
    assert loop.status == "failed" and peek.status == "failed"  # type: ignore[union-attr]
    assert "$ref cycle" in str(loop.error) and "#/$defs/node" in str(loop.error)  # type: ignore[union-attr]
    assert "regular expression at #/properties/text/pattern" in str(peek.error)  # type: ignore[union-attr]
    assert loop.output is None and peek.output is None  # type: ignore[union-attr]
    # A refused schema never goes upstream: the model gets the tool without it.
    sent = {t["function"]["name"]: t["function"] for t in (fakes.openai.received[before].json or {})["tools"]}
    assert sent[f"{hostile}loop"]["parameters"] == {"type": "object"}
    assert sent[f"{hostile}peek"]["parameters"] == {"type": "object"}
    assert "Traceback" not in gateway.log() and "RecursionError" not in gateway.log()


def test_a_backtracking_output_schema_stalls_nothing(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, hostile: str
) -> None:
    fakes.openai.script.append(
        tool_calls((f"{hostile}report", '{"text": "aaaa"}'), (f"{hostile}report", f'{{"text": "{ATTACK}"}}'))
    )
    result = sdk.responses.create(model=gw_world.model("chat"), input="report", tools=[_mcp(hostile)])
    assert result.status == "completed"
    fits, breaks = result.output[1], result.output[2]
    assert fits.type == "mcp_call" and fits.status == "completed" and fits.output == "aaaa"  # type: ignore[union-attr]
    # The server's structured result breaks its own outputSchema: the call fails (the SDK's rule), promptly.
    assert breaks.type == "mcp_call" and breaks.status == "failed"  # type: ignore[union-attr]
    assert breaks.output is None  # type: ignore[union-attr]
