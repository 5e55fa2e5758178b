"""Dense search in process: one float32 matrix per RAG, cached, reloaded when the RAG's generation moves.

A replica that did not write a change still sees it on its next query (one primary-key read of the generation);
what is lost on restart is only the cache. Memory: 1.5 KiB per 384-d chunk plus 48 bytes of sign bits; the least
recently used matrices are dropped once a process holds more than `CACHE_BYTES` of them (the one just used stays,
whatever its size: a query needs it), and never more than `_MAX_RAGS`.

Up to `EXACT_ROWS` rows every query is scored exactly. Above that a full float32 pass is bound by memory
bandwidth (100k rows of 384 floats are 150 MB read per query: ~12 ms here), so a binary prefilter picks the
candidates instead: each row is kept as the signs of its offset from the RAG's mean vector (e5 vectors share a large
common component that would otherwise make every sign alike), the query is compared by Hamming distance (48 bytes a
row: ~2 ms at 100k), and the best `max(RESCORE_MIN, RESCORE_PER_RESULT * limit)` candidates are rescored exactly in
float32, so scores and order are exact and only a true top hit the prefilter missed can be lost (bench/rag.py
measures that recall).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.models import RagChunkRow, RagIndexGenerationRow
from server.store.rag_index.base import Candidate, Vector, normalized

__all__ = ["CACHE_BYTES", "EXACT_ROWS", "Loader", "Matrix", "NumpyDense", "build_matrix", "current_generation"]

_MAX_RAGS = 64
CACHE_BYTES = 1 << 30  # per process: a gateway worker holds at most this much of RAG matrices beside the one in use
EXACT_ROWS = 20_000
RESCORE_MIN = 2_000
RESCORE_PER_RESULT = 50
_BLOCK = 16_384  # rows binarised at a time, bounding the temporary float matrix


@dataclass(frozen=True)
class Matrix:
    generation: int
    ids: npt.NDArray[np.int64]  # ascending
    files: npt.NDArray[np.int32]  # index into file_codes' keys
    file_codes: dict[str, int]
    vectors: Vector  # rows L2-normalised
    center: Vector
    bits: npt.NDArray[
        np.uint64
    ]  # signs of (row - center), packed: one row of words per 64 dimensions, a column a chunk

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.files.nbytes + self.vectors.nbytes + self.center.nbytes + self.bits.nbytes

    def contains(self, chunk_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        where = np.searchsorted(self.ids, chunk_ids)
        where[where >= len(self.ids)] = 0
        found: npt.NDArray[np.bool_] = self.ids[where] == chunk_ids if len(self.ids) else np.zeros(0, bool)
        return found

    def search(self, vector: Vector, limit: int, file_ids: Sequence[str] | None) -> list[Candidate]:
        if not len(self.ids) or limit <= 0 or self.vectors.shape[1] != vector.shape[0]:
            return []  # a differing pinned dimension is reported by the RAG-level checks before we get here
        query = normalized(vector)
        rows: npt.NDArray[np.intp] | None = None
        if file_ids is not None:
            codes = [self.file_codes[f] for f in file_ids if f in self.file_codes]
            rows = np.flatnonzero(np.isin(self.files, np.asarray(codes, dtype=np.int32)))
        count = len(self.ids) if rows is None else len(rows)
        if count <= EXACT_ROWS:
            candidates = np.arange(len(self.ids)) if rows is None else rows
        else:
            nearest = self._nearest_signs(query, rows, min(count, max(RESCORE_MIN, RESCORE_PER_RESULT * limit)))
            candidates = nearest if rows is None else rows[nearest]
        scored = self.vectors if rows is None and count <= EXACT_ROWS else self.vectors[candidates]
        # einsum, not `@`: a matrix-vector product goes to OpenBLAS, whose threads spin-wait for a core on a busy
        # machine (2k x 384 took 14 ms there instead of 0.04 ms); einsum's own single-threaded loop never waits.
        scores = np.einsum("ij,j->i", scored, query)
        top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return [Candidate(chunk_id=int(self.ids[candidates[i]]), score=float(scores[i])) for i in top]

    def _nearest_signs(self, query: Vector, rows: npt.NDArray[np.intp] | None, keep: int) -> npt.NDArray[np.intp]:
        """At least `keep` rows (of `rows`, as positions in it) whose signs differ least from the query's. Words are
        stored word-major so each pass is one contiguous XOR and popcount; the cut is found by a histogram of the
        small integer distances rather than a partition of all of them."""
        distances: npt.NDArray[np.uint16] | None = None
        for word, query_word in zip(self.bits, _signs(query[None, :], self.center)[0], strict=True):
            column = word if rows is None else word[rows]
            differing = np.bitwise_count(column ^ query_word)
            distances = (
                differing.astype(np.uint16) if distances is None else np.add(distances, differing, out=distances)
            )
        assert distances is not None  # a vector has at least one word of signs
        below = np.cumsum(np.bincount(distances))
        cut = int(np.searchsorted(below, keep))  # the smallest distance with at least `keep` rows at or under it
        nearest: npt.NDArray[np.intp] = np.flatnonzero(distances <= cut)
        return nearest


def _signs(vectors: Vector, center: Vector) -> npt.NDArray[np.uint64]:
    packed = np.packbits(vectors > center, axis=1)
    pad = (-packed.shape[1]) % 8  # whole uint64 words; the padding is zero on both sides of the XOR
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    words: npt.NDArray[np.uint64] = np.ascontiguousarray(packed).view(np.uint64)
    return words


# Reads a RAG's rows and builds its matrix, labelled with the generation read before (a write committed meanwhile only
# makes the next query load again).
Loader = Callable[[AsyncSession, str, int], Awaitable[Matrix]]


class NumpyDense:
    """The matrices of the RAGs a process searches, each loaded by `load` (the engine's rows) and kept while its
    generation is current."""

    def __init__(self, load: Loader | None = None) -> None:
        self._load = load or _load_blobs
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}

    @staticmethod
    def encode(vector: Sequence[float]) -> bytes:
        return normalized(vector).astype("<f4").tobytes()

    async def search(
        self, session: AsyncSession, *, rag_id: str, vector: Vector, limit: int, file_ids: Sequence[str] | None
    ) -> list[Candidate]:
        return (await self.matrix(session, rag_id)).search(vector, limit, file_ids)

    async def matrix(self, session: AsyncSession, rag_id: str) -> Matrix:
        """The RAG's current matrix: one primary-key read when cached, else a load."""
        generation = await current_generation(session, rag_id)
        cached = self.cached(rag_id, generation)
        if cached is not None:
            return cached
        lock = self._loading.setdefault(rag_id, asyncio.Lock())
        async with lock:  # one load per RAG at a time; later callers reuse it
            cached = self.cached(rag_id, generation)
            if cached is not None:
                return cached
            matrix = await self._load(session, rag_id, generation)
            self.keep(rag_id, matrix)
            return matrix

    def cached(self, rag_id: str, generation: int) -> Matrix | None:
        """The RAG's matrix if one of that generation is in memory (now the most recently used)."""
        cached = self._cache.get(rag_id)
        if cached is None or cached.generation != generation:
            return None
        self._cache.move_to_end(rag_id)
        return cached

    def keep(self, rag_id: str, matrix: Matrix) -> None:
        """Caches `matrix` as the RAG's, dropping the least recently used beyond the budget."""
        self._cache[rag_id] = matrix
        self._cache.move_to_end(rag_id)
        held = sum(m.nbytes for m in self._cache.values())
        while len(self._cache) > 1 and (held > CACHE_BYTES or len(self._cache) > _MAX_RAGS):
            _, dropped = self._cache.popitem(last=False)
            held -= dropped.nbytes

    def forget(self, rag_id: str) -> None:
        self._cache.pop(rag_id, None)


async def current_generation(session: AsyncSession, rag_id: str) -> int:
    value = await session.scalar(select(RagIndexGenerationRow.generation).where(RagIndexGenerationRow.rag_id == rag_id))
    return int(value or 0)


async def _load_blobs(session: AsyncSession, rag_id: str, generation: int) -> Matrix:
    """From `rag_chunks.embedding` (little-endian float32), where the engine keeps vectors in the chunk rows."""
    result = await session.execute(
        select(RagChunkRow.id, RagChunkRow.file_id, RagChunkRow.embedding)
        .where(RagChunkRow.rag_id == rag_id, RagChunkRow.embedding.is_not(None))
        .order_by(RagChunkRow.id)
    )
    return build_matrix(generation, result, dtype="<f4")


def build_matrix(generation: int, rows: Iterable[Any], *, dtype: str, header: int = 0) -> Matrix:
    """A matrix from (chunk id, file id, vector bytes) rows in chunk id order; each vector's first `header` bytes
    are skipped and the rest read as `dtype`."""
    ids: list[int] = []
    files: list[int] = []
    codes: dict[str, int] = {}
    blobs: list[bytes] = []
    for chunk_id, file_id, blob in rows:
        ids.append(chunk_id)
        files.append(codes.setdefault(file_id, len(codes)))
        blobs.append(bytes(blob or b"")[header:])
    if not blobs:
        empty = np.zeros((0, 0), dtype=np.float32)
        return Matrix(
            generation, np.zeros(0, np.int64), np.zeros(0, np.int32), {}, empty, np.zeros(0, np.float32), _no_bits()
        )
    vectors = np.frombuffer(b"".join(blobs), dtype=dtype).reshape(len(blobs), -1).astype(np.float32)
    center = vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
    bits = np.concatenate([_signs(vectors[i : i + _BLOCK], center) for i in range(0, len(vectors), _BLOCK)])
    bits = np.ascontiguousarray(bits.T)
    return Matrix(generation, np.asarray(ids, np.int64), np.asarray(files, np.int32), codes, vectors, center, bits)


def _no_bits() -> npt.NDArray[np.uint64]:
    return np.zeros((0, 0), dtype=np.uint64)
