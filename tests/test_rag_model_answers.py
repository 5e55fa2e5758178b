"""What a RAG reads from its embedding and rerank models' answers (gateway.rag.embedder): a vector or score for each
input exactly once, by its integer `index`. An answer that skips, repeats or misnames an input would otherwise store
one chunk's vector under another, or rank a document by another's score, with no error anywhere.

Each answer reaches `GatewayEmbedder` as the upstream's bytes would: through `post_metered`, replaced here by one that
hands the canned answer to the reader the embedder gave it (the sending, limits and metering are other tests')."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
import pytest
from aiohttp import web

from gateway.catalog import Provider, Route, TaskType
from gateway.context import ACCESS
from gateway.rag import embedder
from gateway.rag.embedder import BATCHERS, GatewayEmbedder, new_batchers
from server.domain import resource_pins
from server.domain.json_values import MAX_REPORTED_COUNT
from server.domain.principal import Principal
from server.domain.rags import Rag
from server.errors import UpstreamFailed
from server.permissions import ResourceKind, ResourceRef, Sharing

_MODELS = {"e5": TaskType.EMBEDDING, "ranker": TaskType.RERANK}


def _route(model: str) -> Route:
    ref = ResourceRef(ResourceKind.MODEL_DEPLOYMENT, model)
    return Route(model, ref, None, Provider.IN_CLUSTER, "http://upstream", model, task_type=_MODELS[model], uid=model)


class _Access:
    async def system_route(
        self, model: str, *, owner: str | None, pins: resource_pins.Pins, target: ResourceRef | None = None
    ) -> Route:
        return _route(model)


def _rag() -> Rag:
    now = datetime.now(UTC)
    pins = {resource_pins.key(_route(m).ref): m for m in _MODELS}
    return Rag(
        id="rag-1",
        name="answers",
        display_name="answers",
        tenant_id="tenant-1",
        sharing=Sharing(),
        embedding_model="e5",
        embedding_dimensions=None,
        chunk_size_tokens=256,
        chunk_overlap_tokens=0,
        rerank_model="ranker",
        top_k=5,
        score_threshold=None,
        dense_weight=1.0,
        lexical_weight=1.0,
        creator="user-1",
        created_at=now,
        updated_at=now,
        used_bytes=0,
        pins=pins,
    )


class _Models:
    """A RAG's models answering every call with `answer`; `tokens`: the usage each call's reading reported."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.answer = b""
        self.tokens: list[int] = []
        monkeypatch.setattr(embedder, "post_metered", self._post)

    async def _post(self, *_: Any, parse: Callable[[bytes], tuple[Any, int]], **__: Any) -> Any:
        result, tokens = parse(self.answer)
        self.tokens.append(tokens)
        return result

    def answering(self, answer: bytes) -> GatewayEmbedder:
        self.answer = answer
        app = web.Application()
        app[ACCESS] = _Access()  # type: ignore[assignment]
        app[BATCHERS] = new_batchers()
        return GatewayEmbedder(app, _rag(), Principal(user_id="user-1"))


@pytest.fixture
def models(monkeypatch: pytest.MonkeyPatch) -> _Models:
    return _Models(monkeypatch)


def _embeddings(*indexes: Any) -> bytes:
    data = [{"object": "embedding", "index": i, "embedding": [float(n), 1.0]} for n, i in enumerate(indexes)]
    return orjson.dumps({"object": "list", "data": data, "usage": {"prompt_tokens": 3}})


def _reranked(*indexes: Any) -> bytes:
    return orjson.dumps({"results": [{"index": i, "relevance_score": 0.1 * n} for n, i in enumerate(indexes)]})


async def test_vectors_come_back_in_input_order_whatever_order_the_model_answers_in(
    models: _Models,
) -> None:
    vectors = await models.answering(_embeddings(1, 0, 2)).passages(["a", "b", "c"])
    assert vectors == [[1.0, 1.0], [0.0, 1.0], [2.0, 1.0]] and models.tokens == [3]


@pytest.mark.parametrize(
    ("reported", "counted"),
    [(-5, 0), (2**64 - 1, MAX_REPORTED_COUNT), (3.5, 0), (True, 0)],  # -5 was a credit; 2**64 - 1 broke counters
)
async def test_usage_an_embedding_model_reports_is_a_bounded_count(
    models: _Models, reported: Any, counted: int
) -> None:
    answer = orjson.loads(_embeddings(0))
    await models.answering(orjson.dumps({**answer, "usage": {"prompt_tokens": reported}})).passages(["a"])
    assert models.tokens == [counted]


@pytest.mark.parametrize(
    "indexes",
    [
        pytest.param((0, 0), id="an-input-twice-another-never"),
        pytest.param((1, 2), id="off-by-one"),
        pytest.param((0, -1), id="negative"),
        pytest.param((0, 1.0), id="a-float"),
        pytest.param((0, "1"), id="a-string"),
        pytest.param((0, True), id="a-boolean"),
        pytest.param((0,), id="one-missing"),
    ],
)
async def test_an_embeddings_answer_that_does_not_name_each_input_once_is_the_model_s_failure(
    models: _Models, indexes: tuple[Any]
) -> None:
    with pytest.raises(UpstreamFailed, match="invalid response"):
        await models.answering(_embeddings(*indexes)).passages(["a", "b"])


async def test_scores_come_back_in_input_order(models: _Models) -> None:
    scores = await models.answering(_reranked(2, 0, 1)).rerank("q", ["a", "b", "c"])
    assert scores == [pytest.approx(0.1), pytest.approx(0.2), 0.0]


@pytest.mark.parametrize(
    "indexes",
    [
        pytest.param((0, 0), id="a-document-twice-another-never"),
        pytest.param((0, -1), id="negative"),
        pytest.param((0, 1.5), id="a-float"),
        pytest.param((0, 1, 2), id="one-too-many"),
        pytest.param((1,), id="one-missing"),
    ],
)
async def test_a_rerank_answer_that_does_not_score_each_document_once_is_the_model_s_failure(
    models: _Models, indexes: tuple[Any]
) -> None:
    with pytest.raises(UpstreamFailed, match="invalid response"):
        await models.answering(_reranked(*indexes)).rerank("q", ["a", "b"])
