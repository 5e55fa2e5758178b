"""Preset agents on /v1/chat/completions and /v1/models through the official OpenAI SDK: instructions and sampling
defaults, ordered output guardrails (Llama-Guard style and JSON), refusals, failing closed, buffered streams,
metering, and who may invoke."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import openai
import pytest
import pytest_asyncio
from sqlalchemy import select

from gateway.calls import GUARDRAIL_REFUSED
from server.permissions import ResourceKind
from server.store.models import UsageEventRow
from tests.agent_world import AGENTS, INSTRUCTIONS, AgentWorld, agent_body, build_agent_world, create_agent
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.fakes.upstream import UPSTREAM_SECRET
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import DEPLOYMENTS, GatewayWorld, ModelSpec, all_resources_key, create_models
from tests.world import must

KEYS = "platform.tenants.v1.ApiKeyService"
CAPTURE = "switchboard.capture.v1.CaptureService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"


@pytest_asyncio.fixture(scope="module")
async def aw(server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> AgentWorld:
    return await build_agent_world(ConnectJsonCaller(server.base_url), server.admin_token, gw_world, fakes.openai_url)


def client(gateway: Gateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


def _received_models(fakes: Fakes, since: int) -> list[str]:
    return [str((r.json or {}).get("model")) for r in fakes.openai.received[since:]]


async def test_instructions_come_first_and_sampling_defaults_apply_unless_set(
    gateway: Gateway, aw: AgentWorld, fakes: Fakes
) -> None:
    result = await client(gateway, aw.gw.keys["all"]).chat.completions.create(
        model=aw.agents["plain"], messages=ask("hi there"), top_p=0.9
    )
    assert result.choices[0].message.content == "hi there"
    sent = fakes.openai.last().json or {}
    assert sent["model"] == "echo"
    assert sent["messages"] == [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "hi there"}]
    assert sent["temperature"] == 0.3  # the agent's default
    assert sent["top_p"] == 0.9  # the caller's own value wins
    assert sent["max_completion_tokens"] == 50


async def test_unguarded_agent_streams_as_usual(gateway: Gateway, aw: AgentWorld) -> None:
    stream = await client(gateway, aw.gw.keys["all"]).chat.completions.create(
        model=aw.agents["plain"], messages=ask("streamed words"), stream=True
    )
    text = "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])
    assert text == "streamed words"


async def test_guardrails_run_in_order_after_the_answer(gateway: Gateway, aw: AgentWorld, fakes: Fakes) -> None:
    since = len(fakes.openai.received)
    result = await client(gateway, aw.gw.keys["all"]).chat.completions.create(
        model=aw.agents["guarded"], messages=ask("a harmless answer")
    )
    assert result.choices[0].message.content == "a harmless answer"
    assert result.choices[0].finish_reason == "stop"
    assert result.model == aw.agents["guarded"]
    assert _received_models(fakes, since) == ["echo", "guard-llama", "guard-json"]
    judged = fakes.openai.received[-1].json or {}
    assert judged["messages"][-1] == {"role": "assistant", "content": "a harmless answer"}


async def test_first_guardrail_refusal_ends_the_call(gateway: Gateway, aw: AgentWorld, fakes: Fakes) -> None:
    since = len(fakes.openai.received)
    result = await client(gateway, aw.gw.keys["all"]).chat.completions.create(
        model=aw.agents["guarded"], messages=ask("FORBIDDEN-A and FORBIDDEN-B")
    )
    choice = result.choices[0]
    assert choice.finish_reason == "content_filter"
    assert choice.message.content is None
    assert choice.message.refusal is not None and aw.model("g-llama") in choice.message.refusal
    assert "S1, S10" in choice.message.refusal or "S1,S10" in choice.message.refusal
    assert _received_models(fakes, since) == ["echo", "guard-llama"]  # the JSON guardrail never ran


async def test_second_guardrail_refuses_what_the_first_allowed(gateway: Gateway, aw: AgentWorld, fakes: Fakes) -> None:
    since = len(fakes.openai.received)
    result = await client(gateway, aw.gw.keys["all"]).chat.completions.create(
        model=aw.agents["guarded"], messages=ask("only FORBIDDEN-B here")
    )
    choice = result.choices[0]
    assert choice.finish_reason == "content_filter"
    assert choice.message.refusal is not None
    assert aw.model("g-json") in choice.message.refusal and "mentions B" in choice.message.refusal
    assert _received_models(fakes, since) == ["echo", "guard-llama", "guard-json"]


async def test_guarded_stream_parses_with_the_sdk_stream_helper(gateway: Gateway, aw: AgentWorld) -> None:
    sdk = client(gateway, aw.gw.keys["all"])
    async with sdk.chat.completions.stream(
        model=aw.agents["guarded"], messages=ask("streamed but checked"), stream_options={"include_usage": True}
    ) as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_completion()
    assert "content.delta" in kinds and "content.done" in kinds
    assert final.choices[0].message.content == "streamed but checked"
    assert final.usage is not None and final.usage.total_tokens > 0


async def test_guarded_refusal_streams_as_a_content_filter_refusal(gateway: Gateway, aw: AgentWorld) -> None:
    sdk = client(gateway, aw.gw.keys["all"])
    stream = await sdk.chat.completions.create(model=aw.agents["guarded"], messages=ask("FORBIDDEN-A"), stream=True)
    chunks = [c async for c in stream]
    refusal = "".join(c.choices[0].delta.refusal or "" for c in chunks if c.choices)
    assert aw.model("g-llama") in refusal
    assert chunks[-1].choices[0].finish_reason == "content_filter"
    # The SDK's helper tells the refusal apart from a failure: it raises its content-filter error, not APIError.
    async with sdk.chat.completions.stream(model=aw.agents["guarded"], messages=ask("FORBIDDEN-A")) as helper:
        kinds = [event.type async for event in helper]
        with pytest.raises(openai.ContentFilterFinishReasonError):
            await helper.get_final_completion()
    assert "refusal.done" in kinds


async def test_guarded_stream_opens_with_a_keepalive_and_ends_with_done(gateway: Gateway, aw: AgentWorld) -> None:
    body = {"model": aw.agents["guarded"], "messages": ask("raw bytes"), "stream": True}
    headers = {"Authorization": f"Bearer {aw.gw.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers) as resp,
    ):
        raw = await resp.read()
    assert resp.status == 200 and resp.content_type == "text/event-stream"
    assert raw.startswith(b": ")  # an SSE comment while the answer is being checked
    assert raw.endswith(b"data: [DONE]\n\n")
    assert b"raw bytes" in raw


@pytest.mark.parametrize("label", ["down", "garbage"])
async def test_guardrail_failure_fails_closed(gateway: Gateway, aw: AgentWorld, label: str) -> None:
    sdk = client(gateway, aw.gw.keys["all"])
    with pytest.raises(openai.APIStatusError) as caught:
        await sdk.chat.completions.create(model=aw.agents[label], messages=ask("anything"))
    assert caught.value.status_code == 502
    assert "guardrail" in caught.value.message and UPSTREAM_SECRET not in str(caught.value.body)
    assert "anything" not in str(caught.value.body)  # the withheld answer is not in the error
    stream = await sdk.chat.completions.create(model=aw.agents[label], messages=ask("anything"), stream=True)
    with pytest.raises(openai.APIError) as streamed:
        async for _ in stream:
            pass
    assert "guardrail" in streamed.value.message


async def test_models_lists_agents_with_their_base_models_modalities(gateway: Gateway, aw: AgentWorld) -> None:
    sdk = client(gateway, aw.gw.keys["all"])
    listed = {m.id: m for m in (await sdk.models.list()).data}
    plain, guarded = listed[aw.agents["plain"]], listed[aw.agents["guarded"]]
    assert plain.model_extra and plain.model_extra["capabilities"]["input_modalities"] == ["text", "image"]
    assert guarded.model_extra and guarded.model_extra["capabilities"]["input_modalities"] == ["text"]
    assert plain.model_extra["capabilities"]["task_type"] == "text-generation"
    images = {m.id for m in (await sdk.models.list(extra_query={"input_modalities": "image"})).data}
    assert aw.agents["plain"] in images and aw.agents["guarded"] not in images
    assert aw.agents["unshared"] not in listed  # the member may not use the editor's private agent


async def test_agent_invocation_follows_the_permission_model(server: Server, gateway: Gateway, aw: AgentWorld) -> None:
    """Invoking is the agent's read right: keys by grant (directly or to a service account), Personal (all
    resources) keys by their owner's reach; no access looks like no model."""
    connect = ConnectJsonCaller(server.base_url)
    gw, admin = aw.gw, aw.gw.tokens["admin"]
    agent_grant = [{"kind": "RESOURCE_KIND_PRESET_AGENT", "name": aw.names["plain"]}]

    async def key(body: dict[str, Any]) -> str:
        body = {"tenantId": gw.tenant_id, "name": "agent-key", **body}
        return str(must(await connect.call(f"{KEYS}/CreateApiKey", body, token=admin))["secret"])

    account = must(
        await connect.call(
            f"{ACCOUNTS}/CreateServiceAccount", {"tenantId": gw.tenant_id, "name": "agent-sa"}, token=admin
        )
    )["serviceAccount"]["id"]
    granted_sa = await key({"type": "API_KEY_TYPE_SERVICE_ACCOUNT", "serviceAccountId": account, "grants": agent_grant})
    bare_sa = await key({"type": "API_KEY_TYPE_SERVICE_ACCOUNT", "serviceAccountId": account})
    granted_personal = await key({"type": "API_KEY_TYPE_PERSONAL", "grants": agent_grant})
    bare_personal = await key({"type": "API_KEY_TYPE_PERSONAL"})
    member_all = gw.keys["all"]
    admin_all = await all_resources_key(connect, gw, admin, "agent-admin-all")
    expectations = [
        (granted_sa, "plain", True),
        (bare_sa, "plain", False),
        (granted_personal, "plain", True),
        (bare_personal, "plain", False),
        (member_all, "plain", True),  # shared with the whole tenant
        (member_all, "unshared", False),  # the editor's private agent
        (admin_all, "unshared", True),  # tenant admins read every tenant resource
    ]
    for secret, label, allowed in expectations:
        sdk = client(gateway, secret)
        if allowed:
            result = await sdk.chat.completions.create(model=aw.agents[label], messages=ask("ok"))
            assert result.choices[0].message.content == "ok"
        else:
            with pytest.raises(openai.NotFoundError):
                await sdk.chat.completions.create(model=aw.agents[label], messages=ask("ok"))
    # A service-account key granted the agent needs no grant on the base model (the agent delegates).
    # Other surfaces do not serve agents (yet): a clear invalid_request naming the model.
    with pytest.raises(openai.BadRequestError) as wrong_surface:
        await client(gateway, granted_sa).embeddings.create(model=aw.agents["plain"], input="x")
    assert wrong_surface.value.body and "preset agent" in str(wrong_surface.value.body)


