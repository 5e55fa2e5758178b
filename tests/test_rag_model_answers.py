"""What a RAG reads from its embedding and rerank models' answers (gateway.rag.embedder): a vector or score for each
input exactly once, by its integer `index`. An answer that skips, repeats or misnames an input would otherwise store
one chunk's vector under another, or rank a document by another's score, with no error anywhere."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.rag.embedder import _parse, _parse_rerank
from server.errors import UpstreamFailed


def _embeddings(*indexes: Any) -> bytes:
    data = [{"object": "embedding", "index": i, "embedding": [float(n), 1.0]} for n, i in enumerate(indexes)]
    return orjson.dumps({"object": "list", "data": data, "usage": {"prompt_tokens": 3}})


def _reranked(*indexes: Any) -> bytes:
    return orjson.dumps({"results": [{"index": i, "relevance_score": 0.1 * n} for n, i in enumerate(indexes)]})


def test_vectors_come_back_in_input_order_whatever_order_the_model_answers_in() -> None:
    vectors, tokens = _parse(_embeddings(1, 0, 2), 3)
    assert vectors == [[1.0, 1.0], [0.0, 1.0], [2.0, 1.0]] and tokens == 3


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
def test_an_embeddings_answer_that_does_not_name_each_input_once_is_the_model_s_failure(indexes: tuple[Any]) -> None:
    with pytest.raises(UpstreamFailed, match="invalid response"):
        _parse(_embeddings(*indexes), 2)


def test_scores_come_back_in_input_order() -> None:
    scores, _ = _parse_rerank(_reranked(2, 0, 1), 3)
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
def test_a_rerank_answer_that_does_not_score_each_document_once_is_the_model_s_failure(indexes: tuple[Any]) -> None:
    with pytest.raises(UpstreamFailed, match="invalid response"):
        _parse_rerank(_reranked(*indexes), 2)
