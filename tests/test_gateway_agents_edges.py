"""Guarded preset agents on /v1/chat/completions against answers the guardrails were not looking at, upstreams that
send what was not asked for, and a tenant that lost what its agent uses. Each was once a bug:

- an answer carrying its text in a legacy `function_call` (the caller sent `functions`), or in `audio.transcript`,
  was released without the guardrails judging it: every text an answer carries is judged (content and its parts,
  `refusal`, each function or custom tool call and a `function_call` as `name(arguments)`), what is released is
  rebuilt from those alone (audio, reasoning, logprobs and anything else stay behind), and an audio answer, which
  text guardrails cannot hear, is refused (400) before any model is called (`gateway.surfaces.agent_chat`);
- an upstream answering with more choices than `n` made the gateway run every guardrail once per choice (25 choices:
  50 guardrail calls for a request of one): an answer with more choices than asked is the backend's failure, a 502
  before any guardrail runs;
- a base-model answer whose `tool_calls` was not an array of calls (`5`) was a 500 with a traceback: an answer of
  the wrong shape is the backend's failure, a 502; streamed, the stream (already started) ends with the error event,
  where a whole second HTTP response used to be written into it (tests/test_gateway_started_responses.py proves
  both halves on their own);
- an agent kept calling a platform model (or guardrail) the platform had stopped sharing with the agent's tenant,
  though the tenant's members could no longer call it themselves: each resolution of the agent asks whether what it
  names is still usable in its tenant (`server.domain.preset_agents.invocation`, `permissions.withdrawn`), and the
  agent fails closed (400).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import Any

import aiohttp
import openai
import orjson
import pytest
import pytest_asyncio

from tests.agent_world import AgentWorld, agent_body, build_agent_world, create_agent
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Server
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import DEPLOYMENTS, GatewayWorld, ModelSpec, create_models
from tests.world import must

pytestmark = ONE_BACKEND

FRIENDLY = "The model backend returned an invalid response."


@pytest_asyncio.fixture(scope="module")
async def aw(server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> AgentWorld:
    """The standard agent world (tests/agent_world.py) under a tag of this module's own."""
    gw = GatewayWorld(
        tenant_id=gw_world.tenant_id,
        tag=secrets.token_hex(3),
        keys=dict(gw_world.keys),
        key_ids=dict(gw_world.key_ids),
        tokens=dict(gw_world.tokens),
        user_ids=dict(gw_world.user_ids),
    )
    return await build_agent_world(ConnectJsonCaller(server.base_url), server.admin_token, gw, fakes.openai_url)


@pytest.fixture(autouse=True)
def _clean_script(fakes: Fakes) -> Iterator[None]:
    fakes.openai.script.clear()
    yield
    fakes.openai.script.clear()


def sdk(gateway: Gateway, aw: AgentWorld) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url, api_key=aw.gw.keys["all"], max_retries=0)


def ask(text: str) -> list[Any]:
    return [{"role": "user", "content": text}]


async def post(gateway: Gateway, aw: AgentWorld, body: dict[str, Any]) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {aw.gw.keys['all']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway.base_url}/chat/completions", json=body, headers=headers) as resp,
    ):
        return resp.status, await resp.read()


def guard_calls(fakes: Fakes, since: int) -> list[str]:
    """What each guardrail call since `since` was asked to judge (its last message)."""
    return [
        str((r.json or {})["messages"][-1].get("content"))
        for r in fakes.openai.received[since:]
        if (r.json or {}).get("model") in ("guard-llama", "guard-json")
    ]


def answer(*messages: dict[str, Any], finish: str = "stop", **more: Any) -> dict[str, Any]:
    """A whole base-model answer, one choice a message."""
    choices = [
        {"index": i, "finish_reason": finish, "logprobs": None, "message": {"role": "assistant", **m}}
        for i, m in enumerate(messages)
    ]
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    return {"id": "x", "object": "chat.completion", "created": 1, "model": "echo", "choices": choices, "usage": usage}


# --- every text an answer carries is judged; nothing else is released ---


