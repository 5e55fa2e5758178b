"""Dense search in process: one float32 matrix per RAG, cached, reloaded when the RAG's generation moves.

A replica that did not write a change still sees it on its next query (one primary-key read of the generation); what is
lost on restart is only the cache. A change is read as a change, not by reading the RAG again: after a removal (the
generation says so: `base.bump_generation`) the rows of the files held that no longer have chunks are marked dead, and
searches skip them (chunks go with their file; SQLite gives the highest ids of removed rows to the next rows inserted,
so ids alone cannot tell which rows went); once the dead pass a quarter of the rows, the rows left are copied to new
buffers instead. Every chunk stored since has an id above the highest live row's (`Matrix.top`: a dead row's id may be
given again), so only those are read, into spare room at the end of the matrix's buffers. An upload to a 100k-chunk RAG
thus costs the next query its new chunks, not a reload of every vector. The generation, read again after the rows, must
not have moved (each statement reads at its own moment, and a reused id could otherwise keep an old vector). On
PostgreSQL, whose sequences hand ids out before commit, the RAG's chunk count read after the new rows reveals an id
committed late below them, and then the RAG is read whole; so it is when the matrix holds more than one file for every
two rows after a removal (asking about each would cost about what the whole read does: bench/rag_refresh.py), and when
the rows added since the sign bits' mean was taken reach half the RAG (their bits are taken against it; a whole read
takes it again).

Memory: 1.5 KiB per 384-d chunk plus 48 bytes of sign bits (the room to append to is a quarter more, in memory only
once used); the least recently used matrices are dropped once a process holds more than `CACHE_BYTES` of them (the one
just used stays, whatever its size: a query needs it), and never more than `_MAX_RAGS`.

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
import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
from sqlalchemy import Executable, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from server.store.models import RagChunkRow
from server.store.rag_index.base import REMOVALS, Candidate, Vector, current_generation, normalized

__all__ = [
    "CACHE_BYTES",
    "CHUNK_BLOBS",
    "EXACT_ROWS",
    "Matrix",
    "NumpyDense",
    "VectorSource",
    "build_matrix",
]

_MAX_RAGS = 64
CACHE_BYTES = 1 << 30  # per process: a gateway worker holds at most this much of RAG matrices beside the one in use
EXACT_ROWS = 20_000
RESCORE_MIN = 2_000
RESCORE_PER_RESULT = 50
_BLOCK = 16_384  # rows binarised at a time, bounding the temporary float matrix


@dataclass(frozen=True)
class Matrix:
    generation: int
    ids: npt.NDArray[np.int64]  # ascending, dead rows aside (SQLite may give a dead row's id to a row appended later)
    files: npt.NDArray[np.int32]  # index into file_codes' keys, which hold live files only
    file_codes: dict[str, int]
    vectors: Vector  # rows L2-normalised
    center: Vector
    bits: npt.NDArray[
        np.uint64
    ]  # signs of (row - center), packed: one row of words per 64 dimensions, a column a chunk
    drift: int = 0  # rows added since `center` was computed
    room: _Room | None = field(default=None, repr=False)  # the buffers the arrays above view, when appended to
    # Positions (ascending) of rows whose file was removed: skipped by searches, their files gone from `file_codes`.
    dead: npt.NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, np.intp), repr=False)
    codes: int = 0  # file codes given so far, dead files' too: a new file's code must never reach a dead row

    @property
    def nbytes(self) -> int:
        """What its rows hold (a room's spare rows take memory only once written)."""
        return self.ids.nbytes + self.files.nbytes + self.vectors.nbytes + self.center.nbytes + self.bits.nbytes

    @property
    def chunk_count(self) -> int:
        """The chunks it holds: its rows less the dead ones."""
        return len(self.ids) - len(self.dead)

    @property
    def top(self) -> int:
        """The highest id of a live row (-1 if none): every chunk stored since has a higher one."""
        rows, dead = len(self.ids), len(self.dead)
        # The dead rows at the end: as positions ascend without repeats, position - rank reaches rows - dead there.
        trailing = int(np.count_nonzero(self.dead - np.arange(dead) == rows - dead))
        return int(self.ids[rows - 1 - trailing]) if trailing < rows else -1

    def appended(self, added: Matrix, generation: int) -> Matrix:
        """This matrix and `added`'s rows after it (ids above its live rows'; signs taken against its center). The
        rows go to spare room at the end of shared buffers, which views of fewer rows never see, so searches of this
        matrix in flight are undisturbed and an upload does not copy the RAG's every vector."""
        if not len(added.ids):
            return dataclasses.replace(self, generation=generation)
        rows, total = len(self.ids), len(self.ids) + len(added.ids)
        room = self.room
        if room is None or room.used != rows or len(room.ids) < total:
            room = _Room.around(self, total)
        codes = dict(self.file_codes)
        after = self.codes
        for file_id in added.file_codes:  # in code order: dicts keep insertion order
            if file_id not in codes:
                codes[file_id], after = after, after + 1
        recode = np.asarray([codes[f] for f in added.file_codes], dtype=np.int32)
        room.write(rows, added.ids, recode[added.files], added.vectors, added.bits)
        return room.matrix(
            generation, codes, self.center, self.drift + len(added.ids), dead=self.dead, codes_given=after
        )

    def without_removed(self, left: set[str]) -> Matrix:
        """Without the rows of the files not in `left`. They are marked dead, not copied out, unless the dead would
        pass a quarter of the rows; then the rows left are copied out."""
        gone = [code for file_id, code in self.file_codes.items() if file_id not in left]
        dead = np.union1d(self.dead, np.flatnonzero(np.isin(self.files, gone))).astype(np.intp)
        if 4 * len(dead) > len(self.ids):
            return self.only_files(left)
        codes = {file_id: code for file_id, code in self.file_codes.items() if file_id in left}
        return dataclasses.replace(self, file_codes=codes, dead=dead)

    def only_files(self, file_ids: set[str]) -> Matrix:
        """The rows of those files (dead rows never among them), in buffers of their own (with room to append)."""
        names = [f for f in self.file_codes if f in file_ids]  # in code order
        keep = np.isin(self.files, [self.file_codes[f] for f in names])
        recode = np.zeros(self.codes, np.int32)  # dead files' codes too: live ones may be past them
        recode[[self.file_codes[f] for f in names]] = np.arange(len(names), dtype=np.int32)
        rows = int(keep.sum())
        room = _Room.sized(rows, self.vectors.shape[1])
        np.compress(keep, self.vectors, axis=0, out=room.vectors[:rows])  # the big copy, without a temporary
        room.ids[:rows], room.files[:rows], room.bits[:, :rows] = (
            self.ids[keep],
            recode[self.files[keep]],
            self.bits[:, keep],
        )
        room.used = rows
        codes = {f: i for i, f in enumerate(names)}
        return room.matrix(self.generation, codes, self.center, self.drift, codes_given=len(names))

    def file_mask(self, file_ids: Sequence[str] | None) -> npt.NDArray[np.bool_] | None:
        """Which of its file codes `file_ids` names, or None when that is every file it holds (or `file_ids` is None):
        a metadata filter that every file meets restricts nothing, and a search need not check tens of thousands of
        ids against every row."""
        if file_ids is None:
            return None
        unknown = self.codes  # one slot past the codes, for the ids of files it does not hold
        named = np.zeros(unknown + 1, dtype=bool)
        named[np.fromiter(map(self.file_codes.get, file_ids, repeat(unknown)), np.intp, len(file_ids))] = True
        named = named[:unknown]
        return None if np.count_nonzero(named) == len(self.file_codes) else named

    def search(self, vector: Vector, limit: int, file_ids: Sequence[str] | None) -> list[Candidate]:
        return self.search_named(vector, limit, self.file_mask(file_ids))

    def search_named(self, vector: Vector, limit: int, named: npt.NDArray[np.bool_] | None) -> list[Candidate]:
        """`search` within the file codes `named` (a `file_mask`), for a caller that needs the mask itself too."""
        if not len(self.ids) or limit <= 0 or self.vectors.shape[1] != vector.shape[0]:
            return []  # a differing pinned dimension is reported by the RAG-level checks before we get here
        query = normalized(vector)
        rows = None if named is None else np.flatnonzero(named[self.files])  # dead rows' files are never named
        count = self.chunk_count if rows is None else len(rows)  # a file filter's rows are never dead
        if count <= EXACT_ROWS:
            candidates = np.arange(len(self.ids)) if rows is None else rows
        else:
            nearest = self._nearest_signs(query, rows, min(count, max(RESCORE_MIN, RESCORE_PER_RESULT * limit)))
            candidates = nearest if rows is None else rows[nearest]
        scored = self.vectors if rows is None and count <= EXACT_ROWS else self.vectors[candidates]
        # einsum, not `@`: a matrix-vector product goes to OpenBLAS, whose threads spin-wait for a core on a busy
        # machine (2k x 384 took 14 ms there instead of 0.04 ms); einsum's own single-threaded loop never waits.
        scores = np.einsum("ij,j->i", scored, query)
        masked = rows is None and len(self.dead) > 0
        if masked:
            scores[self.dead if count <= EXACT_ROWS else np.isin(candidates, self.dead)] = -np.inf
        top = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        if masked:
            top = top[np.isfinite(scores[top])]
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
        if rows is None and len(self.dead):
            distances[self.dead] = np.iinfo(np.uint16).max  # past any real distance (at most the dimensions)
        below = np.cumsum(np.bincount(distances))
        cut = int(np.searchsorted(below, keep))  # the smallest distance with at least `keep` rows at or under it
        nearest: npt.NDArray[np.intp] = np.flatnonzero(distances <= cut)
        return nearest


@dataclass
class _Room:
    """Buffers with spare rows at their end, shared by a matrix and those appended to it; `used` rows are written."""

    ids: npt.NDArray[np.int64]
    files: npt.NDArray[np.int32]
    vectors: Vector
    bits: npt.NDArray[np.uint64]
    used: int = 0

    @classmethod
    def sized(cls, rows: int, dimensions: int) -> _Room:
        """Room for `rows` rows and a quarter more; the spare rows' memory is only touched once they are written."""
        capacity = rows + rows // 4
        return cls(
            np.empty(capacity, np.int64),
            np.empty(capacity, np.int32),
            np.empty((capacity, dimensions), np.float32),
            np.empty((-(-dimensions // 64), capacity), np.uint64),
        )

    @classmethod
    def around(cls, matrix: Matrix, rows: int) -> _Room:
        """Room for `rows` rows and a quarter more, holding `matrix`'s."""
        room = cls.sized(rows, matrix.vectors.shape[1])
        room.write(0, matrix.ids, matrix.files, matrix.vectors, matrix.bits)
        return room

    def matrix(
        self,
        generation: int,
        codes: dict[str, int],
        center: Vector,
        drift: int,
        *,
        dead: npt.NDArray[np.intp] | None = None,
        codes_given: int,
    ) -> Matrix:
        """The matrix of the rows written so far (`dead`: positions among them whose files were removed)."""
        rows = self.used
        return Matrix(
            generation,
            self.ids[:rows],
            self.files[:rows],
            codes,
            self.vectors[:rows],
            center,
            self.bits[:, :rows],
            drift,
            self,
            np.zeros(0, np.intp) if dead is None else dead,
            codes_given,
        )

    def write(
        self,
        at: int,
        ids: npt.NDArray[np.int64],
        files: npt.NDArray[np.int32],
        vectors: Vector,
        bits: npt.NDArray[np.uint64],
    ) -> None:
        end = at + len(ids)
        self.ids[at:end], self.files[at:end], self.vectors[at:end], self.bits[:, at:end] = ids, files, vectors, bits
        self.used = end


def _signs(vectors: Vector, center: Vector) -> npt.NDArray[np.uint64]:
    packed = np.packbits(vectors > center, axis=1)
    pad = (-packed.shape[1]) % 8  # whole uint64 words; the padding is zero on both sides of the XOR
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    words: npt.NDArray[np.uint64] = np.ascontiguousarray(packed).view(np.uint64)
    return words


_JSON_FILES_LEFT = text(
    "SELECT value FROM json_each(:ids) WHERE EXISTS (SELECT 1 FROM rag_chunks WHERE file_id = value)"
)


def _json_files_left(file_ids: list[str]) -> Executable:
    return _JSON_FILES_LEFT.bindparams(ids=orjson.dumps(file_ids).decode())


@dataclass(frozen=True)
class VectorSource:
    """Where an engine keeps a RAG's vectors: `rows(rag_id, above)` selects its (chunk id, file id, vector bytes) rows
    with ids above `above`, ascending, each vector `header` bytes followed by `dtype` numbers; `count(rag_id)`, its
    number of chunks, where ids can commit out of order (PostgreSQL's sequences hand them out before commit; SQLite
    writes one transaction at a time, so its ids commit in order and it has none); `files_left(file_ids)` selects
    those of the files that still have chunks, with one probe of rag_chunks' file_id index a file (a DISTINCT over
    their chunks read every chunk's index entry: PostgreSQL 113 -> 43 ms for 100 files of 1,000 chunks), the ids
    given as one parameter (SQLite's JSON by default; as a list of bound parameters PostgreSQL took 4x as long)."""

    rows: Callable[[str, int], Executable]
    dtype: str
    header: int = 0
    count: Callable[[str], Executable] | None = None
    files_left: Callable[[list[str]], Executable] = _json_files_left


class NumpyDense:
    """The matrices of the RAGs a process searches, read from `source` and kept while their generation is current."""

    def __init__(self, source: VectorSource | None = None) -> None:
        self._source = source or CHUNK_BLOBS
        self._cache: OrderedDict[str, Matrix] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}

    def fresh(self) -> NumpyDense:
        """An empty cache reading the same source."""
        return NumpyDense(self._source)

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
            stale = self._cache.get(rag_id)
            matrix = None if stale is None else await self._refreshed(session, rag_id, generation, stale)
            if matrix is None:
                matrix = await self._read(session, rag_id, generation, above=-1)
            self.keep(rag_id, matrix)
            return matrix

    async def updated(self, session: AsyncSession, rag_id: str, generation: int) -> Matrix | None:
        """The RAG's matrix at `generation` if it is cached, or a cached one needs only the chunks added since (read
        now, a few rows); None where that would take a whole read, or one is under way."""
        cached = self.cached(rag_id, generation)
        stale = self._cache.get(rag_id)
        lock = self._loading.setdefault(rag_id, asyncio.Lock())
        if cached is not None or stale is None or lock.locked():
            return cached
        async with lock:
            matrix = await self._refreshed(session, rag_id, generation, stale)
            if matrix is not None:
                self.keep(rag_id, matrix)
            return matrix

    async def _refreshed(self, session: AsyncSession, rag_id: str, generation: int, stale: Matrix) -> Matrix | None:
        """`stale` with the rows added since, read alone; None where only a whole read will do (module docstring)."""
        if not len(stale.ids):
            return None
        removed = generation // REMOVALS != stale.generation // REMOVALS
        kept = await self._without_removed_files(session, stale) if removed else stale
        if kept is None:
            return None
        added = await self._read(session, rag_id, generation, above=kept.top, center=stale.center)
        total = kept.chunk_count + len(added.ids)
        if len(added.ids) and added.vectors.shape[1] != stale.vectors.shape[1]:
            return None
        if 2 * (stale.drift + len(added.ids)) > total:
            return None  # time to take the mean again
        # Counted after the rows were read, the RAG's chunks are those held and those read, unless one committed late
        # below the top (or since the read, which costs a whole read too).
        if self._source.count is not None and await session.scalar(self._source.count(rag_id)) != total:
            return None
        # Each statement reads at its own moment, and an id read as held may have gone to another chunk since the
        # generation was read (SQLite reuses the highest ids): only a generation unchanged after the reads says the
        # rows held are still theirs.
        if await current_generation(session, rag_id) != generation:
            return None
        return kept.appended(added, generation)

    async def _read(
        self, session: AsyncSession, rag_id: str, generation: int, *, above: int, center: Vector | None = None
    ) -> Matrix:
        """The RAG's rows with ids above `above` as a matrix, its sign bits against `center` (by default their mean)."""
        rows = await session.execute(self._source.rows(rag_id, above))
        return build_matrix(generation, rows, dtype=self._source.dtype, header=self._source.header, center=center)

    async def _without_removed_files(self, session: AsyncSession, stale: Matrix) -> Matrix | None:
        """`stale` without the files whose chunks were removed (chunks go with their file: `remove_file`;
        `Matrix.without_removed`); None where it holds too many files for asking to pay (over one for every two
        chunks), or none is left."""
        held = list(stale.file_codes)
        if 2 * len(held) > stale.chunk_count:
            return None  # a probe a file: ~1.5 µs on SQLite, ~6 µs on PostgreSQL; a row read whole ~5 and ~16 µs
        left = set(await session.scalars(self._source.files_left(held)))
        if not left:
            return None
        return stale.without_removed(left)

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


# Where the vectors are the chunk rows' own `embedding` (SQLite; PostgreSQL without pgvector): little-endian float32.
CHUNK_BLOBS = VectorSource(
    rows=lambda rag_id, above: (
        select(RagChunkRow.id, RagChunkRow.file_id, RagChunkRow.embedding)
        .where(RagChunkRow.rag_id == rag_id, RagChunkRow.id > above, RagChunkRow.embedding.is_not(None))
        .order_by(RagChunkRow.id)
    ),
    dtype="<f4",
)


def build_matrix(
    generation: int, rows: Iterable[Any], *, dtype: str, header: int = 0, center: Vector | None = None
) -> Matrix:
    """A matrix from (chunk id, file id, vector bytes) rows in chunk id order; each vector's first `header` bytes
    are skipped and the rest read as `dtype`. Sign bits are taken against `center`, by default the rows' mean."""
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
    read = np.frombuffer(b"".join(blobs), dtype=dtype).reshape(len(blobs), -1)
    room = _Room.sized(len(read), read.shape[1])  # room to append to without a copy of every vector
    vectors = room.vectors[: len(read)]
    vectors[:] = read
    if center is None or center.shape != vectors.shape[1:]:
        center = vectors.mean(axis=0, dtype=np.float64).astype(np.float32)
    bits = np.concatenate([_signs(vectors[i : i + _BLOCK], center) for i in range(0, len(vectors), _BLOCK)])
    room.ids[: len(read)], room.files[: len(read)], room.bits[:, : len(read)] = ids, files, bits.T
    room.used = len(read)
    return room.matrix(generation, codes, center, 0, codes_given=len(codes))


def _no_bits() -> npt.NDArray[np.uint64]:
    return np.zeros((0, 0), dtype=np.uint64)
