"""The Responses built-in tool loop over MCP, through the official OpenAI SDK: real MCP servers (the mcp SDK) on
loopback behind a bearer token and static headers, or OAuth; a scripted fake model; the gateway process between."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import aiohttp
import openai
import pytest
from mcp.server import MCPServer
from sqlalchemy import select

from server.metering import CallKind
from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.legacy_mcp import LegacyMcp
from tests.fakes.mcp_servers import CLIENT_ID, AutoApprove, loop_tools_server, oauth_server, serve_asgi
from tests.fakes.serve import serve_in_thread
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld
from tests.world import must

pytestmark = ONE_BACKEND  # the gateway's HTTP semantics; storage is tested on both databases elsewhere

MCP = "platform.agents.v1.ExternalMcpServerService"
USAGE = "platform.metering.v1.PlatformUsageService"
BEARER = "sk-loop-SECRET-bearer-9"
HEADER_SECRET = "hdr-loop-SECRET-8"


@dataclass
class Servers:
    tools: str  # registered name of the bearer + static-header server, shared with every tenant
    tools_url: str
    private: str  # registered, not shared: nobody but the platform admin may use it
    oauth: str  # registered OAuth server
    provider: AutoApprove
    down: str  # registered, nothing listens there


@pytest.fixture(scope="session")
def mcp_ports(server: Server) -> Iterator[tuple[int, int, AutoApprove]]:
    provider = AutoApprove(server.settings.mcp_oauth_redirect_uri)
    headers = {"Authorization": f"Bearer {BEARER}", "X-Team": HEADER_SECRET}
    with serve_asgi(loop_tools_server(headers)) as tools_port, serve_asgi(oauth_server(provider)) as oauth_port:
        yield tools_port, oauth_port, provider


async def _register(connect: ConnectJsonCaller, server: Server, url: str, auth: dict[str, Any], **extra: Any) -> str:
    name = f"s{secrets.token_hex(3)}_"
    body = {"externalMcpServer": {"name": name, "serverUrl": url, "auth": auth, **extra.pop("spec", {})}, **extra}
    must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
    return name


@pytest.fixture(scope="session")
async def servers(server: Server, mcp_ports: tuple[int, int, AutoApprove], gw_world: GatewayWorld) -> Servers:
    connect = ConnectJsonCaller(server.base_url)
    tools_port, oauth_port, provider = mcp_ports
    tools_url = f"http://127.0.0.1:{tools_port}/mcp"
    shared = {"sharing": {"shareToAll": True}}
    bearer = {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"}
    secrets_ = {"apiKey": BEARER, "staticHeaders": [{"name": "X-Team", "value": HEADER_SECRET}]}
    tools = await _register(connect, server, tools_url, bearer, spec=shared, **secrets_)
    private = await _register(connect, server, tools_url, bearer, **secrets_)
    oauth = {
        "type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE",
        "oauth": {"clientId": CLIENT_ID, "tokenEndpointAuthMethod": "none"},
    }
    oauth_name = await _register(connect, server, f"http://127.0.0.1:{oauth_port}/mcp", oauth, spec=shared)
    closed = "http://127.0.0.1:9/mcp"
    down = await _register(connect, server, closed, {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"}, spec=shared)
    return Servers(tools, tools_url, private, oauth_name, provider, down)


def _mcp(label: str, **extra: Any) -> Any:
    return {"type": "mcp", "server_label": label, "require_approval": "never", **extra}


def _sent_tools(fakes: Fakes, index: int = -1) -> list[str]:
    body = fakes.openai.received[index].json or {}
    return [t["function"]["name"] for t in body.get("tools") or ()]


def test_bad_arguments_go_back_to_the_model_and_the_turn_ends_with_the_answer(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    add = f"{servers.tools}add"
    fakes.openai.script += [tool_calls((add, '{"a": "two", "b": 3}')), tool_calls((add, '{"a": 2, "b": 3}'))]
    before = len(fakes.openai.received)
    result = sdk.responses.create(model=gw_world.model("chat"), input="2+3?", tools=[_mcp(servers.tools)])
    assert result.status == "completed"
    assert [i.type for i in result.output] == ["mcp_list_tools", "mcp_call", "mcp_call", "message"]
    listing, bad, good, _answer = result.output
    assert listing.server_label == servers.tools  # type: ignore[union-attr]
    assert {t.name for t in listing.tools} == {"add", "slow", "big", "fails"}  # type: ignore[union-attr]
    assert bad.error is not None and "Invalid arguments" in str(bad.error)  # type: ignore[union-attr]
    assert bad.output is None and bad.status == "failed"  # type: ignore[union-attr]
    assert good.output == "5" and good.error is None and good.status == "completed"  # type: ignore[union-attr]
    assert result.output_text == "The tool said: 5"
    # Three model calls in one turn; the second one carries the validation error as the tool's output.
    sent = fakes.openai.received[before:]
    assert len(sent) == 3
    second = (sent[1].json or {})["messages"]
    assert second[-1]["role"] == "tool" and "Invalid arguments" in second[-1]["content"]
    assert "a" in second[-1]["content"]  # names the bad argument
    assert add in _sent_tools(fakes, before)
    assert result.usage is not None and result.usage.total_tokens == 3 * 10  # summed over the model calls
    # Stored credentials were attached (the server refuses without them) and are never echoed.
    assert BEARER not in result.model_dump_json() and HEADER_SECRET not in result.model_dump_json()


def test_stream_helper_accepts_the_mcp_event_sequence(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    fakes.openai.script.append(tool_calls((f"{servers.tools}add", '{"a": 1, "b": 1}')))
    with sdk.responses.stream(model=gw_world.model("chat"), input="1+1?", tools=[_mcp(servers.tools)]) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    assert kinds[:2] == ["response.created", "response.in_progress"]
    mcp_kinds = [k for k in kinds if "mcp" in k]
    assert mcp_kinds == [
        "response.mcp_list_tools.in_progress",
        "response.mcp_list_tools.completed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_call.completed",
    ]
    assert kinds[-1] == "response.completed"
    assert [i.type for i in final.output] == ["mcp_list_tools", "mcp_call", "message"]
    assert final.output_text == "The tool said: 2"


def test_raw_stream_heartbeats_while_a_tool_runs(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    fakes.openai.script.append(tool_calls((f"{servers.tools}slow", '{"seconds": 1.6}')))
    events = list(
        sdk.responses.create(model=gw_world.model("chat"), input="wait", tools=[_mcp(servers.tools)], stream=True)
    )
    kinds = [e.type for e in events]
    running = kinds[kinds.index("response.mcp_call.in_progress") : kinds.index("response.mcp_call.completed")]
    assert "response.in_progress" in running  # re-sent while the tool ran (interval 0.5 s in the test gateway)
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"


async def test_slow_continuations_send_keepalive_comments_the_sdk_ignores(
    sdk: openai.OpenAI, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    """After the tool ran, the continuation model call takes 1.6 s (heartbeat 0.5 s in the test gateway): the raw
    stream carries `: keepalive` comments in that gap, the event stream around them is whole and in order, and the
    answer streams piece by piece."""
    add = f"{servers.tools}add"
    slow_answer = {"content": "late but here", "delay_seconds": 1.6}
    fakes.openai.script += [tool_calls((add, '{"a": 2, "b": 3}')), slow_answer]
    body = {"model": gw_world.model("chat"), "input": "2+3?", "stream": True, "tools": [_mcp(servers.tools)]}
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/responses", json=body, headers=headers) as resp,
    ):
        assert resp.status == 200 and resp.content_type == "text/event-stream"
        raw = (await resp.read()).decode()
    blocks = [b for b in raw.split("\n\n") if b.strip()]
    comments = [i for i, b in enumerate(blocks) if b.startswith(":")]
    assert all(blocks[i] == ": keepalive" for i in comments)
    events = [json.loads(b.split("data: ", 1)[1]) for b in blocks if not b.startswith(":")]
    kinds = [e["type"] for e in events]
    called = next(i for i, b in enumerate(blocks) if '"response.mcp_call.completed"' in b)
    answered = next(i for i, b in enumerate(blocks) if '"response.output_text.delta"' in b)
    assert len([i for i in comments if called < i < answered]) >= 2  # during the slow continuation
    assert [e["sequence_number"] for e in events] == list(range(len(events)))  # comments take no numbers
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert events[-1]["response"]["output"][-1]["content"][0]["text"] == "late but here"
    # The continuation is streamed: its text arrives in the pieces the model sent, not as one delta at the end.
    assert [e["delta"] for e in events if e["type"] == "response.output_text.delta"] == ["late b", "ut here"]

    # The SDK's stream helper takes the same kind of stream, comments and all.
    fakes.openai.script += [tool_calls((add, '{"a": 2, "b": 3}')), slow_answer]
    with sdk.responses.stream(model=gw_world.model("chat"), input="2+3?", tools=[_mcp(servers.tools)]) as stream:
        seen = [event.type for event in stream]
        final = stream.get_final_response()
    assert seen == kinds
    assert final.output_text == "late but here"
    assert [i.type for i in final.output] == ["mcp_list_tools", "mcp_call", "message"]


def test_continuations_reuse_the_listing_and_stored_items(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    add = f"{servers.tools}add"
    fakes.openai.script.append(tool_calls((add, '{"a": 4, "b": 4}')))
    first = sdk.responses.create(model=gw_world.model("chat"), input="4+4?", tools=[_mcp(servers.tools)])
    assert [i.type for i in first.output] == ["mcp_list_tools", "mcp_call", "message"]
    fakes.openai.script.append(tool_calls((add, '{"a": 8, "b": 1}')))
    second = sdk.responses.create(
        model=gw_world.model("chat"), input="and +1?", previous_response_id=first.id, tools=[_mcp(servers.tools)]
    )
    assert [i.type for i in second.output] == ["mcp_call", "message"]  # no second listing in the chain
    assert second.output_text == "The tool said: 9"
    history = (fakes.openai.received[-2].json or {})["messages"]
    roles = [m["role"] for m in history]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]  # the first turn's call and answer
    assert add in _sent_tools(fakes)
    stored = sdk.responses.retrieve(second.id)
    assert [i.type for i in stored.output] == ["mcp_call", "message"]


def test_approval_requests_stop_the_turn_and_approvals_continue_it(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    add = f"{servers.tools}add"
    tool = _mcp(servers.tools, require_approval="always")
    fakes.openai.script.append(tool_calls((add, '{"a": 20, "b": 22}')))
    first = sdk.responses.create(model=gw_world.model("chat"), input="20+22?", tools=[tool])
    assert first.status == "completed"
    assert [i.type for i in first.output] == ["mcp_list_tools", "mcp_approval_request"]
    asked = first.output[1]
    assert asked.name == "add" and asked.arguments == '{"a": 20, "b": 22}'  # type: ignore[union-attr]
    approval = {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": True}
    second = sdk.responses.create(
        model=gw_world.model("chat"),
        previous_response_id=first.id,
        input=[approval],
        tools=[tool],  # type: ignore[list-item]
    )
    assert [i.type for i in second.output] == ["mcp_call", "message"]
    call = second.output[0]
    assert call.approval_request_id == asked.id and call.output == "42"  # type: ignore[union-attr]
    assert second.output_text == "The tool said: 42"
    # A declined request is answered for the model, and nothing runs.
    fakes.openai.script.append(tool_calls((add, '{"a": 1, "b": 2}')))
    third = sdk.responses.create(model=gw_world.model("chat"), input="1+2?", tools=[tool])
    decline = {"type": "mcp_approval_response", "approval_request_id": third.output[1].id, "approve": False}
    fourth = sdk.responses.create(
        model=gw_world.model("chat"),
        previous_response_id=third.id,
        input=[decline],
        tools=[tool],  # type: ignore[list-item]
    )
    assert [i.type for i in fourth.output] == ["message"]
    assert "declined" in fourth.output_text


def test_function_tools_mix_with_mcp_tools(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    fakes.openai.script.append(tool_calls((f"{servers.tools}add", '{"a": 1, "b": 2}'), ("get_weather", "{}")))
    result = sdk.responses.create(
        model=gw_world.model("chat"),
        input="both",
        tools=[_mcp(servers.tools), weather],  # type: ignore[list-item]
    )
    assert [i.type for i in result.output] == ["mcp_list_tools", "mcp_call", "function_call"]
    assert result.status == "completed"
    follow = sdk.responses.create(
        model=gw_world.model("chat"),
        previous_response_id=result.id,
        input=[{"type": "function_call_output", "call_id": "call_s1", "output": "sunny"}],
        tools=[_mcp(servers.tools), weather],  # type: ignore[list-item]
    )
    assert follow.output_text == "The tool said: sunny"
    history = (fakes.openai.received[-1].json or {})["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "tool"]


def test_bounds_end_the_turn_incomplete(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    add = f"{servers.tools}add"
    fakes.openai.script += [tool_calls((add, '{"a": 1, "b": 1}')), tool_calls((add, '{"a": 2, "b": 2}'))]
    limited = sdk.responses.create(
        model=gw_world.model("chat"), input="twice", tools=[_mcp(servers.tools)], max_tool_calls=1
    )
    assert limited.status == "incomplete" and limited.incomplete_details is not None
    assert limited.incomplete_details.reason == "max_tool_calls"  # type: ignore[comparison-overlap]
    assert [i.type for i in limited.output] == ["mcp_list_tools", "mcp_call"]
    fakes.openai.script.clear()
    fakes.openai.script.append(tool_calls((f"{servers.tools}slow", '{"seconds": 10}')))
    slow = sdk.responses.create(model=gw_world.model("chat"), input="slow", tools=[_mcp(servers.tools)])
    assert slow.status == "incomplete" and slow.incomplete_details is not None
    assert slow.incomplete_details.reason == "tool_call_timeout"  # type: ignore[comparison-overlap]
    assert "did not answer in time" in str(slow.output[-1].error)  # type: ignore[union-attr]


def test_failing_servers_give_the_model_an_error_and_leak_nothing(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers, gateway: Gateway
) -> None:
    fakes.openai.script += [
        tool_calls((f"{servers.tools}fails", "{}")),
        tool_calls((f"{servers.tools}big", '{"size": 100000}')),
    ]
    result = sdk.responses.create(model=gw_world.model("chat"), input="break", tools=[_mcp(servers.tools)])
    assert result.status == "completed"
    broke, big = result.output[1], result.output[2]
    assert broke.status == "failed" and "the tool broke" in str(broke.error)  # type: ignore[union-attr]
    assert big.status == "failed" and "larger than the platform accepts" in str(big.error)  # type: ignore[union-attr]
    # A server that is down: its listing says so, the model gets no tools of it, the turn still answers.
    down = sdk.responses.create(model=gw_world.model("chat"), input="hi", tools=[_mcp(servers.down)])
    assert [i.type for i in down.output] == ["mcp_list_tools", "message"]
    assert down.output[0].error and "could not be reached" in down.output[0].error  # type: ignore[union-attr]
    assert "Traceback" not in gateway.log() and BEARER not in gateway.log()


def test_only_registered_servers_the_caller_may_use(
    sdk: openai.OpenAI, gw_world: GatewayWorld, servers: Servers
) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        (_mcp("nope-not-registered"), "tools[0].server_label"),
        (_mcp(servers.private), "tools[0].server_label"),
        (_mcp(servers.tools, server_url="https://elsewhere.example.test/mcp"), "tools[0].server_url"),
        (_mcp(servers.tools, headers={"Authorization": "Bearer x"}), "tools[0].headers"),
        (_mcp(servers.oauth), "tools[0].authorization"),
        (_mcp(servers.tools, require_approval="sometimes"), "tools[0].require_approval"),
    ]
    for tool, field in cases:
        with pytest.raises(openai.BadRequestError) as caught:
            sdk.responses.create(model=gw_world.model("chat"), input="hi", tools=[tool])
        assert caught.value.body["param"] == field, (field, caught.value.body)  # type: ignore[index]
    with pytest.raises(openai.BadRequestError) as oauth:
        sdk.responses.create(model=gw_world.model("chat"), input="hi", tools=[_mcp(servers.oauth)])
    assert "GetExternalMcpServerOAuthMetadata" in oauth.value.message


def test_per_user_oauth_token_reaches_the_server(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    token = servers.provider._issue(CLIENT_ID, [], None).access_token
    fakes.openai.script.append(tool_calls((f"{servers.oauth}whoami", "{}")))
    tool = _mcp(servers.oauth, authorization=token)
    result = sdk.responses.create(model=gw_world.model("chat"), input="who?", tools=[tool])
    assert result.output_text == "The tool said: user-42"
    assert token not in result.model_dump_json()
    assert all("authorization" not in t.model_dump(exclude_none=True) for t in result.tools)


async def test_tool_calls_are_metered(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    fakes.openai.script.clear()
    fakes.openai.script.append(tool_calls((f"{servers.tools}add", '{"a": 3, "b": 4}')))
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as sdk:
        result = await sdk.responses.create(model=gw_world.model("chat"), input="3+4", tools=[_mcp(servers.tools)])
    assert result.output_text == "The tool said: 7"
    rows: list[UsageEventRow] = []
    for _ in range(200):  # the flusher writes in the background (bounded wait, not a timing assertion)
        async with gateway.db.read() as s:
            rows = list(
                await s.scalars(
                    select(UsageEventRow).where(
                        UsageEventRow.call_kind == int(CallKind.MCP_TOOL_CALL),
                        UsageEventRow.target_name == servers.tools,
                        UsageEventRow.api_key_id == gw_world.key_ids["all"],
                    )
                )
            )
        if rows:
            break
        await asyncio.sleep(0.05)
    assert rows and {r.model_id for r in rows} >= {"add"} and all(r.status in (200, 422, 502, 504) for r in rows)
    # The platform's call-count series reports the kind, per called resource: the MCP server, not its tools.
    now = datetime.now(UTC)
    window = {
        "startTime": (now - timedelta(minutes=30)).isoformat().replace("+00:00", "Z"),
        "endTime": (now + timedelta(minutes=30)).isoformat().replace("+00:00", "Z"),
    }
    body = {"window": window, "step": "3600s", "kind": "CALL_KIND_MCP_TOOL_CALL", "groupBy": "CALL_GROUP_BY_MODEL"}
    answer = must(
        await ConnectJsonCaller(server.base_url).call(
            f"{USAGE}/GetPlatformCallCountSeries", body, token=server.admin_token, get=True
        )
    )
    counted = {s["resourceId"]: sum(int(p.get("count", 0)) for p in s["points"]) for s in answer["series"]}
    assert counted.get(servers.tools, 0) >= 1 and "add" not in counted


def test_conversations_keep_the_loop_items(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    conversation = sdk.conversations.create()
    fakes.openai.script.append(tool_calls((f"{servers.tools}add", '{"a": 5, "b": 5}')))
    first = sdk.responses.create(
        model=gw_world.model("chat"), input="5+5", tools=[_mcp(servers.tools)], conversation=conversation.id
    )
    assert first.output_text == "The tool said: 10"
    items = sdk.conversations.items.list(conversation.id, order="asc").data
    assert [i.type for i in items] == ["message", "mcp_list_tools", "mcp_call", "message"]
    fakes.openai.script.append(tool_calls((f"{servers.tools}add", '{"a": 10, "b": 1}')))
    second = sdk.responses.create(
        model=gw_world.model("chat"), input="+1", tools=[_mcp(servers.tools)], conversation=conversation.id
    )
    assert [i.type for i in second.output] == ["mcp_call", "message"]  # the conversation's listing is reused
    history = (fakes.openai.received[-2].json or {})["messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant", "user"]
    assert json.dumps(history).count("tool_call_id") == 1


def _sse_app(port: int) -> Any:
    mcp = MCPServer("sse-srv", version="1.0.0")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return mcp.sse_app(host="127.0.0.1")


@pytest.fixture(scope="session")
def legacy_urls() -> Iterator[dict[str, tuple[str, LegacyMcp | None]]]:
    """Servers of each protocol era: handshake-era versions over streamable HTTP, and the 2024-11-05 HTTP+SSE
    transport (the SDK's own server); the 2026-07-28 era is every other test's server."""
    fakes = {version: LegacyMcp(version) for version in ("2025-03-26", "2025-06-18", "2025-11-25")}
    with contextlib.ExitStack() as stack:
        urls: dict[str, tuple[str, LegacyMcp | None]] = {}
        for version, fake in fakes.items():
            port = stack.enter_context(serve_in_thread(fake.app))
            urls[version] = (f"http://127.0.0.1:{port}/mcp", fake)
        sse_port = stack.enter_context(serve_asgi(_sse_app))
        urls["http+sse"] = (f"http://127.0.0.1:{sse_port}/sse", None)
        yield urls


@pytest.fixture(scope="session")
async def legacy_servers(
    server: Server, legacy_urls: dict[str, tuple[str, LegacyMcp | None]]
) -> dict[str, tuple[str, LegacyMcp | None]]:
    """Each era's server registered (shared with every tenant): era -> (registered name, fake)."""
    connect = ConnectJsonCaller(server.base_url)
    shared = {"sharing": {"shareToAll": True}}
    none = {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"}
    return {
        era: (await _register(connect, server, url, none, spec=shared), fake)
        for era, (url, fake) in legacy_urls.items()
    }


@pytest.mark.parametrize("era", ["2025-03-26", "2025-06-18", "2025-11-25", "http+sse"])
async def test_older_protocol_versions_are_negotiated(
    gateway: Gateway,
    gw_world: GatewayWorld,
    fakes: Fakes,
    legacy_servers: dict[str, tuple[str, LegacyMcp | None]],
    era: str,
) -> None:
    name, fake = legacy_servers[era]
    fakes.openai.script.clear()
    fakes.openai.script.append(tool_calls((f"{name}add", '{"a": 30, "b": 12}')))
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as sdk:
        result = await sdk.responses.create(model=gw_world.model("chat"), input="30+12", tools=[_mcp(name)])
    fakes.openai.script.clear()
    assert [i.type for i in result.output] == ["mcp_list_tools", "mcp_call", "message"], result.output
    assert result.output_text == "The tool said: 42"
    if fake is not None:  # every request after the handshake named the version the server chose
        assert fake.seen_versions and set(fake.seen_versions) == {era}


async def _closed_responses(gateway: Gateway, key_id: str) -> int:
    async with gateway.db.read() as s:
        rows = await s.scalars(
            select(UsageEventRow).where(
                UsageEventRow.call_kind == int(CallKind.RESPONSE),
                UsageEventRow.api_key_id == key_id,
                UsageEventRow.status == 499,
            )
        )
        return len(list(rows))


async def test_a_client_gone_mid_loop_stops_the_loop(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    fakes.openai.script.clear()
    fakes.openai.script.append(tool_calls((f"{servers.tools}slow", '{"seconds": 2}')))
    key_id = gw_world.key_ids["all"]
    closed_before = await _closed_responses(gateway, key_id)
    before = len(fakes.openai.received)
    body = {"model": gw_world.model("chat"), "input": "wait", "stream": True, "tools": [_mcp(servers.tools)]}
    headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/responses", json=body, headers=headers) as resp,
    ):
        async for line in resp.content:
            if b"response.mcp_call.in_progress" in line:
                break  # hang up while the tool runs
    closed = closed_before
    for _ in range(400):  # the gateway meters the abandoned call once its loop has stopped (bounded wait)
        closed = await _closed_responses(gateway, key_id)
        if closed > closed_before:
            break
        await asyncio.sleep(0.05)
    assert closed == closed_before + 1, "the abandoned response was never metered as client-closed"
    assert len(fakes.openai.received) == before + 1  # the model was not asked again after the tool
    fakes.openai.script.clear()


async def test_openai_agents_hosted_mcp_tool(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, servers: Servers
) -> None:
    from agents import Agent, HostedMCPTool, OpenAIResponsesModel, Runner, set_tracing_disabled

    set_tracing_disabled(True)  # the agents SDK would export its traces to OpenAI; nothing leaves loopback
    fakes.openai.script.clear()
    fakes.openai.script.append(tool_calls((f"{servers.tools}add", '{"a": 6, "b": 7}')))
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as client:
        agent = Agent(
            name="adder",
            instructions="Use the tools.",
            model=OpenAIResponsesModel(model=gw_world.model("chat"), openai_client=client),
            tools=[
                HostedMCPTool(tool_config={"type": "mcp", "server_label": servers.tools, "require_approval": "never"})
            ],
        )
        result = await Runner.run(agent, "6+7?")
    fakes.openai.script.clear()
    assert result.final_output == "The tool said: 13"
    kinds = [item.type for item in result.new_items]
    assert "mcp_list_tools_item" in kinds and "tool_call_item" in kinds


async def test_a_changed_or_deleted_registration_never_uses_the_old_session(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    """The pooled session is keyed by every credential sent, and the registration is read for every request: a
    rotated token reaches the server on the very next turn (a new session), and a deleted server is refused before
    anything is sent, though its session may still be open in the pool."""
    tokens: list[str] = []  # the bearer of every tools/call the server received
    tools = loop_tools_server({})

    def recording(port: int) -> Any:
        app = tools(port)

        async def asgi(scope: Any, receive: Any, send: Any) -> None:
            headers = dict(scope.get("headers") or [])
            if scope["type"] == "http" and headers.get(b"mcp-method") == b"tools/call":
                tokens.append(headers.get(b"authorization", b"").decode())
            await app(scope, receive, send)

        return asgi

    connect = ConnectJsonCaller(server.base_url)
    bearer = {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"}
    with serve_asgi(recording) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        name = await _register(connect, server, url, bearer, spec={"sharing": {"shareToAll": True}}, apiKey="one")

        async def add(a: int) -> Any:
            fakes.openai.script.clear()
            fakes.openai.script.append(tool_calls((f"{name}add", json.dumps({"a": a, "b": 1}))))
            async with openai.AsyncOpenAI(
                base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0
            ) as sdk:
                return await sdk.responses.create(model=gw_world.model("chat"), input="add", tools=[_mcp(name)])

        try:
            assert (await add(1)).output_text == "The tool said: 2"
            got = must(await connect.call(f"{MCP}/GetExternalMcpServer", {"name": name}, token=server.admin_token))
            update = {"externalMcpServer": got["externalMcpServer"], "apiKey": "two"}
            must(await connect.call(f"{MCP}/UpdateExternalMcpServer", update, token=server.admin_token))
            assert (await add(2)).output_text == "The tool said: 3"
            assert tokens == ["Bearer one", "Bearer two"]

            must(await connect.call(f"{MCP}/DeleteExternalMcpServer", {"name": name}, token=server.admin_token))
            with pytest.raises(openai.BadRequestError) as refused:
                await add(3)
            assert "server_label" in str(refused.value) and name in str(refused.value)
            assert tokens == ["Bearer one", "Bearer two"]  # nothing more reached the server
        finally:
            fakes.openai.script.clear()
