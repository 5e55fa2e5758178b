"""PostgreSQL's BM25 over per-RAG postings (server/store/rag_index/pg_lexical.py), on the dev PostgreSQL and the
embedded PostgreSQL 18 + pgvector: the statistics its triggers keep match a count from scratch after uploads,
deletions and a RAG's cascade; its ranking equals BM25 computed independently here from the chunks' lexemes, also
when its lists are read in several passes; and chunks written before the triggers existed are backfilled."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest
from sqlalchemy import delete, text
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.db import Database as Store
from server.store.db import new_id
from server.store.models import RagDeploymentRow, RagFileRow
from server.store.rag_index import ChunkInput, chunk_index_for, pg_lexical
from server.store.rag_index.postgres import PostgresChunkIndex
from tests.rag_helpers import statements_run, stored_rag

on_postgresql = pytest.mark.parametrize("rag_database", ["postgresql", "pgvector"], indirect=True)

VOCABULARY = [f"topic{i}" for i in range(200)]


async def _add(store: Store, rag_id: str, texts: list[str]) -> str:
    index = await chunk_index_for(store.engine)
    file_id = new_id("rf")
    chunks = [ChunkInput(text=t, token_count=len(t.split()), vector=[1.0, float(i), 0.5]) for i, t in enumerate(texts)]
    async with store.transaction() as session:
        session.add(RagFileRow(id=file_id, rag_id=rag_id, filename="f.txt", status="ready", chunk_count=len(chunks)))
        await session.flush()
        await index.add(session, rag_id=rag_id, file_id=file_id, chunks=chunks)
    return file_id


def _random_texts(rng: np.random.Generator, n: int) -> list[str]:
    # Lengths 1-40 words and repeated words, so tf and document length both vary; no term reaches the common cap.
    return [" ".join(rng.choice(VOCABULARY, size=int(rng.integers(1, 41)))) for _ in range(n)]


async def _kept(session: AsyncSession, rag_id: str) -> tuple[dict[str, int], tuple[int, int], int]:
    df = {
        str(t): int(n)
        for t, n in await session.execute(text("SELECT term, df FROM rag_term_stats WHERE rag_id = :r"), {"r": rag_id})
    }
    totals = (
        await session.execute(text("SELECT chunks, lexemes FROM rag_lexical_stats WHERE rag_id = :r"), {"r": rag_id})
    ).one_or_none()
    postings = int(await session.scalar(text("SELECT count(*) FROM rag_terms WHERE rag_id = :r"), {"r": rag_id}) or 0)
    return df, (int(totals[0]), int(totals[1])) if totals else (0, 0), postings


async def _counted(session: AsyncSession, rag_id: str) -> tuple[dict[str, int], tuple[int, int], int]:
    """The same figures counted from the chunks themselves."""
    rows = await session.execute(
        text(
            "SELECT u.lexeme, count(*), sum(cardinality(u.positions)) FROM rag_chunks c "
            "CROSS JOIN LATERAL unnest(c.tsv) AS u WHERE c.rag_id = :r GROUP BY 1"
        ),
        {"r": rag_id},
    )
    df, lexemes = {}, 0
    for term, n, occurrences in rows:
        df[str(term)] = int(n)
        lexemes += int(occurrences)
    chunks = int(await session.scalar(text("SELECT count(*) FROM rag_chunks WHERE rag_id = :r"), {"r": rag_id}) or 0)
    return df, (chunks, lexemes) if chunks else (0, 0), sum(df.values())


@on_postgresql
async def test_the_triggers_keep_each_rags_statistics_exact(store: Store) -> None:
    rng = np.random.default_rng(1)
    one, other = await stored_rag(store), await stored_rag(store)
    first = await _add(store, one, _random_texts(rng, 40))
    await _add(store, one, [*_random_texts(rng, 30), "", "the of and"])  # no lexemes at all: counted, no postings
    await _add(store, other, _random_texts(rng, 50))
    async with store.read() as session:
        for rag_id in (one, other):
            kept = await _kept(session, rag_id)
            assert kept[1][0] > 0 and kept == await _counted(session, rag_id)
    index = await chunk_index_for(store.engine)
    async with store.transaction() as session:
        await index.remove_file(session, rag_id=one, file_id=first)
    async with store.transaction() as session:  # a RAG's deletion: rows go by cascade from rag_deployments
        await index.drop_rag(session, rag_id=other)
        await session.execute(delete(RagDeploymentRow).where(RagDeploymentRow.id == other))
    async with store.read() as session:
        kept = await _kept(session, one)
        assert kept[1][0] == 32 and kept == await _counted(session, one)
        assert await _kept(session, other) == ({}, (0, 0), 0)


def _reference_bm25(
    chunks: dict[int, Counter[str]], terms: list[str], limit: int, among: set[int] | None = None
) -> list[tuple[int, float]]:
    """BM25 with the statistics of all of `chunks`, ranking those `among` (all by default)."""
    n = len(chunks)
    mean = sum(sum(c.values()) for c in chunks.values()) / n
    df = {t: sum(1 for c in chunks.values() if t in c) for t in terms}
    scored = []
    for chunk_id, counts in chunks.items():
        if not any(t in counts for t in terms) or (among is not None and chunk_id not in among):
            continue
        norm = 1.2 * (1 - 0.75 + 0.75 * sum(counts.values()) / mean)
        score = sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * counts[t] * 2.2 / (counts[t] + norm)
            for t in terms
            if t in counts
        )
        scored.append((chunk_id, score))
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))[:limit]


async def _lexemes(session: AsyncSession, rag_id: str) -> tuple[dict[int, Counter[str]], dict[int, str]]:
    """Each of the RAG's chunks' lexemes with their tf; and each chunk's file."""
    rows = await session.execute(
        text(
            "SELECT c.id, c.file_id, u.lexeme, cardinality(u.positions) FROM rag_chunks c "
            "CROSS JOIN LATERAL unnest(c.tsv) AS u WHERE c.rag_id = :r"
        ),
        {"r": rag_id},
    )
    chunks: dict[int, Counter[str]] = {}
    files: dict[int, str] = {}
    for chunk_id, file_id, lexeme, tf in rows:
        chunks.setdefault(int(chunk_id), Counter())[str(lexeme)] = int(tf)
        files[int(chunk_id)] = str(file_id)
    return chunks, files


