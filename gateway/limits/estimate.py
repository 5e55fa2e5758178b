"""What a call reserves against tokens-per-minute limits and budgets before it runs (settled to its usage after).

Input: the request body's size in bytes / 4, a conservative token count for JSON-wrapped text (about four bytes of
English per token, and JSON adds quoting and keys). Output: the request's `max_completion_tokens` / `max_tokens` /
`max_output_tokens`; a text-generation call that sets none reserves `DEFAULT_OUTPUT_TOKENS`; a chat completion asking
for `n` choices reserves that `n` times, as each choice may use all of it. Embeddings, rerank and transcriptions
produce no output tokens, and a transcription reserves nothing up front (its body is audio, not text; what its answer
reports as usage is still counted).
"""

from __future__ import annotations

from typing import Any

from server.domain.json_values import is_integer
from server.metering import CallKind

__all__ = ["DEFAULT_OUTPUT_TOKENS", "reservation"]

DEFAULT_OUTPUT_TOKENS = 1024
_BYTES_PER_TOKEN = 4
_OUTPUT_FIELDS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
_GENERATING = frozenset({CallKind.CHAT_COMPLETION, CallKind.RESPONSE})


def _count(value: Any) -> int | None:
    return value if is_integer(value) and value >= 0 else None


def _output(payload: dict[str, Any] | None) -> int:
    if payload is None:
        return DEFAULT_OUTPUT_TOKENS
    choices = _count(payload.get("n")) or 1
    for name in _OUTPUT_FIELDS:
        value = _count(payload.get(name))
        if value is not None:
            return value * choices
    return DEFAULT_OUTPUT_TOKENS * choices


def reservation(kind: CallKind, body_bytes: int, payload: dict[str, Any] | None) -> int:
    if kind == CallKind.TRANSCRIPTION:
        return 0
    tokens = -(-body_bytes // _BYTES_PER_TOKEN)
    if kind in _GENERATING:
        tokens += _output(payload)
    return tokens
