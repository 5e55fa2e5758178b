"""Passages of concurrent uploads embedded together: one queue per RAG and caller, cut into bounded batches.

An upload embeds its own chunks; a client uploading many small files (`switchboard rag ingest`, one file per request)
made one embedding call per file, so per-call costs bounded ingest at a fraction of what the model serves in
batches (issue 27: 10 docs/s against 15). Here every upload's passages join one queue per (RAG, caller): a batch
leaves when it holds `size` texts, when no batch is out, or when its oldest text has waited `wait` seconds (the
latency bound); up to `in_flight` batches are out at once, so while the model works on some, the next fill up.
Texts of different RAGs or callers are never mixed: each call is metered to its RAG's owner by the key that caused
it, as before.

A caller that goes away (a cancelled upload) leaves its queued texts behind, unsent; one batch failing fails the
uploads with texts in it, no other.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence

__all__ = ["Batcher", "Batchers"]

Vector = list[float]
Send = Callable[[list[str]], Awaitable[list[Vector]]]
_Item = tuple[str, "asyncio.Future[Vector]", Send, float]  # text, its caller's future, a send, when it was queued


class Batcher:
    def __init__(self, *, size: int, wait: float, in_flight: int, on_idle: Callable[[], None]) -> None:
        self._size, self._wait, self._in_flight = size, wait, in_flight
        self._queue: deque[_Item] = deque()
        self._running: set[asyncio.Task[None]] = set()
        self._timer: asyncio.TimerHandle | None = None
        self._on_idle = on_idle

    async def embed(self, texts: Sequence[str], send: Send) -> list[Vector]:
        """The texts' vectors, in order; `send` embeds one batch (any caller's `send` may carry the batch: they
        are interchangeable within one queue)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        futures = [loop.create_future() for _ in texts]
        self._queue.extend((text, future, send, now) for text, future in zip(texts, futures, strict=True))
        self._dispatch()
        try:
            done = await asyncio.gather(*futures, return_exceptions=True)
        except asyncio.CancelledError:
            for future in futures:
                future.cancel()  # still queued: skipped when a batch is cut; in flight: the answer is dropped
            raise
        for result in done:
            if isinstance(result, BaseException):
                raise result
        return done  # type: ignore[return-value]  # no exception among them (checked above)

    def _dispatch(self) -> None:
        loop = asyncio.get_running_loop()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        while self._queue and len(self._running) < self._in_flight:
            while self._queue and self._queue[0][1].done():  # its caller went away
                self._queue.popleft()
            if not self._queue:
                break
            due = self._queue[0][3] + self._wait
            # A partial batch leaves at once when nothing is out (the model idles), else when its oldest text waited
            # `wait`: texts arriving while the model works fill it meanwhile.
            if len(self._queue) < self._size and self._running and loop.time() < due:
                self._timer = loop.call_at(due, self._dispatch)
                return
            batch: list[_Item] = []
            while self._queue and len(batch) < self._size:
                item = self._queue.popleft()
                if not item[1].done():
                    batch.append(item)
            if batch:
                task = asyncio.create_task(self._send(batch))
                self._running.add(task)
                task.add_done_callback(self._finished)
        if not self._queue and not self._running:
            self._on_idle()

    async def _send(self, batch: list[_Item]) -> None:
        try:
            vectors = await batch[0][2]([text for text, *_ in batch])
        except asyncio.CancelledError:  # the gateway is stopping
            for _, future, *_ in batch:
                future.cancel()
            raise
        except Exception as exc:
            for _, future, *_ in batch:
                if not future.done():
                    future.set_exception(exc)
            return
        for (_, future, *_), vector in zip(batch, vectors, strict=True):
            if not future.done():
                future.set_result(vector)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        self._dispatch()


class Batchers:
    """The batchers of one gateway, by key; a batcher with nothing queued or in flight is forgotten."""

    def __init__(self, *, size: int, wait: float, in_flight: int) -> None:
        self._size, self._wait, self._in_flight = size, wait, in_flight
        self._by_key: dict[Hashable, Batcher] = {}

    def get(self, key: Hashable) -> Batcher:
        batcher = self._by_key.get(key)
        if batcher is None:
            batcher = Batcher(
                size=self._size, wait=self._wait, in_flight=self._in_flight, on_idle=lambda: self._forget(key)
            )
            self._by_key[key] = batcher
        return batcher

    def _forget(self, key: Hashable) -> None:
        self._by_key.pop(key, None)

    def __len__(self) -> int:
        return len(self._by_key)