@pytest.mark.parametrize(
    ("message", "extra"),
    [
        pytest.param(
            {"content": None, "function_call": {"name": "send_mail", "arguments": '{"body": "FORBIDDEN-A plans"}'}},
            {"functions": [{"name": "send_mail", "parameters": {"type": "object"}}]},
            id="legacy-function_call",
        ),
        pytest.param(
            {
                "content": None,
                "tool_calls": [{"id": "c1", "type": "custom", "custom": {"name": "sh", "input": "FORBIDDEN-A"}}],
            },
            {},
            id="custom-tool-call",
        ),
        pytest.param(
            {"content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "FORBIDDEN-A"}}]},
            {},
            id="tool-call-name",
        ),
        pytest.param({"content": [{"type": "text", "text": "FORBIDDEN-A"}]}, {}, id="content-parts"),
        pytest.param({"content": None, "refusal": "I won't: FORBIDDEN-A"}, {}, id="the-model-s-own-refusal"),
    ],
)
async def test_every_text_of_the_answer_is_judged(
    gateway: Gateway, aw: AgentWorld, fakes: Fakes, message: dict[str, Any], extra: dict[str, Any]
) -> None:
    fakes.openai.script.append({"body": answer(message)})
    since = len(fakes.openai.received)
    result = await sdk(gateway, aw).chat.completions.create(
        model=aw.agents["guarded"], messages=ask("write the mail"), extra_body=extra
    )
    released = result.model_dump_json()
    assert result.choices[0].finish_reason == "content_filter", f"judged {guard_calls(fakes, since)}: {released}"
    assert "FORBIDDEN-A" not in released


async def test_only_what_was_judged_is_released(gateway: Gateway, aw: AgentWorld, fakes: Fakes) -> None:
    """Audio nobody asked for (its transcript unjudged), reasoning, logprobs naming tokens the answer did not use, a
    field a provider added: none reaches the client; the judged text does."""
    message = {
        "content": "a harmless answer",
        "audio": {"id": "audio_1", "data": "", "expires_at": 1, "transcript": "FORBIDDEN-A"},
        "reasoning_content": "FORBIDDEN-A",
        "provider_extra": {"note": "FORBIDDEN-A"},
    }
    body = answer(message)
    body["choices"][0]["logprobs"] = {"content": [{"token": "FORBIDDEN-A", "logprob": -9, "top_logprobs": []}]}
    body["provider_notes"] = "FORBIDDEN-A"
    fakes.openai.script.append({"body": body})
    since = len(fakes.openai.received)
    status, raw = await post(gateway, aw, {"model": aw.agents["guarded"], "messages": ask("hi")})
    assert status == 200, raw[:300]
    assert b"FORBIDDEN-A" not in raw
    completion = orjson.loads(raw)
    assert completion["choices"][0]["message"] == {"role": "assistant", "content": "a harmless answer"}
    assert completion["choices"][0]["finish_reason"] == "stop"
    assert guard_calls(fakes, since) == ["a harmless answer", "a harmless answer"]


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        pytest.param({"modalities": ["text", "audio"], "audio": {"voice": "alloy", "format": "wav"}}, "modalities"),
        pytest.param({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
    ],
)
async def test_a_guarded_agent_refuses_to_answer_with_audio(
    gateway: Gateway, aw: AgentWorld, fakes: Fakes, extra: dict[str, Any], param: str
) -> None:
    since = len(fakes.openai.received)
    status, raw = await post(gateway, aw, {"model": aw.agents["guarded"], "messages": ask("say it"), **extra})
    assert status == 400, raw[:300]
    error = orjson.loads(raw)["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == param, error
    assert len(fakes.openai.received) == since  # refused before any model was called


# --- choices: at most n, each judged ---


async def test_more_choices_than_asked_is_a_502_before_any_guardrail_runs(
    gateway: Gateway, aw: AgentWorld, fakes: Fakes
) -> None:
    fakes.openai.script.append({"body": answer(*({"content": f"c{i}"} for i in range(25)))})
    since = len(fakes.openai.received)
    status, raw = await post(gateway, aw, {"model": aw.agents["guarded"], "messages": ask("one answer please")})
    assert status == 502, raw[:300]
    assert orjson.loads(raw)["error"]["message"] == FRIENDLY
    assert guard_calls(fakes, since) == []
    fakes.openai.script.append({"body": answer(*({"content": f"c{i}"} for i in range(3)))})
    status, raw = await post(gateway, aw, {"model": aw.agents["guarded"], "messages": ask("two"), "n": 2})
    assert status == 502, raw[:300]
    assert guard_calls(fakes, since) == []


async def test_each_of_the_n_choices_asked_for_is_judged(gateway: Gateway, aw: AgentWorld, fakes: Fakes) -> None:
    fakes.openai.script.append({"body": answer({"content": "first"}, {"content": "second"})})
    since = len(fakes.openai.received)
    result = await sdk(gateway, aw).chat.completions.create(model=aw.agents["guarded"], messages=ask("two"), n=2)
    assert [c.message.content for c in result.choices] == ["first", "second"]
    assert [c.index for c in result.choices] == [0, 1]
    assert guard_calls(fakes, since) == ["first", "first", "second", "second"]


# --- answers of the wrong shape ---


@pytest.mark.parametrize(
    "message",
    [
        pytest.param({"content": None, "tool_calls": 5}, id="tool_calls-a-number"),
        pytest.param({"content": None, "tool_calls": ["x"]}, id="a-call-not-an-object"),
        pytest.param({"content": None, "tool_calls": [{"type": "function", "function": 5}]}, id="function-a-number"),
        pytest.param({"content": None, "tool_calls": [{"function": {"arguments": "{}"}}]}, id="no-function-name"),
        pytest.param(
            {"content": None, "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]},
            id="arguments-not-text",
        ),
        pytest.param({"content": None, "tool_calls": [{"type": "telepathy", "telepathy": {}}]}, id="unknown-call-type"),
        pytest.param({"content": None, "function_call": "f()"}, id="function_call-a-string"),
        pytest.param({"content": 42}, id="content-a-number"),
        pytest.param({"content": "ok", "refusal": ["no"]}, id="refusal-not-text"),
    ],
)
async def test_an_answer_of_the_wrong_shape_is_a_502(
    gateway: Gateway, aw: AgentWorld, fakes: Fakes, message: dict[str, Any]
) -> None:
    fakes.openai.script.append({"body": answer(message, finish="tool_calls")})
    since = len(fakes.openai.received)
    with gateway.logs_no_error():
        status, raw = await post(gateway, aw, {"model": aw.agents["guarded"], "messages": ask("call a tool")})
    assert status == 502, raw[:300]
    assert orjson.loads(raw)["error"]["message"] == FRIENDLY
    assert guard_calls(fakes, since) == []


async def test_a_streamed_answer_of_the_wrong_shape_ends_the_started_stream_with_an_error_event(
    gateway: Gateway, aw: AgentWorld, fakes: Fakes
) -> None:
    fakes.openai.script.append({"body": answer({"content": None, "tool_calls": ["x"]}, finish="tool_calls")})
    body = orjson.dumps({"model": aw.agents["guarded"], "messages": ask("call a tool"), "stream": True})
    host, port = gateway.base_url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    head = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {aw.gw.keys['all']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    writer.write(head.encode() + body)
    await writer.drain()
    with gateway.logs_no_error():
        raw = await asyncio.wait_for(reader.read(), 30)  # everything, until the gateway closes the connection
    writer.close()
    assert raw.startswith(b"HTTP/1.1 200"), raw[:200]
    assert raw.count(b"HTTP/1.1 ") == 1, f"a second response inside the stream: {raw[-600:]!r}"
    assert b'data: {"error":{"message":"' + FRIENDLY.encode() in raw, raw[-600:]
    assert raw.endswith(b"0\r\n\r\n")  # the stream ended, as streams end


# --- what the agent names, withdrawn from its tenant ---


@pytest.mark.parametrize("withdrawn", ["base", "guardrail"])
async def test_an_agent_fails_closed_once_the_platform_withdraws_what_it_uses_from_its_tenant(
    server: Server, gateway: Gateway, aw: AgentWorld, fakes: Fakes, withdrawn: str
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    gw = aw.gw
    base, guard, label = f"wd-base-{withdrawn}", f"wd-guard-{withdrawn}", f"wd-{withdrawn}"
    specs = [
        ModelSpec(base, upstream=fakes.openai_url, upstream_model="echo"),
        ModelSpec(guard, upstream=fakes.openai_url, upstream_model="guard-json", task=5),
    ]
    await create_models(connect, server.admin_token, gw, specs)
    body = agent_body(aw, label, base, [guard], sharing={"shareToAll": True})
    await create_agent(connect, gw.tokens["editor"], aw, label, body)
    client = sdk(gateway, aw)
    await asyncio.sleep(1.2)  # past the gateway's cache of what the key may use (1 s in tests)
    assert (await client.chat.completions.create(model=aw.agents[label], messages=ask("x"))).choices
    target = gw.model(base if withdrawn == "base" else guard)
    _kind, name = gw.names[target]
    must(
        await connect.call(
            f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", {"name": name, "sharing": {}}, token=server.admin_token
        )
    )
    for _ in range(100):  # the gateway trusts a cached route for at most the cache bound (1 s in tests)
        try:
            await client.chat.completions.create(model=aw.agents[label], messages=ask("still here?"))
        except openai.BadRequestError as exc:
            assert f"'{target}'" in exc.message and "no longer available in its tenant" in exc.message, exc.message
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail(f"the agent kept calling the {withdrawn} model its tenant lost")
    since = len(fakes.openai.received)
    with pytest.raises(openai.BadRequestError):
        await client.chat.completions.create(model=aw.agents[label], messages=ask("and now?"))
    assert len(fakes.openai.received) == since  # refused before any model was called
    with pytest.raises(openai.NotFoundError):  # as the model itself is, for the tenant's members
        await client.chat.completions.create(model=target, messages=ask("x"))
