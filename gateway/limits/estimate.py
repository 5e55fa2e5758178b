"""What a call reserves against tokens-per-minute limits and budgets before it runs (settled to its usage after).

Input: the request body's size in bytes / 4, a conservative token count for JSON-wrapped text (about four bytes of
English per token, and JSON adds quoting and keys). Output: the largest of the request's `max_completion_tokens` /
`max_tokens` / `max_output_tokens` (upstreams differ in which of the first two they honour when both are set: vLLM
and SGLang take `max_completion_tokens`, servers that predate it only know `max_tokens`); a text-generation call that
sets none reserves its default: `DEFAULT_OUTPUT_TOKENS`, or the bound a preset agent gives its base model; a chat
completion asking for `n` choices reserves that `n` times, as each choice may use all of it. Embeddings, rerank and
transcriptions produce no output tokens, and a transcription reserves nothing up front (its body is audio, not text;
what its answer reports as usage is still counted).

`text_tokens` estimates the text a stream relayed the same way (bytes / 4), for a stream whose usage never arrived.
"""

from __future__ import annotations

from typing import Any

from server.domain.json_values import is_integer
from server.metering import CallKind

__all__ = ["DEFAULT_OUTPUT_TOKENS", "input_tokens", "output_tokens", "text_tokens"]

DEFAULT_OUTPUT_TOKENS = 1024
_BYTES_PER_TOKEN = 4
_OUTPUT_FIELDS = ("max_completion_tokens", "max_tokens", "max_output_tokens")
_GENERATING = frozenset({CallKind.CHAT_COMPLETION, CallKind.RESPONSE})


def _count(value: Any) -> int | None:
    return value if is_integer(value) and value >= 0 else None


def text_tokens(size: int) -> int:
    """The tokens `size` bytes of text (or JSON) count as: bytes / 4, rounded up."""
    return -(-size // _BYTES_PER_TOKEN)


def input_tokens(kind: CallKind, body_bytes: int) -> int:
    return 0 if kind == CallKind.TRANSCRIPTION else text_tokens(body_bytes)


def output_tokens(kind: CallKind, payload: dict[str, Any] | None, default: int = DEFAULT_OUTPUT_TOKENS) -> int:
    """The output a call may produce: the largest bound the request sets (`default` when it sets none), for each
    of its choices; 0 for a call that generates no text."""
    if kind not in _GENERATING:
        return 0
    if payload is None:
        return default
    bound = -1
    for name in _OUTPUT_FIELDS:
        value = _count(payload.get(name))
        if value is not None and value > bound:
            bound = value
    choices = _count(payload.get("n")) or 1
    return (default if bound < 0 else bound) * choices
