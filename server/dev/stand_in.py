"""The stand-in models of `switchboard dev-models`: deterministic rules that say they are not language models, and
yet exercise what a real model does with a platform: call an offered tool, answer from a tool's result, judge an
answer as a guardrail.

Chat (`answer`):
- offered tools (`tools`, not disabled by `tool_choice: "none"`) and a last user message that asks for one: the
  answer is a call of the tool the message names best, counting the message's words found in the tool's name or
  description (a forced `tool_choice` takes the forced or best tool even without a match). Arguments come from the
  tool's JSON schema and the message: `query`-like strings get the whole message, other strings the quoted text or
  the last capitalised words ("in Paris" -> "Paris"), numbers the message's numbers in order;
- after tool results (the last messages are `tool` messages), a text answer that quotes them (a search result: its
  best passage and file), labelled as the stand-in's;
- otherwise `stand_in_reply`: how many messages and words it was sent, never what.

Speech to text (`stand_in_transcript`): what arrived (the file's name and size), labelled as the stand-in's, never
words it did not hear.

Guardrail (`guardrail_verdict`): the JSON verdict format the gateway reads (gateway.guardrails), refusing whatever
conversation mentions TRIGGER_WORD and allowing everything else.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "STAND_IN_NOTICE",
    "TRIGGER_WORD",
    "Answer",
    "ToolCall",
    "answer",
    "guardrail_verdict",
    "stand_in_reply",
    "stand_in_transcript",
]

STAND_IN_NOTICE = "[development stand-in, not a language model]"
TRIGGER_WORD = "password"
_WORD = re.compile(r"[a-z0-9]+")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]")
_CAPITALISED = re.compile(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*")
_AFTER_PREPOSITION = re.compile(r"\b(?:in|for|of|at|about|on)\s+([\w' -]+)$", re.I)
_QUERY_NAMES = frozenset({"query", "q", "question", "text", "input", "prompt", "search"})
# Words too common to say which tool a message wants.
# fmt: off
_STOP_WORDS = frozenset({
    "the", "and", "for", "with", "what", "whats", "how", "who", "why", "when", "where", "which", "this", "that",
    "these", "those", "you", "your", "are", "was", "can", "could", "would", "should", "please", "tell", "give",
    "show", "about", "from", "into", "use", "using", "tool", "tools", "call", "does", "did", "have", "has", "its",
    "not", "all", "any", "some", "get", "set", "one", "two", "our", "out", "now", "there", "their", "them", "then",
    "than",
})
# fmt: on
_MAX_QUOTE = 400


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON, as Chat Completions carries it


@dataclass(frozen=True)
class Answer:
    """Either a text or one tool call."""

    text: str | None = None
    call: ToolCall | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def stand_in_reply(messages: list[Any]) -> str:
    """A deterministic answer that says what it is and how much it was sent (never what)."""
    words = sum(len(_text(m.get("content")).split()) for m in messages if isinstance(m, dict))
    return f"{STAND_IN_NOTICE} Switchboard routed your {len(messages)} message(s) ({words} words) to this model."


@dataclass(frozen=True)
class _Offered:
    name: str
    description: str
    parameters: dict[str, Any]

    def score(self, words: set[str]) -> int:
        """How many of the message's words name this tool (in its name, its description, or ending its name)."""
        name_words = set(_WORD.findall(self.name.lower()))
        known = name_words | set(_WORD.findall(self.description.lower()))
        return sum(1 for w in words if w in known or any(n.endswith(w) for n in name_words))


def _offered(tools: Any) -> list[_Offered]:
    found = []
    for tool in tools if isinstance(tools, list) else ():
        function = tool.get("function") if isinstance(tool, dict) and tool.get("type") == "function" else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            found.append(
                _Offered(
                    function["name"],
                    str(function.get("description") or ""),
                    parameters if isinstance(parameters, dict) else {},
                )
            )
    return found


def _choose(offered: list[_Offered], tool_choice: Any, message: str) -> _Offered | None:
    if tool_choice == "none" or not offered:
        return None
    if isinstance(tool_choice, dict):
        forced = (tool_choice.get("function") or {}).get("name")
        return next((t for t in offered if t.name == forced), None)
    words = {w for w in _WORD.findall(message.lower()) if len(w) >= 3 and w not in _STOP_WORDS}
    best = max(offered, key=lambda t: t.score(words))  # the first of equals: offered order decides ties
    if best.score(words) > 0 or tool_choice == "required":
        return best
    return None