async def test_deleting_the_base_model_leaves_the_agent_unresolved(
    server: Server, gateway: Gateway, aw: AgentWorld, fakes: Fakes
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    gw = aw.gw
    await create_models(connect, server.admin_token, gw, [ModelSpec("ephemeral", upstream=fakes.openai_url)])
    await create_agent(
        connect,
        gw.tokens["editor"],
        aw,
        "orphan",
        agent_body(aw, "orphan", "ephemeral", [], sharing={"shareToAll": True}),
    )
    sdk = client(gateway, gw.keys["all"])
    assert (await sdk.chat.completions.create(model=aw.agents["orphan"], messages=ask("x"))).choices
    kind, name = gw.names[gw.model("ephemeral")]
    assert kind == ResourceKind.MODEL_DEPLOYMENT
    must(await connect.call(f"{DEPLOYMENTS}/DeleteModelDeployment", {"name": name}, token=server.admin_token))
    got = must(await connect.call(f"{AGENTS}/GetPresetAgent", {"name": aw.names["orphan"]}, token=gw.tokens["editor"]))
    assert got["presetAgent"]["baseModel"] == gw.model("ephemeral")
    assert not got["presetAgent"].get("baseModelResolved", False)
    for _ in range(100):  # the gateway trusts a cached route for at most the cache bound (1 s in tests)
        try:
            await sdk.chat.completions.create(model=aw.agents["orphan"], messages=ask("x"))
        except openai.BadRequestError as exc:
            assert "unresolved" in exc.message
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail("the unresolved agent kept answering")
    listed = {m.id for m in (await sdk.models.list()).data}
    assert aw.agents["orphan"] not in listed


async def _usage(gateway: Gateway, key_id: str, count: int) -> list[UsageEventRow]:
    rows: list[UsageEventRow] = []
    for _ in range(200):  # bounded wait for the background flushers; not a timing assertion
        async with gateway.db.read() as s:
            rows = list(await s.scalars(select(UsageEventRow).where(UsageEventRow.api_key_id == key_id)))
        if len(rows) >= count:
            break
        await asyncio.sleep(0.05)
    return rows


async def test_agent_calls_are_metered_against_the_agent_and_its_base_model(
    server: Server, gateway: Gateway, aw: AgentWorld
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    gw = aw.gw
    secret = await all_resources_key(connect, gw, gw.tokens["editor"], "agent-metering")
    sdk = client(gateway, secret)
    await sdk.chat.completions.create(model=aw.agents["guarded"], messages=ask("fine"))
    await sdk.chat.completions.create(model=aw.agents["guarded"], messages=ask("FORBIDDEN-B"))
    rows = await _usage(gateway, gw.key_ids["agent-metering"], 6)
    agent_rows = sorted((r for r in rows if r.model_id == aw.agents["guarded"]), key=lambda r: r.id)
    base_name = gw.names[gw.model("echo-text")][1]
    assert [(r.target_name, r.status) for r in agent_rows] == [(base_name, 200), (base_name, GUARDRAIL_REFUSED)]
    assert all(r.total_tokens > 0 for r in agent_rows)
    guard_rows = [r.model_id for r in rows if r.model_id != aw.agents["guarded"]]
    assert sorted(guard_rows) == sorted([aw.model("g-llama"), aw.model("g-json")] * 2)


async def test_an_answer_a_failing_guardrail_withheld_is_still_metered(
    server: Server, gateway: Gateway, aw: AgentWorld
) -> None:
    """The base model ran (and a provider bills it) though the caller got a 502: its tokens are metered under the
    agent, with the 502 (docs/agents.md)."""
    connect = ConnectJsonCaller(server.base_url)
    gw = aw.gw
    secret = await all_resources_key(connect, gw, gw.tokens["editor"], "agent-withheld")
    with pytest.raises(openai.APIStatusError) as caught:
        await client(gateway, secret).chat.completions.create(model=aw.agents["down"], messages=ask("anything"))
    assert caught.value.status_code == 502
    rows = await _usage(gateway, gw.key_ids["agent-withheld"], 1)
    (agent_row,) = [r for r in rows if r.model_id == aw.agents["down"]]
    assert agent_row.status == 502 and agent_row.total_tokens > 0, (agent_row.status, agent_row.total_tokens)


async def test_with_content_capture_on_the_guardrail_calls_are_metered_too(
    server: Server, gateway: Gateway, aw: AgentWorld
) -> None:
    """A captured call's usage event waits for its answer in the exchange; a guardrail call's, made within it, is
    metered on its own (it was replaced there by the agent call's, and lost)."""
    connect = ConnectJsonCaller(server.base_url)
    gw = aw.gw
    secret = await all_resources_key(connect, gw, gw.tokens["editor"], "agent-captured")
    key_id = gw.key_ids["agent-captured"]
    policy = {"tenantId": gw.tenant_id, "scope": {"kind": "CAPTURE_SCOPE_KIND_API_KEY", "id": key_id}, "enabled": True}
    must(await connect.call(f"{CAPTURE}/SetCapturePolicy", policy, token=server.admin_token))
    sdk = client(gateway, secret)
    calls = 0
    for _ in range(50):  # until a worker has heard of the policy (invalidation: milliseconds)
        calls += 1
        raw = await sdk.chat.completions.with_raw_response.create(model=aw.agents["guarded"], messages=ask("fine"))
        if raw.headers.get("x-switchboard-content-capture") == "on":
            break
        await asyncio.sleep(0.1)
    assert raw.headers.get("x-switchboard-content-capture") == "on"
    rows = await _usage(gateway, key_id, 3 * calls)
    assert sorted(r.model_id for r in rows) == sorted(
        [aw.agents["guarded"], aw.model("g-llama"), aw.model("g-json")] * calls
    )


async def test_no_model_input_or_output_reaches_the_gateway_log(gateway: Gateway, aw: AgentWorld) -> None:
    sdk = client(gateway, aw.gw.keys["all"])
    marker = "CONTENT-MARKER-7f3a"
    await sdk.chat.completions.create(model=aw.agents["guarded"], messages=ask(marker))
    await sdk.chat.completions.create(model=aw.agents["guarded"], messages=ask(f"{marker} FORBIDDEN-A"))
    with pytest.raises(openai.APIStatusError):
        await sdk.chat.completions.create(model=aw.agents["garbage"], messages=ask(marker))
    assert marker not in gateway.log()
