"""Type and range checks of the sampling fields of /v1/chat/completions and /v1/responses, one table per surface.

A wrong type used to travel on (`"temperature": "hot"` reached the Responses echo's float() and became a 500);
now it is a 400 naming the field, before any upstream is called. Ranges are OpenAI's documented ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from server.domain.json_values import is_integer, is_number
from server.errors import InvalidArgument

__all__ = ["CHAT_FIELDS", "RESPONSES_FIELDS", "check_fields"]


def _stop(value: Any) -> bool:
    return isinstance(value, str) or (
        isinstance(value, list) and len(value) <= 4 and all(isinstance(v, str) for v in value)
    )


@dataclass(frozen=True)
class _Rule:
    accepts: Callable[[Any], bool]
    expected: str
    low: float | None = None
    high: float | None = None

    def check(self, name: str, value: Any) -> None:
        in_range = not is_number(value) or (
            (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        )
        if not self.accepts(value) or not in_range:
            raise InvalidArgument(f"'{name}' must be {self.expected}.", field=name)


_TEMPERATURE = _Rule(is_number, "a number between 0 and 2", 0, 2)
_TOP_P = _Rule(is_number, "a number between 0 and 1", 0, 1)
_PENALTY = _Rule(is_number, "a number between -2 and 2", -2, 2)
_TOKENS = _Rule(is_integer, "a positive integer", 1)
_BOOLEAN = _Rule(lambda v: isinstance(v, bool), "a boolean")
_STRING = _Rule(lambda v: isinstance(v, str), "a string")
_TOP_LOGPROBS = _Rule(is_integer, "an integer between 0 and 20", 0, 20)
_OBJECT = _Rule(lambda v: isinstance(v, dict), "an object")

CHAT_FIELDS: dict[str, _Rule] = {
    "temperature": _TEMPERATURE,
    "top_p": _TOP_P,
    "presence_penalty": _PENALTY,
    "frequency_penalty": _PENALTY,
    "max_tokens": _TOKENS,
    "max_completion_tokens": _TOKENS,
    "n": _Rule(is_integer, "an integer between 1 and 128", 1, 128),
    "seed": _Rule(is_integer, "an integer"),
    "logprobs": _BOOLEAN,
    "top_logprobs": _TOP_LOGPROBS,
    "parallel_tool_calls": _BOOLEAN,
    "stop": _Rule(_stop, "a string or an array of at most 4 strings"),
    "user": _STRING,
    # What OpenAI refuses with a 400 naming it; sent on, a model server's refusal came back as a retryable 502.
    "tools": _Rule(lambda v: isinstance(v, list) and all(isinstance(t, dict) for t in v), "an array of tool objects"),
    "tool_choice": _Rule(lambda v: isinstance(v, str | dict), "a string or an object"),
    "response_format": _OBJECT,
}

RESPONSES_FIELDS: dict[str, _Rule] = {
    "temperature": _TEMPERATURE,
    "top_p": _TOP_P,
    "max_output_tokens": _TOKENS,
    "top_logprobs": _TOP_LOGPROBS,
    "parallel_tool_calls": _BOOLEAN,
    "store": _BOOLEAN,
    "user": _STRING,
    "instructions": _STRING,
    "metadata": _OBJECT,
}


def check_fields(payload: dict[str, Any], rules: dict[str, _Rule]) -> None:
    """Refuse the first present (non-null) field whose value breaks its rule."""
    for name, rule in rules.items():
        value = payload.get(name)
        if value is not None:
            rule.check(name, value)
