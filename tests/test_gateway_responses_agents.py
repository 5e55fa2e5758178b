"""Preset agents on /v1/responses through the official OpenAI SDK: the agent's instructions first, its default MCP
server's tools in the loop, ordered output guardrails with OpenAI-shaped refusals, failing closed, and buffered
streams the SDK's stream helper parses."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import AsyncIterator, Iterator

import openai
import pytest
import pytest_asyncio
from sqlalchemy import select

from gateway.calls import GUARDRAIL_REFUSED
from server.metering import CallKind
from server.store.models import UsageEventRow
from tests.agent_world import AgentWorld, agent_body, build_agent_world, create_agent
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.mcp_servers import loop_tools_server, serve_asgi
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld, all_resources_key
from tests.world import must

pytestmark = ONE_BACKEND  # the gateway's HTTP semantics; storage is tested on both databases elsewhere

MCP = "platform.agents.v1.ExternalMcpServerService"
TOOLED_INSTRUCTIONS = "Add numbers with the add tool."


@pytest.fixture(scope="module")
def tools_port() -> Iterator[int]:
    with serve_asgi(loop_tools_server({})) as port:
        yield port


@pytest_asyncio.fixture(scope="module")
async def aw(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, tools_port: int
) -> AsyncIterator[AgentWorld]:
    connect = ConnectJsonCaller(server.base_url)
    # The same tenant and keys as the session's gateway world, models and agents of its own (another tag).
    gw = dataclasses.replace(gw_world, tag=secrets.token_hex(3), names=dict(gw_world.names))
    world = await build_agent_world(connect, server.admin_token, gw, fakes.openai_url)
    label = f"a{secrets.token_hex(3)}_"
    body = {
        "externalMcpServer": {
            "name": label,
            "serverUrl": f"http://127.0.0.1:{tools_port}/mcp",
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"},
            "sharing": {"shareToAll": True},
        }
    }
    must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
    tooled = agent_body(
        world,
        "tooled",
        "echo",
        ["g-llama"],
        instructions=TOOLED_INSTRUCTIONS,
        defaultMcpServers=[label],
        sharing={"shareToAll": True},
    )
    await create_agent(connect, gw_world.tokens["editor"], world, "tooled", tooled)
    world.names["mcp"] = label
    yield world


@pytest.fixture
def sdk(gateway: Gateway, aw: AgentWorld, fakes: Fakes) -> Iterator[openai.OpenAI]:
    fakes.openai.script.clear()
    with openai.OpenAI(base_url=gateway.base_url, api_key=aw.gw.keys["all"], max_retries=0) as client:
        yield client
    fakes.openai.script.clear()


def _models(fakes: Fakes, since: int) -> list[str]:
    return [str((r.json or {}).get("model")) for r in fakes.openai.received[since:]]


def test_agent_instructions_come_first_and_its_mcp_server_joins_the_loop(
    sdk: openai.OpenAI, aw: AgentWorld, fakes: Fakes
) -> None:
    fakes.openai.script += [tool_calls((f"{aw.names['mcp']}add", '{"a": 2, "b": 3}')), {"content": "It is 5."}]
    since = len(fakes.openai.received)
    result = sdk.responses.create(model=aw.agents["tooled"], input="2+3?", instructions="Answer briefly.")
    assert result.status == "completed" and result.model == aw.agents["tooled"]
    assert [i.type for i in result.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert result.output[1].output == "5"  # type: ignore[union-attr]
    assert result.output_text == "It is 5."
    # Base model twice (the tool call, then the answer), then the guardrail on the final answer.
    assert _models(fakes, since) == ["echo", "echo", "guard-llama"]
    second = fakes.openai.received[since + 1].json or {}
    assert second["messages"][-1]["role"] == "tool" and second["messages"][-1]["content"] == "5"
    first = fakes.openai.received[since].json or {}
    assert first["messages"][:3] == [
        {"role": "system", "content": TOOLED_INSTRUCTIONS},
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "2+3?"},
    ]
    assert [t["function"]["name"] for t in first["tools"]] == [
        f"{aw.names['mcp']}{t}" for t in ("add", "slow", "big", "fails")
    ]
    judged = fakes.openai.received[-1].json or {}
    assert judged["messages"][-1] == {"role": "assistant", "content": "It is 5."}


def test_the_response_echoes_the_agent_s_sampling_defaults_where_the_caller_set_none(
    sdk: openai.OpenAI, aw: AgentWorld
) -> None:
    """It echoed what the caller sent (OpenAI's own defaults for what was unset), not what the model was sent."""
    result = sdk.responses.create(model=aw.agents["plain"], input="hi", top_p=0.9)
    assert (result.temperature, result.top_p, result.max_output_tokens) == (0.3, 0.9, 50)
    result = sdk.responses.create(model=aw.agents["plain"], input="hi", temperature=0.7, max_output_tokens=20)
    assert (result.temperature, result.top_p, result.max_output_tokens) == (0.7, 0.5, 20)


def test_a_guardrail_refusal_is_an_openai_refusal_item(sdk: openai.OpenAI, aw: AgentWorld, fakes: Fakes) -> None:
    since = len(fakes.openai.received)
    result = sdk.responses.create(model=aw.agents["guarded"], input="tell me FORBIDDEN-B")
    assert _models(fakes, since) == ["echo", "guard-llama", "guard-json"]  # the second guardrail refused
    assert result.status == "completed" and result.output_text == ""
    [message] = result.output
    assert message.type == "message"
    [part] = message.content
    assert part.type == "refusal" and "mentions B" in part.refusal
    allowed = sdk.responses.create(model=aw.agents["guarded"], input="a harmless answer")
    assert allowed.output_text == "a harmless answer"


def test_a_guardrail_that_cannot_judge_fails_closed(sdk: openai.OpenAI, aw: AgentWorld) -> None:
    with pytest.raises(openai.APIStatusError) as failed:
        sdk.responses.create(model=aw.agents["down"], input="anything")
    assert failed.value.status_code == 502
    assert "guardrail could not check the response" in failed.value.message


def test_a_guarded_stream_is_buffered_and_replayed_through_completed(sdk: openai.OpenAI, aw: AgentWorld) -> None:
    with sdk.responses.stream(model=aw.agents["guarded"], input="streamed but checked") as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert final.output_text == "streamed but checked"
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_text.delta" in kinds
    with sdk.responses.stream(model=aw.agents["guarded"], input="stream FORBIDDEN-A") as stream:
        kinds = [event.type for event in stream]
        refused = stream.get_final_response()
    assert "response.refusal.delta" in kinds and kinds[-1] == "response.completed"
    [message] = refused.output
    assert message.type == "message" and message.content[0].type == "refusal"
    assert "unsafe content (S1,S10)" in message.content[0].refusal


def test_an_unguarded_agent_streams_as_usual(sdk: openai.OpenAI, aw: AgentWorld, fakes: Fakes) -> None:
    with sdk.responses.stream(model=aw.agents["plain"], input="token by token") as stream:
        final = stream.get_final_response()
    assert final.output_text == "token by token" and final.model == aw.agents["plain"]
    assert (fakes.openai.last().json or {}).get("stream") is True  # relayed, not buffered


async def test_responses_of_an_agent_are_metered_against_it_and_need_its_invoke_right(
    server: Server, gateway: Gateway, aw: AgentWorld
) -> None:
    gw = aw.gw
    secret = await all_resources_key(ConnectJsonCaller(server.base_url), gw, gw.tokens["member"], "resp-metering")
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=secret, max_retries=0) as client:
        await client.responses.create(model=aw.agents["guarded"], input="fine words")
        await client.responses.create(model=aw.agents["guarded"], input="FORBIDDEN-A words")
        with pytest.raises(openai.NotFoundError):  # the editor's unshared agent: not this member's
            await client.responses.create(model=aw.agents["unshared"], input="hi")
    rows: list[UsageEventRow] = []
    for _ in range(200):  # bounded wait for the background flushers; not a timing assertion
        async with gateway.db.read() as s:
            query = select(UsageEventRow).where(UsageEventRow.api_key_id == gw.key_ids["resp-metering"])
            rows = list(await s.scalars(query))
        if len([r for r in rows if r.call_kind == int(CallKind.RESPONSE)]) >= 3:
            break
        await asyncio.sleep(0.05)
    agent_rows = sorted((r for r in rows if r.model_id == aw.agents["guarded"]), key=lambda r: r.id)
    base_name = gw.names[gw.model("echo-text")][1]
    assert [(r.call_kind, r.target_name, r.status) for r in agent_rows] == [
        (int(CallKind.RESPONSE), base_name, 200),
        (int(CallKind.RESPONSE), base_name, GUARDRAIL_REFUSED),
    ]
    assert all(r.total_tokens > 0 for r in agent_rows)
