"""The Responses tool loop at its edges, each once a bug: a model answer whose tool call is not an object (a 500 in the
loop, a 502 without it) or, streamed, whose name or arguments is not text (sent to the tool as "[1, 2]"); approvals
that ran their call again (the same approval twice in one input, or replayed in a later turn of a conversation) or
past `max_tool_calls`; a listed tool whose name was another's suffixed one (two functions of one name, a call
reaching the wrong tool); and a caller's header overriding the registration's in another letter case."""

from __future__ import annotations

import hashlib
import secrets
import threading
from collections.abc import Iterator
from typing import Any

import mcp_types as types
import openai
import pytest
from mcp.server.lowlevel import Server as LowLevelServer

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.fakes.mcp_servers import serve_asgi
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway, shared_mcp_server
from tests.gateway_world import GatewayWorld
from tests.world import must

pytestmark = ONE_BACKEND

MCP = "platform.agents.v1.ExternalMcpServerService"


class Counter:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls: list[dict[str, Any]] = []

    def add(self, arguments: dict[str, Any]) -> int:
        with self.lock:
            self.calls.append(arguments)
            return len(self.calls)


COUNTER = Counter()


def _server(port: int) -> Any:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"note": {"type": "string"}}}
        return types.ListToolsResult(
            tools=[types.Tool(name="count", description="Counts its calls.", input_schema=schema)]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        n = COUNTER.add({"name": params.name, **(params.arguments or {})})
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name} call {n}")])

    server: LowLevelServer[Any] = LowLevelServer(
        "probe", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server.streamable_http_app(host="127.0.0.1")


@pytest.fixture(scope="module")
def probe_port() -> Iterator[int]:
    with serve_asgi(_server) as port:
        yield port


@pytest.fixture(scope="module")
async def probe(server: Server, probe_port: int, gw_world: GatewayWorld) -> str:
    return await shared_mcp_server(server, f"http://127.0.0.1:{probe_port}/mcp", "p")


def _mcp(label: str, **extra: Any) -> Any:
    return {"type": "mcp", "server_label": label, "require_approval": "never", **extra}


# --- 1. a model answer whose tool call's `function` is not an object ------------------------------------------


def test_a_tool_call_whose_function_is_not_an_object_is_a_502_not_a_500(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, probe: str, gateway: Gateway
) -> None:
    """docs/robustness.md: "An answer or stream chunk of the wrong shape (a tool call that is not an object, ...) is
    the backend's failure: a 502", with MCP tools (the loop) as without them."""
    fakes.openai.script.append({"tool_calls": [{"id": "call_x", "type": "function", "function": "oops"}]})
    start = len(gateway.log())
    with pytest.raises(openai.APIStatusError) as caught:
        sdk.responses.create(model=gw_world.model("chat"), input="hi", tools=[_mcp(probe)])
    written = gateway.log()[start:]
    assert caught.value.status_code == 502, (caught.value.status_code, caught.value.body)
    assert "Traceback" not in written, written[-3000:]


@pytest.mark.parametrize(
    "function",
    [
        {"name": "p_count", "arguments": [1, 2]},  # once turned into the text "[1, 2]" and sent to the tool
        {"name": 5, "arguments": "{}"},
    ],
)
def test_a_streamed_tool_call_piece_that_is_not_text_fails_the_stream(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, probe: str, function: dict[str, Any]
) -> None:
    """The streamed loop reads a chunk as the plain stream does (`translate.stream_deltas`): a tool-call piece whose
    name or arguments is not text is the backend's failure, and no tool is called on what it could not read."""
    before = len(COUNTER.calls)
    fakes.openai.script.append({"tool_calls": [{"id": "call_x", "type": "function", "function": function}]})
    with sdk.responses.stream(model=gw_world.model("chat"), input="hi", tools=[_mcp(probe)]) as stream:
        kinds = [event.type for event in stream]
    assert kinds[-1] == "response.failed", kinds
    assert len(COUNTER.calls) == before


# --- 2. approvals are single-use --------------------------------------------------------------------------------


def test_one_approval_sent_twice_runs_the_call_once(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, probe: str
) -> None:
    """An mcp_approval_response approves the one call its request stands for: the same approval_request_id twice in
    one input runs it once."""
    tool = _mcp(probe, require_approval="always")
    fakes.openai.script.append(tool_calls((f"{probe}count", '{"note": "pay 100 EUR"}')))
    first = sdk.responses.create(model=gw_world.model("chat"), input="pay", tools=[tool])
    asked = first.output[-1]
    assert asked.type == "mcp_approval_request"
    approval = {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": True}
    before = len(COUNTER.calls)
    second = sdk.responses.create(
        model=gw_world.model("chat"), previous_response_id=first.id, input=[approval, approval], tools=[tool]
    )
    ran = [i for i in second.output if i.type == "mcp_call"]
    assert len(COUNTER.calls) - before == 1, [c for c in COUNTER.calls[before:]]
    assert len(ran) == 1


def test_an_approval_already_acted_on_in_a_conversation_does_not_run_again(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, probe: str
) -> None:
    """In a conversation every earlier approval request stays in its history: an approval response for a request
    whose call already ran turns ago runs nothing again."""
    tool = _mcp(probe, require_approval="always")
    conversation = sdk.conversations.create()
    fakes.openai.script.append(tool_calls((f"{probe}count", '{"note": "transfer once"}')))
    first = sdk.responses.create(model=gw_world.model("chat"), input="go", tools=[tool], conversation=conversation.id)
    asked = first.output[-1]
    assert asked.type == "mcp_approval_request"
    approval = {"type": "mcp_approval_response", "approval_request_id": asked.id, "approve": True}
    before = len(COUNTER.calls)
    second = sdk.responses.create(
        model=gw_world.model("chat"), input=[approval], tools=[tool], conversation=conversation.id
    )
    assert [i.type for i in second.output][:1] == ["mcp_call"]
    assert len(COUNTER.calls) - before == 1
    # Later, the same approval again (a client retry, a replay): the request was already answered.
    third = sdk.responses.create(
        model=gw_world.model("chat"), input=[approval], tools=[tool], conversation=conversation.id
    )
    assert len(COUNTER.calls) - before == 1, "the approved call ran a second time"
    assert "mcp_call" not in [i.type for i in third.output]


# --- 3. max_tool_calls also bounds approved calls -----------------------------------------------------------------


def test_max_tool_calls_bounds_calls_run_by_approvals(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, probe: str
) -> None:
    """docs/gateway.md: "Bounds end the turn `incomplete` ...: `max_tool_calls` (request field)", calls run by
    approval responses included."""
    tool = _mcp(probe, require_approval="always")
    calls = [(f"{probe}count", f'{{"note": "n{i}"}}') for i in range(5)]
    fakes.openai.script.append(tool_calls(*calls))
    first = sdk.responses.create(model=gw_world.model("chat"), input="five", tools=[tool])
    asked = [i for i in first.output if i.type == "mcp_approval_request"]
    assert len(asked) == 5
    approvals = [{"type": "mcp_approval_response", "approval_request_id": a.id, "approve": True} for a in asked]
    before = len(COUNTER.calls)
    second = sdk.responses.create(
        model=gw_world.model("chat"),
        previous_response_id=first.id,
        input=approvals,
        tools=[tool],
        max_tool_calls=1,
    )
    ran = [i for i in second.output if i.type == "mcp_call"]
    assert len(COUNTER.calls) - before == 1 and len(ran) == 1, (len(COUNTER.calls) - before, second.status)
    assert second.status == "incomplete" and second.incomplete_details is not None
    assert second.incomplete_details.reason == "max_tool_calls"


# --- 4. model-visible names: a collision the hash suffix resolves into a taken name ------------------------------

COLLIDE: dict[str, str] = {}  # "label": the registered name of the collision server (its listing depends on it)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def _collision_server(port: int) -> Any:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        label = COLLIDE.get("label", "")
        # `a.b` and `a_b` both sanitise to `{label}a_b`: the second gets `{label}a_b_{digest(label\0a_b)}`, which is
        # exactly the plain model name of the first tool listed here.
        third = f"a_b_{_digest(label + chr(0) + 'a_b')}"
        schema = {"type": "object"}
        return types.ListToolsResult(
            tools=[
                types.Tool(name=third, description="The third tool.", input_schema=schema),
                types.Tool(name="a.b", description="The dotted tool.", input_schema=schema),
                types.Tool(name="a_b", description="The underscored tool.", input_schema=schema),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        COUNTER.add({"name": params.name})
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

    server: LowLevelServer[Any] = LowLevelServer(
        "collide", version="1.0.0", on_list_tools=list_tools, on_call_tool=call_tool
    )
    return server.streamable_http_app(host="127.0.0.1")


@pytest.fixture(scope="module")
async def collide(server: Server, gw_world: GatewayWorld) -> Iterator[str]:
    with serve_asgi(_collision_server) as port:
        label = await shared_mcp_server(server, f"http://127.0.0.1:{port}/mcp", "c")
        COLLIDE["label"] = label
        yield label


def test_every_listed_tool_gets_its_own_model_name_and_a_call_reaches_that_tool(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, collide: str
) -> None:
    """server/mcp/toolnames.py: names are "unique within the request": a suffixed name that is another listed tool's
    plain name takes the next suffix, so the upstream is offered no two functions of one name and a call of each
    tool reaches that tool."""
    third = f"a_b_{_digest(collide + chr(0) + 'a_b')}"
    shadowed = f"{collide}{third}"
    fakes.openai.script.append(tool_calls((shadowed, "{}")))
    before_sent, before_calls = len(fakes.openai.received), len(COUNTER.calls)
    result = sdk.responses.create(model=gw_world.model("chat"), input="third", tools=[_mcp(collide)])
    sent = [t["function"]["name"] for t in (fakes.openai.received[before_sent].json or {}).get("tools") or ()]
    assert len(sent) == len(set(sent)), sent
    called = [c["name"] for c in COUNTER.calls[before_calls:]]
    assert called == [third], (called, [i.type for i in result.output])


# --- 5. a caller's header in another letter case rides along with, and ahead of, the registration's -------------

SEEN_HEADERS: list[list[tuple[bytes, bytes]]] = []


def _recording_server(port: int) -> Any:
    inner = _server(port)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            SEEN_HEADERS.append(list(scope.get("headers") or ()))
        await inner(scope, receive, send)

    return app


@pytest.fixture(scope="module")
async def recorded(server: Server, gw_world: GatewayWorld) -> Iterator[str]:
    with serve_asgi(_recording_server) as port:
        name = f"r{secrets.token_hex(3)}_"
        spec = {
            "name": name,
            "serverUrl": f"http://127.0.0.1:{port}/mcp",
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"},
            "sharing": {"shareToAll": True},
        }
        body = {"externalMcpServer": spec, "staticHeaders": [{"name": "X-Team", "value": "team-a"}]}
        connect = ConnectJsonCaller(server.base_url)
        must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
        yield name


def test_a_caller_header_cannot_override_a_registered_static_header_by_changing_its_case(
    sdk: openai.OpenAI, gw_world: GatewayWorld, fakes: Fakes, recorded: str
) -> None:
    """The registration's own headers win over the caller's in any letter case: both were sent, the caller's first,
    and a server reading the first value (Starlette, most frameworks) acted on the caller's with the platform's
    credentials."""
    fakes.openai.script.append(tool_calls((f"{recorded}count", "{}")))
    before = len(SEEN_HEADERS)
    tool = _mcp(recorded, headers={"x-team": "team-b"})
    result = sdk.responses.create(model=gw_world.model("chat"), input="who", tools=[tool])
    assert any(i.type == "mcp_call" for i in result.output)
    sent = [[v for k, v in headers if k == b"x-team"] for headers in SEEN_HEADERS[before:]]
    assert sent, "the server saw no request"
    assert all(values == [b"team-a"] for values in sent), sent
