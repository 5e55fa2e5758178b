"""Exact dense search in process: one float32 matrix per RAG, cached, reloaded when the RAG's generation moves.

A replica that did not write a change still sees it on its next query (one primary-key read of the generation);
what is lost on restart is only the cache. Memory: 1.5 KiB per 384-d chunk; at most `_MAX_RAGS` RAGs stay cached.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.models import RagChunkRow, RagIndexGenerationRow
from server.store.rag_index.base import Candidate, Vector, normalized

__all__ = ["NumpyDense"]

_MAX_RAGS = 64


@dataclass(frozen=True)
class _Matrix:
    generation: int
    ids: npt.NDArray[np.int64]
    files: npt.NDArray[np.int32]  # index into file_codes' keys
    file_codes: dict[str, int]
    vectors: Vector  # rows L2-normalised


class NumpyDense:
    def __init__(self) -> None:
        self._cache: OrderedDict[str, _Matrix] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}

    @staticmethod
    def encode(vector: Sequence[float]) -> bytes:
        return normalized(vector).astype("<f4").tobytes()

    async def search(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]:
        matrix = await self._matrix(session, rag_id)
        if not len(matrix.ids) or limit <= 0:
            return []
        if matrix.vectors.shape[1] != vector.shape[0]:
            return []  # the RAG's pinned dimension differs; RAG-level checks report this before we get here
        scores = matrix.vectors @ normalized(vector)
        rows = np.arange(len(matrix.ids))
        if file_ids is not None:
            codes = [matrix.file_codes[f] for f in file_ids if f in matrix.file_codes]
            rows = np.flatnonzero(np.isin(matrix.files, np.asarray(codes, dtype=np.int32)))
            scores = scores[rows]
        top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(rows) else np.arange(len(rows))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Candidate(chunk_id=int(matrix.ids[rows[i]]), score=float(scores[i])) for i in top]

    async def size(self, session: AsyncSession, rag_id: str) -> int:
        """The RAG's chunk count (from the cached matrix, which a hybrid query loads anyway)."""
        return len((await self._matrix(session, rag_id)).ids)

    async def _matrix(self, session: AsyncSession, rag_id: str) -> _Matrix:
        generation = await _generation(session, rag_id)
        cached = self._cache.get(rag_id)
        if cached is not None and cached.generation == generation:
            self._cache.move_to_end(rag_id)
            return cached
        lock = self._loading.setdefault(rag_id, asyncio.Lock())
        async with lock:  # one load per RAG at a time; later callers reuse it
            cached = self._cache.get(rag_id)
            if cached is not None and cached.generation == generation:
                return cached
            matrix = await _load(session, rag_id, generation)
            self._cache[rag_id] = matrix
            self._cache.move_to_end(rag_id)
            while len(self._cache) > _MAX_RAGS:
                self._cache.popitem(last=False)
            return matrix

    def forget(self, rag_id: str) -> None:
        self._cache.pop(rag_id, None)


async def _generation(session: AsyncSession, rag_id: str) -> int:
    value = await session.scalar(select(RagIndexGenerationRow.generation).where(RagIndexGenerationRow.rag_id == rag_id))
    return int(value or 0)


async def _load(session: AsyncSession, rag_id: str, generation: int) -> _Matrix:
    result = await session.execute(
        select(RagChunkRow.id, RagChunkRow.file_id, RagChunkRow.embedding)
        .where(RagChunkRow.rag_id == rag_id, RagChunkRow.embedding.is_not(None))
        .order_by(RagChunkRow.id)
    )
    ids: list[int] = []
    files: list[int] = []
    codes: dict[str, int] = {}
    blobs: list[bytes] = []
    for chunk_id, file_id, blob in result:
        ids.append(chunk_id)
        files.append(codes.setdefault(file_id, len(codes)))
        blobs.append(blob or b"")
    if not blobs:
        empty = np.zeros((0, 0), dtype=np.float32)
        return _Matrix(generation, np.zeros(0, np.int64), np.zeros(0, np.int32), {}, empty)
    vectors = np.frombuffer(b"".join(blobs), dtype="<f4").reshape(len(blobs), -1).astype(np.float32)
    return _Matrix(generation, np.asarray(ids, np.int64), np.asarray(files, np.int32), codes, vectors)
