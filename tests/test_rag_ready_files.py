"""The ready files a process holds for filtered searches (server.domain.rag_ready_files), on SQLite and PostgreSQL:
what it answers always equals a fresh read of the database after each change that moves a file in or out of the
filter (a file made ready, its metadata replaced, the file deleted), also when the change was made by another
process (another `ReadyFiles`); held files are matched without reading them again; and what is held stays bounded."""

from __future__ import annotations

import json
import math
import re

import pytest
from sqlalchemy import insert

from server.domain import rag_files
from server.domain.rag_chunking import Chunk
from server.domain.rag_filters import MetadataCondition, parse_filters
from server.domain.rag_ready_files import ReadyFiles, held_bytes
from server.store.db import Database as Store
from server.store.models import RagFileRow
from server.store.rag_index import ChunkIndex, chunk_index_for
from tests.rag_helpers import statements_run, stored_rag

pytestmark = pytest.mark.parametrize("rag_database", ["sqlite", "postgresql"], indirect=True)

RECENT = parse_filters([{"key": "year", "op": "gte", "value": 2003}])  # nothing the database can narrow
TOPIC = parse_filters({"topic": "b"})  # the database narrows it by the metadata's text
_READS_FILES = re.compile(r"\bFROM rag_files\b", re.IGNORECASE)


async def _file(store: Store, index: ChunkIndex, rag_id: str, n: int, *, ready: bool = True) -> str:
    """A file with year 2000 + n and topic a or b, made ready as an upload is (its chunk stored, then marked)."""
    file_id = f"{rag_id}-f{n}"
    row = {
        "id": file_id,
        "rag_id": rag_id,
        "filename": f"doc{n}.txt",
        "status": rag_files.PROCESSING,
        "metadata_": {"year": 2000 + n, "topic": "ab"[n % 2]},
        "chunk_count": 1,
    }
    async with store.transaction() as session:
        await session.execute(insert(RagFileRow), [row])
    if ready:
        async with store.transaction() as session:
            chunk = [Chunk(text=f"document {n}", token_count=2)]
            done = await rag_files.complete(
                session, index, rag_id=rag_id, file_id=file_id, chunks=chunk, vectors=[[1.0, float(n)]]
            )
            assert done is not None
    return file_id


async def _rag(store: Store, files: int) -> tuple[ChunkIndex, str, list[str]]:
    index = await chunk_index_for(store.engine)
    rag_id = await stored_rag(store)
    return index, rag_id, [await _file(store, index, rag_id, n) for n in range(files)]


async def _matching(store: Store, held: ReadyFiles, rag_id: str, conditions: list[MetadataCondition]) -> list[str]:
    """What `held` answers, checked against a fresh read of the database in the same session."""
    async with store.read() as session:
        found = await held.matching(session, rag_id, conditions)
        truth = await rag_files.matching_file_ids(session, rag_id=rag_id, conditions=conditions, status="ready")
    assert sorted(found) == sorted(truth)
    return sorted(found)


def _ne(value: object) -> dict[str, object]:
    return {"key": "year", "op": "ne", "value": value}


def _estimated_bytes() -> int:
    """What holding one of these files is reckoned to take (their metadata's JSON text is of one length)."""
    return held_bytes(json.dumps({"year": 2000, "topic": "a"}))  # as both databases write it


async def test_what_is_held_follows_every_change_of_the_files(store: Store) -> None:
    index, rag_id, files = await _rag(store, 6)  # years 2000-2005
    searcher, writer = ReadyFiles(worth_holding=1), ReadyFiles(worth_holding=1)  # two replicas
    assert await _matching(store, searcher, rag_id, RECENT) == files[3:]
    assert await _matching(store, writer, rag_id, RECENT) == files[3:]

    async with store.transaction() as session:  # 2001 -> 2009: now in the filter
        await rag_files.update_metadata(session, rag_id=rag_id, file_id=files[1], metadata={"year": 2009})
    assert await _matching(store, searcher, rag_id, RECENT) == sorted([files[1], *files[3:]])

    added = await _file(store, index, rag_id, 7)
    processing = await _file(store, index, rag_id, 8, ready=False)
    assert processing not in await _matching(store, searcher, rag_id, RECENT)
    assert added in await _matching(store, searcher, rag_id, RECENT)

    async with store.transaction() as session:
        await rag_files.delete_file(session, index, rag_id=rag_id, file_id=files[4])
    assert await _matching(store, searcher, rag_id, RECENT) == sorted([files[1], files[3], files[5], added])
    # The other replica held the first answer all along; the generation tells it each change happened.
    assert await _matching(store, writer, rag_id, RECENT) == sorted([files[1], files[3], files[5], added])
    assert await _matching(store, writer, rag_id, TOPIC) == sorted([files[3], files[5], added])  # f1 lost its topic


async def test_held_files_are_matched_without_reading_them(store: Store) -> None:
    _, rag_id, files = await _rag(store, 4)
    held = ReadyFiles(worth_holding=1)
    async with store.read() as session:
        with statements_run(store) as seen:
            assert await held.matching(session, rag_id, RECENT) == [files[3]]
        assert any(_READS_FILES.search(s) for s, _ in seen)
        with statements_run(store) as seen:
            answer = await held.matching(session, rag_id, RECENT)
            assert answer == [files[3]]
            answer.clear()  # the caller's own list: the next answer is whole
            assert await held.matching(session, rag_id, RECENT) == [files[3]]
            # Answers are kept by filter, a boolean apart from a number.
            assert len(await held.matching(session, rag_id, parse_filters([_ne(True)]))) == 4
            # ... and infinity apart from not-a-number (JSON would write both as null).
            assert len(await held.matching(session, rag_id, [MetadataCondition("year", "lte", math.inf)])) == 4
            assert len(await held.matching(session, rag_id, [MetadataCondition("year", "lte", math.nan)])) == 0
            assert len(await held.matching(session, rag_id, parse_filters([_ne(2001)]))) == 3
            assert len(await held.matching(session, rag_id, parse_filters([_ne(True)]))) == 4
        assert seen and not any(_READS_FILES.search(s) for s, _ in seen)  # the generation's reads alone
        # A filter the database narrows by its strings is read from it, narrowed, held files or not.
        with statements_run(store) as seen:
            assert sorted(await held.matching(session, rag_id, TOPIC)) == [files[1], files[3]]
        assert [s for s, _ in seen if _READS_FILES.search(s) and "LIKE" in s.upper()]


async def test_what_is_held_stays_bounded(store: Store) -> None:
    _, small, _ = await _rag(store, 2)
    _, first, _ = await _rag(store, 3)
    _, second, _ = await _rag(store, 3)
    held = ReadyFiles(max_bytes=5 * _estimated_bytes(), worth_holding=3)  # room for 5 files

    async def reads_files(rag_id: str) -> bool:
        async with store.read() as session:
            with statements_run(store) as seen:
                await held.matching(session, rag_id, RECENT)
        return any(_READS_FILES.search(s) for s, _ in seen)

    assert [await reads_files(small), await reads_files(small)] == [True, True]  # too few files to hold
    assert [await reads_files(first), await reads_files(first)] == [True, False]
    # Holding the second RAG too would pass the room: the least recently searched goes.
    assert [await reads_files(second), await reads_files(second), await reads_files(first)] == [True, False, True]
