"""The stand-in models of `switchboard dev-models` (server.dev.stand_in): which tool the chat stand-in calls and with
what arguments, how it answers tool results, and the stand-in guardrail's verdicts as the gateway reads them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.guardrails import parse_verdict
from server.dev.stand_in import STAND_IN_NOTICE, TRIGGER_WORD, answer, guardrail_verdict, stand_in_reply


def _function(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


TOOLS = [
    _function("demo-toolsadd", "Add two numbers.", {"a": {"type": "number"}, "b": {"type": "number"}}, ["a", "b"]),
    _function(
        "demo-toolsget_weather",
        "Today's weather in a city (fixed demo data, not a forecast).",
        {"city": {"type": "string"}},
        ["city"],
    ),
    _function(
        "rag_rag_1_search",
        "Search the knowledge base 'Demo handbook'. Returns the best passages.",
        {"query": {"type": "string"}, "top_k": {"type": "integer", "default": 5}},
        ["query"],
    ),
]


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}]


@pytest.mark.parametrize(
    ("message", "tool", "arguments"),
    [
        ("What's the weather in Paris?", "demo-toolsget_weather", {"city": "Paris"}),
        ("weather in new york please", "demo-toolsget_weather", {"city": "new york"}),
        ('Tell me the weather for "Nairobi"', "demo-toolsget_weather", {"city": "Nairobi"}),
        ("Add 2 and 40.5", "demo-toolsadd", {"a": 2, "b": 40.5}),
        ("Search the handbook: key rotation?", "rag_rag_1_search", {"query": "Search the handbook: key rotation?"}),
    ],
)
def test_a_message_that_asks_for_a_tool_gets_a_call_with_arguments_from_the_message(
    message: str, tool: str, arguments: dict[str, Any]
) -> None:
    found = answer(_user(message), TOOLS)
    assert found.text is None and found.call is not None
    assert found.call.name == tool and orjson.loads(found.call.arguments) == arguments
    assert found.call.id.startswith("call_") and answer(_user(message), TOOLS).call == found.call  # deterministic


def test_no_matching_tool_no_tools_or_tool_choice_none_get_the_plain_stand_in_reply() -> None:
    for messages, tools, choice in (
        (_user("hello there"), TOOLS, None),
        (_user("What's the weather in Paris?"), None, None),
        (_user("What's the weather in Paris?"), TOOLS, "none"),
    ):
        found = answer(messages, tools, choice)
        assert found.call is None and found.text == stand_in_reply(messages)
        assert found.text.startswith(STAND_IN_NOTICE) and "Paris" not in found.text  # says how much, never what


def test_a_forced_tool_choice_is_called_even_without_a_matching_word() -> None:
    required = answer(_user("hello"), TOOLS, "required").call
    named = answer(_user("hello"), TOOLS, {"type": "function", "function": {"name": "rag_rag_1_search"}}).call
    assert required is not None and required.name == "demo-toolsadd"  # the first offered, as nothing matched
    assert named is not None and orjson.loads(named.arguments) == {"query": "hello"}


def test_tool_results_are_answered_with_text_that_quotes_them() -> None:
    asked = answer(_user("What's the weather in Paris?"), TOOLS).call
    assert asked is not None
    call = {"id": asked.id, "type": "function", "function": {"name": asked.name, "arguments": asked.arguments}}
    messages = [
        *_user("What's the weather in Paris?"),
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": asked.id, "content": "Paris: 18 °C, light rain (demo data)"},
    ]
    found = answer(messages, TOOLS)
    assert found.call is None  # one round: the loop ends with this answer
    assert found.text == f"{STAND_IN_NOTICE} demo-toolsget_weather answered: Paris: 18 °C, light rain (demo data)."


def test_a_search_result_is_answered_with_its_best_passage() -> None:
    result = {"results": [{"filename": "keys.md", "text": "Rotate:\n create, move,  revoke.", "score": 0.9}]}
    messages = [
        *_user("Search the handbook"),
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "function": {"name": "search"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": orjson.dumps(result).decode()},
    ]
    assert (
        answer(messages).text
        == f"{STAND_IN_NOTICE} search answered: the best match is keys.md: Rotate: create, move, revoke."
    )
    empty = [*messages[:-1], {"role": "tool", "tool_call_id": "c1", "content": '{"results": []}'}]
    assert answer(empty).text == f"{STAND_IN_NOTICE} search answered: no matching passage."


def test_the_guardrail_refuses_the_trigger_word_in_a_format_the_gateway_reads() -> None:
    refused = [
        {"role": "user", "content": f"What is the admin {TRIGGER_WORD.upper()}?"},
        {"role": "assistant", "content": "…"},
    ]
    allowed = [{"role": "user", "content": "What is the weather?"}, {"role": "assistant", "content": "Rainy."}]
    in_answer = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "text", "text": f"the {TRIGGER_WORD} is"}]},
    ]
    reason = f"the demo guardrail refuses anything that mentions '{TRIGGER_WORD}'"
    assert parse_verdict(guardrail_verdict(refused)) == (False, reason)
    assert parse_verdict(guardrail_verdict(in_answer)) == (False, reason)  # the answer is judged too
    assert parse_verdict(guardrail_verdict(allowed)) == (True, "")
    a_longer_word = [{"role": "user", "content": f"{TRIGGER_WORD}s"}]
    assert parse_verdict(guardrail_verdict(a_longer_word)) == (True, "")  # a word, not a substring
