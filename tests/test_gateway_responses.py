"""POST /v1/responses through the official OpenAI SDK: text and function tools, streaming (the strict stream helper
and raw events) and not, follow-ups with previous_response_id, and stored responses."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.fakes.upstream import COMPLETION_TOKENS, PROMPT_TOKENS
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld

TOOLS: list[Any] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def client(gateway: Gateway, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)


def test_text_response(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    result = sdk.responses.create(model=gw_world.model("chat"), input="Say hello", instructions="Be brief.")
    assert result.status == "completed" and result.id.startswith("resp_")
    assert result.output_text == "Hello from served-chat"
    assert result.output[0].type == "message" and result.output[0].status == "completed"
    assert result.usage is not None
    assert (result.usage.input_tokens, result.usage.output_tokens) == (PROMPT_TOKENS, COMPLETION_TOKENS)
    sent = fakes.openai.last().json
    assert sent is not None
    assert sent["model"] == "served-chat"
    assert sent["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello"}]


def test_function_tool_round_trip_with_previous_response_id(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    first = sdk.responses.create(model=gw_world.model("chat"), input="Weather in Paris?", tools=TOOLS)
    [call] = first.output
    assert call.type == "function_call" and call.name == "get_weather"
    assert call.arguments == '{"city": "Paris"}' and call.call_id == "call_1"
    sent = fakes.openai.last().json
    assert sent is not None
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": TOOLS[0]["parameters"],
                "description": "Weather in a city",
            },
        }
    ]
    second = sdk.responses.create(
        model=gw_world.model("chat"),
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "sunny"}],
        tools=TOOLS,
    )
    assert second.output_text == "The tool said: sunny"
    history = fakes.openai.last().json
    assert history is not None
    assert [m["role"] for m in history["messages"]] == ["user", "assistant", "tool"]
    assert history["messages"][1]["tool_calls"][0]["id"] == "call_1"
    assert second.previous_response_id == first.id


def test_stream_helper_gets_the_final_response(gateway: Gateway, gw_world: GatewayWorld) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    with sdk.responses.stream(model=gw_world.model("chat"), input="Say hello") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert "".join(deltas) == final.output_text == "Hello from served-chat"
    assert final.usage is not None and final.usage.total_tokens == PROMPT_TOKENS + COMPLETION_TOKENS


def test_raw_stream_events_are_ordered_and_numbered(gateway: Gateway, gw_world: GatewayWorld) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    events = list(sdk.responses.create(model=gw_world.model("chat"), input="Weather?", tools=TOOLS, stream=True))
    kinds = [e.type for e in events]
    assert kinds == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert len({e.response.id for e in events if hasattr(e, "response")}) == 1
    done = events[-1].response  # type: ignore[union-attr]
    assert done.output[0].arguments == '{"city": "Paris"}'  # type: ignore[union-attr]


def test_stored_responses_are_the_callers_own(gateway: Gateway, gw_world: GatewayWorld) -> None:
    mine = client(gateway, gw_world.keys["all"])
    other = client(gateway, gw_world.keys["chat-only"])
    created = mine.responses.create(model=gw_world.model("chat"), input="Say hello")
    assert mine.responses.retrieve(created.id).output_text == created.output_text
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError) as err:
        other.responses.create(model=gw_world.model("chat"), input="x", previous_response_id=created.id)
    assert err.value.param == "previous_response_id"
    mine.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        mine.responses.retrieve(created.id)
    unstored = mine.responses.create(model=gw_world.model("chat"), input="Say hello", store=False)
    with pytest.raises(openai.NotFoundError):
        mine.responses.retrieve(unstored.id)


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"input": []}, "input"),
        ({"input": [{"type": "message", "role": "robot", "content": "x"}]}, "input[0].role"),
        ({"input": "x", "tools": [{"type": "web_search"}]}, "tools[0].type"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "x", "previous_response_id": "resp_x", "conversation": "conv_x"}, "conversation"),
    ],
)
def test_invalid_requests_name_the_field(
    gateway: Gateway, gw_world: GatewayWorld, kwargs: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        client(gateway, gw_world.keys["all"]).responses.create(model=gw_world.model("chat"), **kwargs)
    assert err.value.param == param


def test_a_backend_failure_mid_stream_ends_with_response_failed(gateway: Gateway, gw_world: GatewayWorld) -> None:
    events = list(
        client(gateway, gw_world.keys["all"]).responses.create(
            model=gw_world.model("broken"), input="Say hello", stream=True
        )
    )
    assert events[0].type == "response.created"
    assert events[-1].type == "response.failed"
    assert events[-1].response.error is not None  # type: ignore[union-attr]


def test_input_items_are_listed_with_ids_and_pages(gateway: Gateway, gw_world: GatewayWorld) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    items: list[Any] = [{"role": "user", "content": f"message {i}"} for i in range(5)]
    created = sdk.responses.create(model=gw_world.model("chat"), input=items)
    listed = list(sdk.responses.input_items.list(created.id, order="asc", limit=2))  # the SDK pages by `after`
    assert [item.content[0].text for item in listed] == [f"message {i}" for i in range(5)]  # type: ignore[union-attr]
    assert all(item.id for item in listed) and len({item.id for item in listed}) == 5
    newest = sdk.responses.input_items.list(created.id, limit=1)
    assert newest.data[0].content[0].text == "message 4" and newest.has_more  # type: ignore[union-attr]
    with pytest.raises(openai.BadRequestError) as err:
        sdk.responses.input_items.list(created.id, limit=101)
    assert err.value.param == "limit"


def test_responses_continue_a_conversation_and_add_to_it(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    conversation = sdk.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    first = sdk.responses.create(model=gw_world.model("chat"), input="What is my name?", conversation=conversation.id)
    assert first.conversation is not None and first.conversation.id == conversation.id
    sent = fakes.openai.last().json
    assert sent is not None
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "My name is Ada."}]},
        {"role": "user", "content": "What is my name?"},
    ]
    items = list(sdk.conversations.items.list(conversation.id, order="asc"))
    assert [i.type for i in items] == ["message", "message", "message"]
    assert items[-1].id == first.output[0].id  # the output item keeps the id the client saw
    streamed = list(
        sdk.responses.create(
            model=gw_world.model("chat"), input="And again?", conversation=conversation.id, stream=True
        )
    )
    assert streamed[-1].type == "response.completed"
    assert len(list(sdk.conversations.items.list(conversation.id))) == 5
    other = client(gateway, gw_world.keys["chat-only"])
    with pytest.raises(openai.NotFoundError):
        other.responses.create(model=gw_world.model("chat"), input="x", conversation=conversation.id)
