"""gateway.rag.batcher: the passages of concurrent uploads share bounded embedding batches, several in flight.

`send` here is the upstream's place: a coroutine that records each batch, as an embedding model would receive it."""

from __future__ import annotations

import asyncio

import pytest

from gateway.rag.batcher import Batchers
from server.errors import UpstreamFailed


class Model:
    def __init__(self, delay: float = 0.01, fail_on: str | None = None) -> None:
        self.batches: list[list[str]] = []
        self.busy = self.most_busy = 0
        self.delay, self.fail_on = delay, fail_on

    async def send(self, batch: list[str]) -> list[list[float]]:
        self.batches.append(batch)
        self.busy += 1
        self.most_busy = max(self.most_busy, self.busy)
        try:
            await asyncio.sleep(self.delay)
            if self.fail_on is not None and self.fail_on in batch:
                raise UpstreamFailed("The embedding model returned an invalid response.", retryable=True)
            return [[float(len(text)), float(text.count("x"))] for text in batch]
        finally:
            self.busy -= 1


def vector(text: str) -> list[float]:
    return [float(len(text)), float(text.count("x"))]


async def test_concurrent_uploads_share_batches_and_each_gets_its_own_vectors_in_order() -> None:
    batchers, model = Batchers(size=8, wait=0.05, in_flight=2), Model()
    uploads = [[f"file {i} chunk {j}" + "x" * j for j in range(i % 3 + 1)] for i in range(20)]
    results = await asyncio.gather(*(batchers.get("rag").embed(texts, model.send) for texts in uploads))
    assert results == [[vector(t) for t in texts] for texts in uploads]
    sent = sum(len(b) for b in model.batches)
    assert sent == sum(len(u) for u in uploads) == 39
    # Not 20 calls, one per upload: the first leaves at once (the model idles), the rest fill while it works.
    assert len(model.batches[0]) == 1 and len(model.batches) <= 7 and all(len(b) <= 8 for b in model.batches)
    assert len(batchers) == 0  # an idle queue is forgotten


async def test_batches_stay_within_their_size_and_in_flight_bounds() -> None:
    batchers, model = Batchers(size=32, wait=0.001, in_flight=4), Model(delay=0.02)
    texts = [f"chunk {i}" for i in range(300)]
    assert await batchers.get("rag").embed(texts, model.send) == [vector(t) for t in texts]
    assert max(len(b) for b in model.batches) == 32 and len(model.batches) == 10
    assert model.most_busy == 4


async def test_a_partial_batch_waits_for_company_only_while_another_is_out() -> None:
    batchers, model = Batchers(size=32, wait=0.05, in_flight=4), Model(delay=0.02)
    batcher = batchers.get("rag")
    first = asyncio.create_task(batcher.embed(["alone"], model.send))  # the model idles: it leaves at once
    await asyncio.sleep(0)
    later = [asyncio.create_task(batcher.embed([f"later {i}"], model.send)) for i in range(3)]
    await asyncio.gather(first, *later)
    assert model.batches == [["alone"], ["later 0", "later 1", "later 2"]]


async def test_queues_of_different_keys_never_share_a_batch() -> None:
    batchers, model = Batchers(size=8, wait=0.02, in_flight=2), Model()
    await asyncio.gather(
        batchers.get(("rag-a", "key-1")).embed(["a1", "a2"], model.send),
        batchers.get(("rag-b", "key-1")).embed(["b1"], model.send),
        batchers.get(("rag-a", "key-2")).embed(["c1"], model.send),
    )
    assert sorted(model.batches) == [["a1", "a2"], ["b1"], ["c1"]]


async def test_a_failed_batch_fails_only_the_uploads_in_it() -> None:
    batchers, model = Batchers(size=2, wait=0.02, in_flight=1), Model(fail_on="bad")
    batcher = batchers.get("rag")
    results = await asyncio.gather(
        batcher.embed(["good 1", "bad"], model.send),
        batcher.embed(["good 2", "good 3"], model.send),
        return_exceptions=True,
    )
    assert isinstance(results[0], UpstreamFailed)
    assert results[1] == [vector("good 2"), vector("good 3")]


async def test_a_cancelled_upload_leaves_its_queued_passages_unsent() -> None:
    batchers, model = Batchers(size=2, wait=0.01, in_flight=1), Model(delay=0.05)
    batcher = batchers.get("rag")
    first = asyncio.create_task(batcher.embed(["one", "two"], model.send))
    await asyncio.sleep(0.02)  # the first batch is in flight, the only slot taken
    gone = asyncio.create_task(batcher.embed(["never sent"], model.send))
    await asyncio.sleep(0)
    gone.cancel()
    with pytest.raises(asyncio.CancelledError):
        await gone
    assert await first == [vector("one"), vector("two")]
    assert await batcher.embed(["three"], model.send) == [vector("three")]
    assert ["never sent"] not in model.batches and all("never sent" not in b for b in model.batches)