def _string_for(name: str, message: str) -> str:
    if name.lower() in _QUERY_NAMES:
        return message.strip()
    quoted = _QUOTED.findall(message)
    if quoted:
        return str(quoted[0]).strip()
    capitalised = [m for m in _CAPITALISED.finditer(message) if m.start() > 0]
    if capitalised:
        return capitalised[-1].group(0).removesuffix("'s").strip()
    after = _AFTER_PREPOSITION.search(message.strip().rstrip("?.!"))
    words = (after.group(1) if after else message).split()
    while len(words) > 1 and words[-1].lower() in _STOP_WORDS | {"today", "please"}:
        words.pop()  # "in new york please" -> "new york"
    return " ".join(words)


def _arguments(parameters: dict[str, Any], message: str) -> dict[str, Any]:
    """Values for the schema's required properties, taken from the message (see the module docstring)."""
    properties = parameters.get("properties")
    required = parameters.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    numbers = [float(n) for n in _NUMBER.findall(message)]
    arguments: dict[str, Any] = {}
    for name in required:
        schema = properties.get(name)
        kind = schema.get("type") if isinstance(schema, dict) else None
        if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and schema["enum"]:
            arguments[name] = schema["enum"][0]
        elif kind in ("integer", "number"):
            if numbers:
                value = numbers.pop(0)
                arguments[name] = int(value) if kind == "integer" or value.is_integer() else value
        elif kind == "boolean":
            arguments[name] = False
        elif kind == "string" or kind is None:
            arguments[name] = _string_for(str(name), message)
    return arguments


def _call_id(position: int, name: str, arguments: str) -> str:
    digest = hashlib.sha256(f"{position}\0{name}\0{arguments}".encode()).hexdigest()[:24]
    return f"call_{digest}"


def _summary(output: str) -> str:
    """A tool's output as a sentence: a search's best passage with its file, anything else quoted (shortened)."""
    try:
        parsed = orjson.loads(output)
    except orjson.JSONDecodeError:
        parsed = None
    results = parsed.get("results") if isinstance(parsed, dict) else None
    if isinstance(results, list):
        best = results[0] if results and isinstance(results[0], dict) else None
        if best is None:
            return "no matching passage"
        return f"the best match is {best.get('filename')}: {_shorten(str(best.get('text', '')))}"
    return _shorten(output)


def _shorten(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_QUOTE else flat[: _MAX_QUOTE - 1] + "…"


def _from_tool_results(messages: list[Any]) -> str:
    """The text answer to the trailing tool results, each named after the tool that gave it."""
    results: list[dict[str, Any]] = []
    for message in reversed(messages):
        if not isinstance(message, dict) or message.get("role") != "tool":
            break
        results.insert(0, message)
    names: dict[str, str] = {}
    for message in messages:
        for call in (message.get("tool_calls") or ()) if isinstance(message, dict) else ():
            if isinstance(call, dict):
                names[str(call.get("id"))] = str((call.get("function") or {}).get("name", "the tool"))
    parts = [
        f"{names.get(str(m.get('tool_call_id')), 'the tool')} answered: {_summary(_text(m.get('content')))}"
        for m in results
    ]
    said = "; ".join(parts)
    return f"{STAND_IN_NOTICE} {said}" + ("" if said.endswith((".", "!", "?", "…")) else ".")


def answer(messages: list[Any], tools: Any = None, tool_choice: Any = None) -> Answer:
    """The stand-in's answer to a Chat Completions request (see the module docstring)."""
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if last.get("role") == "tool":
        return Answer(text=_from_tool_results(messages))
    if last.get("role") == "user":
        message = _text(last.get("content"))
        chosen = _choose(_offered(tools), tool_choice, message)
        if chosen is not None:
            arguments = orjson.dumps(_arguments(chosen.parameters, message)).decode()
            return Answer(call=ToolCall(_call_id(len(messages), chosen.name, arguments), chosen.name, arguments))
    return Answer(text=stand_in_reply(messages))


def guardrail_verdict(messages: list[Any]) -> str:
    """The stand-in guardrail's verdict on a conversation: refused when any message mentions TRIGGER_WORD."""
    mentioned = any(
        TRIGGER_WORD in _WORD.findall(_text(m.get("content")).lower()) for m in messages if isinstance(m, dict)
    )
    if mentioned:
        reason = f"the demo guardrail refuses anything that mentions '{TRIGGER_WORD}'"
        return orjson.dumps({"allowed": False, "reason": reason}).decode()
    return orjson.dumps({"allowed": True}).decode()


def stand_in_transcript(filename: str, size: int) -> str:
    """The stand-in speech-to-text model's "transcript" of an audio file: what it received, not what was said."""
    return f"{STAND_IN_NOTICE} Switchboard sent {size} bytes of audio ({filename[:100]}) to this model."