def _queries(rng: np.random.Generator) -> list[list[str]]:
    """20 queries of 1-4 distinct words of the vocabulary."""
    return [list(rng.choice(VOCABULARY, size=int(rng.integers(1, 5)), replace=False)) for _ in range(20)]


def _assert_bm25(ranking: pg_lexical.Ranking, chunks: dict[int, Counter[str]], among: set[int] | None = None) -> None:
    """The ranking is proven and is BM25's top 5 of the chunks `among` (all by default)."""
    expected = _reference_bm25(chunks, ranking.terms, 5, among)
    assert ranking.exact
    assert [c.chunk_id for c in ranking.candidates] == [chunk_id for chunk_id, _ in expected]
    assert [c.score for c in ranking.candidates] == pytest.approx([s for _, s in expected])


@on_postgresql
async def test_the_ranking_is_bm25_whether_the_lists_are_read_in_one_pass_or_several(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(2)
    rag_id = await stored_rag(store)
    for _ in range(3):
        await _add(store, rag_id, _random_texts(rng, 100))
    await _add(store, await stored_rag(store), _random_texts(rng, 100))  # another RAG, the same words
    async with store.read() as session:
        chunks, _ = await _lexemes(session, rag_id)
        queries = _queries(rng)
        for first_depth in (pg_lexical.FIRST_DEPTH, 2):  # 2: every list read again deeper before it is proven
            monkeypatch.setattr(pg_lexical, "FIRST_DEPTH", first_depth)
            for words in queries:
                ranking = await pg_lexical.bm25(
                    session, rag_id=rag_id, words=words, limit=5, file_ids=None, with_dense=False
                )
                assert sorted(ranking.terms) == sorted(words)
                _assert_bm25(ranking, chunks)
        # Lists cut short before the bound holds (4 rows of each of 4 terms): the best of what was read, said to be
        # unproven.
        monkeypatch.setattr(pg_lexical, "FIRST_DEPTH", 1)
        cut = await pg_lexical.bm25(
            session, rag_id=rag_id, words=VOCABULARY[:4], limit=1, file_ids=None, with_dense=False, max_depth=1
        )
        assert not cut.exact and cut.depth == 4 and len(cut.candidates) == 1


@on_postgresql
async def test_a_ranking_restricted_to_files_is_the_rags_bm25_among_their_chunks(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = np.random.default_rng(4)
    rag_id = await stored_rag(store)
    files = [await _add(store, rag_id, _random_texts(rng, 20)) for _ in range(10)]
    elsewhere = await _add(store, await stored_rag(store), _random_texts(rng, 20))  # another RAG's, the same words
    queries = _queries(rng)
    async with store.read() as session:
        chunks, file_of = await _lexemes(session, rag_id)
        # A few files are read from their chunks (depth 0); with no restriction counted as few, down the lists.
        for max_few, read_from_chunks in ((pg_lexical.MAX_FEW, True), (0, False)):
            monkeypatch.setattr(pg_lexical, "MAX_FEW", max_few)
            for chosen in ([files[3]], files[2:5]):
                among = {chunk_id for chunk_id, file_id in file_of.items() if file_id in chosen}
                for words in queries:
                    ranking = await pg_lexical.bm25(
                        session, rag_id=rag_id, words=words, limit=5, file_ids=[*chosen, elsewhere], with_dense=False
                    )
                    assert (ranking.depth == 0) == read_from_chunks
                    _assert_bm25(ranking, chunks, among)


@on_postgresql
async def test_chunks_written_before_the_triggers_are_backfilled(store: Store) -> None:
    rng = np.random.default_rng(3)
    rag_id = await stored_rag(store)
    await _add(store, rag_id, _random_texts(rng, 20))
    async with store.transaction() as session:  # an earlier version: no postings, no statistics, no triggers
        await session.execute(text("DROP TRIGGER rag_chunks_terms_added ON rag_chunks"))
        await session.execute(text("DROP TRIGGER rag_chunks_terms_removed ON rag_chunks"))
        await session.execute(text("TRUNCATE rag_terms, rag_term_stats, rag_lexical_stats"))
    await _add(store, rag_id, [*_random_texts(rng, 20), "a lone zebra"])
    upgraded = PostgresChunkIndex()
    await upgraded.prepare(store.engine)
    async with store.read() as session:
        kept = await _kept(session, rag_id)
        assert kept[1][0] == 41 and kept == await _counted(session, rag_id)
        hits = await upgraded.lexical(session, rag_id=rag_id, query="zebra", limit=3, file_ids=None)
    assert len(hits) == 1


@on_postgresql
async def test_a_search_reads_only_the_rows_it_asks_for(store: Store) -> None:
    # Its terms' statistics and the best rows of their lists, whatever the planner's statistics say: here taken
    # before the upload and before 300,000 postings of other RAGs were added, as autovacuum's are until it catches up.
    # (Those postings are written directly: the planner sees the table's size, not whose rows they are.)
    rag_id = await stored_rag(store)
    await chunk_index_for(store.engine)  # its tables
    async with store.transaction() as session:
        await session.execute(text("ANALYZE rag_terms, rag_term_stats"))
        await session.execute(
            text(
                "INSERT INTO rag_terms (chunk_id, term, rag_id, tf, dl, impact) "
                "SELECT -g, 'other' || (g % 20000), 'another', 1, 50, 0.5 FROM generate_series(1, 300000) AS g"
            )
        )
    try:
        # "shared" in 250 chunks: more than a list's first read, fewer than a common term; 3,001 other terms.
        await _add(store, rag_id, [f"term{i} term{i + 1}" + (" shared" if i % 12 == 0 else "") for i in range(3000)])
        with statements_run(store) as run:
            async with store.read() as session:
                ranking = await pg_lexical.bm25(
                    session, rag_id=rag_id, words=["term7", "shared"], limit=3, file_ids=None, with_dense=False
                )
        assert ranking.exact and ranking.depth == pg_lexical.FIRST_DEPTH and len(ranking.candidates) == 3
        async with store.read() as session:  # the search again, in a transaction of its own, each statement explained
            connection = await session.connection()
            for statement, parameters in run:
                plan = await connection.exec_driver_sql(f"EXPLAIN (ANALYZE, FORMAT JSON) {statement}", parameters)
                read = plan.scalar_one()[0]["Plan"]
                assert _rows_read(read, "rag_term_stats") <= 2  # the query's terms
                # a list's best `depth` rows a term, or a completion's (chunk, term) pairs
                terms = len(parameters.get("terms", []))
                assert _rows_read(read, "rag_terms") <= terms * parameters.get("depth", len(parameters.get("ids", [])))
    finally:  # the database is the session's: the other postings go
        async with store.transaction() as session:
            await session.execute(text("DELETE FROM rag_terms WHERE rag_id = 'another'"))


def _rows_read(node: dict[str, Any], table: str) -> int:
    """The rows a plan's scans of `table` returned or filtered out, over all their loops."""
    own = 0
    if node.get("Relation Name") == table:
        removed = node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Index Recheck", 0)
        own = (node["Actual Rows"] + removed) * node["Actual Loops"]
    return own + sum(_rows_read(child, table) for child in node.get("Plans", []))


def test_an_impact_bounds_the_live_weight_at_any_mean_length_and_is_tight_at_the_mean() -> None:
    def weight(tf: int, dl: int, mean: float) -> float:
        return tf / (tf + pg_lexical.K1 * (1 - pg_lexical.B + pg_lexical.B * dl / mean))

    for mean in (8.0, 30.0, 60.0, pg_lexical.REF_LENGTH, 100.0, 500.0):
        for tf in range(1, 30):
            for dl in range(tf, 400, 3):
                bound = pg_lexical.live_bound(weight(tf, dl, pg_lexical.REF_LENGTH), mean)
                assert weight(tf, dl, mean) <= bound * (1 + 1e-12)
        if mean <= pg_lexical.REF_LENGTH:  # tf 1 at any length: the bound is the live weight itself (ties prove)
            tight = pg_lexical.live_bound(weight(1, 60, pg_lexical.REF_LENGTH), mean)
            assert tight == pytest.approx(weight(1, 60, mean))
