"""Output guardrails: each of an agent's guardrail models, in order, judges the base model's final text.

A guardrail is called like any chat model (same routing, same upstream client, metered as its own call and counted
by the caller's rate limits and budgets as a request of its own) with the caller's last user message and the answer,
and must reply with one of two verdict formats:

- Llama-Guard style: `safe`, or `unsafe` with the violated categories on the next line (`unsafe\\nS1,S10`);
- JSON: `{"allowed": true}` or `{"allowed": false, "reason": "…"}` (a ```json fence around it is accepted).

The first refusal ends the check. Anything else — an unreachable or failing guardrail, an unrecognised verdict —
fails closed: the answer is withheld with a friendly, retryable 502, never released unchecked; a guardrail call a
rate limit refuses withholds it with that limit's 429. Nothing here logs or traces the text being judged or the
guardrail's reply.

`check` works on a final text, so every surface (Chat Completions now, Responses later) shares it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from gateway.calls import metered
from gateway.catalog import Route
from gateway.limits import LimitExceeded
from gateway.providers import Surface
from gateway.surfaces._upstream import post_json, read_upstream_json
from server.errors import SwitchboardError, UpstreamFailed
from server.metering import CallKind

__all__ = ["GUARDRAIL_UNAVAILABLE", "Refusal", "check", "parse_verdict", "text_of"]

log = logging.getLogger("switchboard.gateway.guardrails")

GUARDRAIL_UNAVAILABLE = UpstreamFailed(
    "The agent's output guardrail could not check the response, so it was withheld. Please try again later.",
    retryable=True,
)


@dataclass(frozen=True)
class Refusal:
    """A guardrail refused the answer: which one (its public model id) and why, as far as it said."""

    guardrail: str
    reason: str

    def message(self) -> str:
        why = f": {self.reason}" if self.reason else "."
        return f"The response was withheld by the output guardrail '{self.guardrail}'{why}"


def _json_verdict(text: str) -> tuple[bool, str] | None:
    body = text
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
    try:
        parsed: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("allowed"), bool):
        return None
    reason = parsed.get("reason")
    return parsed["allowed"], str(reason).strip() if isinstance(reason, str | int | float) else ""


def parse_verdict(text: str) -> tuple[bool, str] | None:
    """(allowed, reason) from a guardrail's reply; None when it is in neither supported format."""
    stripped = text.strip()
    if stripped.startswith(("{", "```")):
        return _json_verdict(stripped)
    lines = [line.strip() for line in stripped.splitlines() if line.strip()]
    if not lines:
        return None
    head = lines[0].lower()
    if head == "safe":
        return True, ""
    if head == "unsafe":
        return False, f"unsafe content ({', '.join(lines[1:])})" if len(lines) > 1 else "unsafe content"
    return None


def text_of(content: Any) -> str:
    """The text of a Chat Completions message content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


async def _ask(request: web.Request, route: Route, conversation: list[dict[str, str]]) -> tuple[bool, str]:
    async with metered(request, CallKind.CHAT_COMPLETION) as call:
        payload: dict[str, Any] = {"messages": conversation, "stream": False, "temperature": 0}
        await call.resolve_within(route, payload)
        upstream = await post_json(request, route, Surface.CHAT, payload)
        raw, parsed = await read_upstream_json(upstream, call)
        call.count(parsed.get("usage"))
        call.response_bytes = len(raw)
        choices = parsed.get("choices")
        message = (
            choices[0].get("message")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict)
            else None
        )
        verdict = parse_verdict(text_of(message.get("content"))) if isinstance(message, dict) else None
        if verdict is None:
            log.warning("output guardrail %s answered in no known verdict format", route.ref.name)
            raise GUARDRAIL_UNAVAILABLE
        return verdict


async def check(request: web.Request, guardrails: tuple[Route, ...], prompt: str, answer: str) -> Refusal | None:
    """Run the guardrails in order on `answer` (to `prompt`); the first refusal, or None when all allow it."""
    conversation = [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]
    for route in guardrails:
        try:
            allowed, reason = await _ask(request, route, conversation)
        except LimitExceeded:
            raise  # withheld all the same; waiting for the limit is what can help, and its headers say how long
        except SwitchboardError:
            raise GUARDRAIL_UNAVAILABLE from None  # fail closed, whatever the guardrail's own failure was
        if not allowed:
            return Refusal(route.public_model_id, reason)
    return None
