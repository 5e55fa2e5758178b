"""POST /v1/responses through the official OpenAI SDK: text and function tools, streaming (the strict stream helper
and raw events) and not, follow-ups with previous_response_id, and stored responses."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.conftest import Server
from tests.fakes.upstream import COMPLETION_TOKENS, PROMPT_TOKENS
from tests.gateway_fixtures import Fakes, Gateway
from tests.gateway_world import GatewayWorld, one_model_and_key

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
        ({"input": [{"role": ["user"], "content": "x"}]}, "input[0].role"),
        ({"input": [{"type": {"a": 1}, "role": "user", "content": "x"}]}, "input[0].type"),
        # Input with no message for the model, and no earlier turn to continue: nothing to send upstream.
        ({"input": [{"type": "mcp_list_tools", "server_label": "x"}]}, "input"),
        (
            {"input": [{"type": "mcp_approval_response", "approval_request_id": "mcpr_unknown", "approve": True}]},
            "input[0].approval_request_id",
        ),
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


def test_null_sampling_fields_are_not_set(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> None:
    result = client(gateway, gw_world.keys["all"]).responses.create(
        model=gw_world.model("chat"), input="Say hello", temperature=None, top_p=None, parallel_tool_calls=None
    )
    assert result.status == "completed"
    assert (result.temperature, result.top_p, result.parallel_tool_calls) == (1.0, 1.0, True)
    sent = fakes.openai.last().json
    assert sent is not None
    assert not {"temperature", "top_p", "parallel_tool_calls"} & sent.keys()


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


def test_items_a_turn_adds_to_a_conversation_get_ids_of_their_own(gateway: Gateway, gw_world: GatewayWorld) -> None:
    """Item ids are unique across all conversations: a turn's input is kept under fresh ids, as on
    POST /v1/conversations/{id}/items, so re-sent items (another response's output) cannot collide; an id sent twice
    in one input is refused, as without a conversation (tests/test_gateway_conversation_edges.py)."""
    sdk = client(gateway, gw_world.keys["all"])
    first_conversation = sdk.conversations.create()
    first = sdk.responses.create(model=gw_world.model("chat"), input="hello", conversation=first_conversation.id)
    resent: list[Any] = [item.model_dump(exclude_none=True) for item in first.output]
    conversation = sdk.conversations.create()
    second = sdk.responses.create(
        model=gw_world.model("chat"),
        input=[*resent, {"role": "user", "content": "more"}],
        conversation=conversation.id,
    )
    assert second.status == "completed"
    items = list(sdk.conversations.items.list(conversation.id, order="asc"))
    assert [i.type for i in items] == ["message", "message", "message"]
    assert items[0].id != first.output[0].id and str(items[0].id).startswith("msg_")
    assert items[0].model_dump()["content"][0]["text"] == first.output_text
    assert items[-1].id == second.output[0].id
    # the stored response lists its input under the ids its conversation keeps
    listed = list(sdk.responses.input_items.list(second.id, order="asc"))
    assert [i.id for i in listed] == [i.id for i in items[:2]]
    resent_ids: list[Any] = [{"id": "msg_resent", "role": "user", "content": c} for c in ("one", "two")]
    for item in resent_ids:
        third = sdk.responses.create(model=gw_world.model("chat"), input=[item], conversation=conversation.id)
        assert third.status == "completed"
    ids = [i.id for i in sdk.conversations.items.list(conversation.id, order="asc")]
    assert len(ids) == 7 and len(set(ids)) == 7 and "msg_resent" not in ids


async def test_an_item_id_of_another_tenant_is_no_different_from_a_fresh_one(
    server: Server, gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes
) -> None:
    """No answer tells a caller whether an item id exists in someone else's conversation."""
    model, secret, _key_id = await one_model_and_key(server, fakes.openai_url, "served-chat")
    async with (
        openai.AsyncOpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as mine,
        openai.AsyncOpenAI(base_url=gateway.base_url, api_key=secret, max_retries=0) as other,
    ):
        conversation = await mine.conversations.create()
        turn = await mine.responses.create(model=gw_world.model("chat"), input="hello", conversation=conversation.id)
        taken = turn.output[0].id
        theirs = await other.conversations.create()
        answers = []
        for item_id in (taken, "msg_" + "0" * 48):
            sent: list[Any] = [{"id": item_id, "type": "message", "role": "user", "content": "hi"}]
            try:
                raw = await other.responses.with_raw_response.create(model=model, input=sent, conversation=theirs.id)
                answers.append(raw.status_code)
            except openai.APIStatusError as exc:
                answers.append(exc.status_code)
        assert answers == [200, 200]
        kept = [i.id async for i in other.conversations.items.list(theirs.id)]
        assert len(kept) == 4 and taken not in kept


@pytest.mark.parametrize("stream", [False, True])
def test_input_its_conversation_cannot_keep_is_refused_before_the_model_is_called(
    gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes, stream: bool
) -> None:
    sdk = client(gateway, gw_world.keys["all"])
    conversation = sdk.conversations.create(items=[{"role": "user", "content": "My name is Ada."}])
    # A text part without text, after more items than one items call holds: named by its place in the whole input.
    fine: list[Any] = [{"role": "user", "content": "fine"}] * 24
    unsaveable: list[Any] = [*fine, {"role": "user", "content": [{"type": "input_text"}]}]
    calls = len(fakes.openai.received)
    with pytest.raises(openai.BadRequestError) as err:  # before any event: a stream would raise only when read
        sdk.responses.create(
            model=gw_world.model("chat"),
            input=unsaveable,
            conversation=conversation.id,
            stream=stream,
        )
    assert err.value.param == "input[24].content[0].text"
    assert len(fakes.openai.received) == calls
    assert len(list(sdk.conversations.items.list(conversation.id))) == 1  # the conversation is unchanged
