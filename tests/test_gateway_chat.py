"""POST /v1/chat/completions through the official OpenAI SDK (sync and async, streaming and not, tools)."""

from __future__ import annotations

import openai
import pytest

from tests.fakes.upstream import COMPLETION_TOKENS, PROMPT_TOKENS
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import PROVIDER_KEY, GatewayWorld

MESSAGES = [{"role": "user", "content": "Say hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def aclient(gateway: Gateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def test_sync_chat_reaches_the_deployment_with_its_served_model_id(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    result = client(gateway, gw_world.keys["all"]).chat.completions.create(
        model=gw_world.model("chat"), messages=MESSAGES
    )
    assert result.choices[0].message.content == "Hello from served-chat"
    assert result.usage is not None and result.usage.total_tokens == PROMPT_TOKENS + COMPLETION_TOKENS
    sent = fakes.openai.last()
    assert sent.path == "/v1/chat/completions"
    assert sent.json is not None and sent.json["model"] == "served-chat"
    assert sent.json["messages"] == MESSAGES
    assert "authorization" not in sent.headers  # the client's key never goes upstream


def test_served_model_id_defaults_to_the_public_id(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    client(gateway, gw_world.keys["all"]).chat.completions.create(
        model=gw_world.model("chat-default-id"), messages=MESSAGES
    )
    assert fakes.openai.last().json["model"] == gw_world.model("chat-default-id")  # type: ignore[index]


async def test_async_chat_with_tools(gateway: Gateway, gw_world: GatewayWorld) -> None:
    result = await aclient(gateway, gw_world.keys["all"]).chat.completions.create(
        model=gw_world.model("chat"),
        messages=MESSAGES,
        tools=TOOLS,  # type: ignore[arg-type]
    )
    choice = result.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.tool_calls is not None
    assert choice.message.tool_calls[0].function.name == "get_weather"  # type: ignore[union-attr]


@pytest.mark.parametrize("include_usage", [True, False])
def test_stream_passes_chunks_and_usage_only_when_asked(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, include_usage: bool
) -> None:
    kwargs = {"stream_options": {"include_usage": True}} if include_usage else {}
    stream = client(gateway, gw_world.keys["all"]).chat.completions.create(
        model=gw_world.model("chat"),
        messages=MESSAGES,
        stream=True,
        **kwargs,  # type: ignore[arg-type]
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello from served-chat"
    usage_chunks = [c for c in chunks if c.usage is not None]
    # The upstream was always asked for usage, so the gateway can meter every stream.
    assert fakes.openai.last().json["stream_options"]["include_usage"] is True  # type: ignore[index]
    if include_usage:
        assert len(usage_chunks) == 1 and not usage_chunks[0].choices
        assert usage_chunks[0].usage.total_tokens == PROMPT_TOKENS + COMPLETION_TOKENS  # type: ignore[union-attr]
    else:
        assert usage_chunks == []
        assert all(c.choices for c in chunks)
        assert all("usage" not in c.model_dump(exclude_unset=True) for c in chunks)


async def test_async_stream_with_tools_through_the_stream_helper(gateway: Gateway, gw_world: GatewayWorld) -> None:
    async with aclient(gateway, gw_world.keys["all"]).chat.completions.stream(
        model=gw_world.model("chat"),
        messages=MESSAGES,
        tools=TOOLS,  # type: ignore[arg-type]
    ) as stream:
        final = await stream.get_final_completion()
    call = final.choices[0].message.tool_calls[0]  # type: ignore[index]
    assert call.function.arguments == '{"city": "Paris"}'  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("model", "path", "upstream_model"),
    [
        ("va-chat", "/v1/chat/completions", "gpt-va"),
        ("cc-chat", "/v1/chat/completions", "cc-upstream"),
    ],
)
def test_openai_style_providers(  # noqa: PLR0917
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, model: str, path: str, upstream_model: str
) -> None:
    fake = fakes.vendor_a if model == "va-chat" else fakes.openai
    result = client(gateway, gw_world.keys["all"]).chat.completions.create(
        model=gw_world.model(model), messages=MESSAGES
    )
    assert result.choices[0].message.content == f"Hello from {upstream_model}"
    assert fake.last().path == path
    assert fake.last().json["model"] == upstream_model  # type: ignore[index]
    # The provider key (stored encrypted) goes upstream as a bearer token; the client's key does not.
    assert fake.last().headers["authorization"] == f"Bearer {PROVIDER_KEY}"
    assert PROVIDER_KEY not in result.model_dump_json()


def test_vendor_b_uses_the_azure_deployment_path_and_api_version(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    for stream in (False, True):
        result = client(gateway, gw_world.keys["all"]).chat.completions.create(
            model=gw_world.model("vb-chat"), messages=MESSAGES, stream=stream
        )
        if stream:
            text = "".join(c.choices[0].delta.content or "" for c in result if c.choices)  # type: ignore[union-attr]
        else:
            text = result.choices[0].message.content  # type: ignore[union-attr]
        assert text == "Hello from vb-deploy"
        sent = fakes.azure.last()
        assert sent.path == "/openai/deployments/vb-deploy/chat/completions"
        assert sent.query == {"api-version": "2024-06-01"}
        assert "model" not in (sent.json or {})
        assert sent.headers["api-key"] == PROVIDER_KEY
        assert "authorization" not in sent.headers


def test_alias_resolves_to_its_target(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    for alias in ("alias-chat", "hidden"):
        result = client(gateway, gw_world.keys["all"]).chat.completions.create(
            model=gw_world.model(alias), messages=MESSAGES
        )
        assert result.choices[0].message.content == "Hello from served-chat"


@pytest.mark.parametrize("include_usage", [True, False])
def test_crlf_framed_upstream_streams(gateway: Gateway, gw_world: GatewayWorld, include_usage: bool) -> None:
    kwargs = {"stream_options": {"include_usage": True}} if include_usage else {}
    chunks = list(
        client(gateway, gw_world.keys["all"]).chat.completions.create(
            model=gw_world.model("crlf"),
            messages=MESSAGES,
            stream=True,
            **kwargs,  # type: ignore[arg-type]
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello from crlf-stream"
    assert any(c.usage for c in chunks) == include_usage
