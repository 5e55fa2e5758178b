"""Listing a RAG's files (server.domain.rag_files.list_files) page by page from its (rag_id, created_at, id) index,
and the file filter of a search (matching_file_ids), on SQLite and PostgreSQL: walking every page gives each file
that matches exactly once, oldest first (ties by id), whatever the page size, the filters, the status and how many
rows a filtered page reads at a time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
import pytest_asyncio
from sqlalchemy import insert, text

from server.domain import rag_files
from server.domain.rag_filters import MetadataCondition, matches, parse_filters
from server.errors import InvalidArgument
from server.store.db import Database as Store
from server.store.models import RagFileRow
from tests.conftest import Database
from tests.rag_helpers import stored_rag

pytestmark = pytest.mark.parametrize("rag_database", ["sqlite", "postgresql"], indirect=True)

FILES = 240
START = datetime(2026, 1, 1, tzinfo=UTC)


def _row(rag_id: str, n: int) -> dict[str, Any]:
    # Every third file shares its creation time with the one before: the id breaks the tie.
    at = START + timedelta(seconds=n - (n % 3 == 2))
    return {
        "id": f"{rag_id}-{(n * 7919) % 10007:05d}",  # ids out of creation order
        "rag_id": rag_id,
        "filename": f"doc{n}.txt",
        "status": "failed" if n % 10 == 9 else "ready",
        "metadata_": {"topic": f"t{n % 7}", "n": n, "groups": [f"g{n % 4}", "all"]},
        "chunk_count": 1,
        "created_at": at,
        "updated_at": at,
    }


@pytest_asyncio.fixture
async def rag(rag_database: Database) -> AsyncIterator[tuple[Store, str, list[dict[str, Any]]]]:
    store = Store(rag_database.url)
    try:
        rag_id, other = await stored_rag(store), await stored_rag(store)
        rows = [_row(rag_id, n) for n in range(FILES)]
        async with store.transaction() as session:
            await session.execute(insert(RagFileRow), rows)
            await session.execute(insert(RagFileRow), [_row(other, n) for n in range(9)])
        yield store, rag_id, rows
    finally:
        await store.close()


def _expected(rows: list[dict[str, Any]], conditions: list[MetadataCondition], status: str | None) -> list[str]:
    kept = [r for r in rows if (status is None or r["status"] == status) and matches(r["metadata_"], conditions)]
    return [r["id"] for r in sorted(kept, key=lambda r: (r["created_at"], r["id"]))]


async def _walk(store: Store, rag_id: str, limit: int, **kwargs: Any) -> tuple[list[str], set[int | None]]:
    """Every page's file ids in order, and the totals the pages reported."""
    seen: list[str] = []
    totals: set[int | None] = set()
    after = None
    for _ in range(FILES + 1):
        async with store.read() as session:
            page = await rag_files.list_files(session, rag_id=rag_id, limit=limit, after=after, **kwargs)
        assert len(page.files) <= limit and (page.next_cursor is None or len(page.files) == limit)
        seen += [f.id for f in page.files]
        totals.add(page.total)
        if page.next_cursor is None:
            return seen, totals
        after = page.next_cursor
    raise AssertionError("the pages never ended")


CASES = [
    ({}, None),
    ({}, "ready"),
    ({"topic": "t3"}, None),
    ({"groups": ["g1", "g2"]}, "ready"),
    ([{"key": "n", "op": "gte", "value": 200}], None),
    ({"topic": "none of them"}, None),
]


@pytest.mark.parametrize(("filters", "status"), CASES)
@pytest.mark.parametrize("scan", [3, rag_files._SCAN])
async def test_walking_the_pages_lists_each_matching_file_once_in_order(
    rag: tuple[Store, str, list[dict[str, Any]]],
    filters: Any,
    status: str | None,
    scan: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store, rag_id, rows = rag
    monkeypatch.setattr(rag_files, "_SCAN", scan)  # 3: a filtered page reads many batches
    conditions = parse_filters(filters)
    expected = _expected(rows, conditions, status)
    for limit in (1, 7, 100):
        seen, totals = await _walk(store, rag_id, limit, conditions=conditions, status=status, include_total=limit == 7)
        assert seen == expected
        assert totals == ({len(expected)} if limit == 7 else {None})


async def test_a_searchs_file_filter_is_the_matching_files_of_that_status(
    rag: tuple[Store, str, list[dict[str, Any]]],
) -> None:
    store, rag_id, rows = rag
    for filters, status in CASES:
        conditions = parse_filters(filters)
        async with store.read() as session:
            found = await rag_files.matching_file_ids(session, rag_id=rag_id, conditions=conditions, status=status)
        assert sorted(found) == sorted(_expected(rows, conditions, status))


async def test_a_cursor_that_is_not_one_is_refused_naming_after(rag: tuple[Store, str, list[dict[str, Any]]]) -> None:
    store, rag_id, _ = rag
    async with store.read() as session:
        with pytest.raises(InvalidArgument) as refused:
            await rag_files.list_files(session, rag_id=rag_id, conditions=[], after="not-a-cursor")
    assert refused.value.field == "after"


# Strings a store's text search could get wrong: case, JSON escapes, LIKE's wildcards and escape, non-ASCII.
TRICKY = [
    "t7",
    "T7",
    "é",
    "😀 ok",
    'say "hi"',
    "back\\slash",
    "100%",
    "a_b",
    "a/b",
    ".*[x]",
    "line\nbreak",
    "日本",
    "Ünïcode",
]


async def test_a_searchs_file_filter_finds_strings_however_the_metadata_was_written(rag_database: Database) -> None:
    store = Store(rag_database.url)
    try:
        rag_id = await stored_rag(store)
        kinds = [lambda v: {"v": v}, lambda v: {"v": ["x", v]}, lambda v: {v: "a key, not a value"}]
        metadata = [kind(v) for kind in kinds for v in TRICKY] + [{"v": f"x{v}y"} for v in TRICKY]
        rows = [_row(rag_id, n) | {"metadata_": m} for n, m in enumerate(metadata)]
        async with store.transaction() as session:
            await session.execute(insert(RagFileRow), rows)
            # Every other row as orjson writes JSON (non-ASCII as is), as a jsonb column or another writer would.
            cast = "CAST(:m AS json)" if rag_database.backend != "sqlite" else ":m"
            for row in rows[::2]:
                await session.execute(
                    text(f"UPDATE rag_files SET metadata = {cast} WHERE id = :id"),  # noqa: S608 - fixed fragments
                    {"m": orjson.dumps(row["metadata_"]).decode(), "id": row["id"]},
                )
        for value in TRICKY:
            for filters in ({"v": value}, {"v": [value, "none of them"]}):
                conditions = parse_filters(filters)
                async with store.read() as session:
                    found = await rag_files.matching_file_ids(session, rag_id=rag_id, conditions=conditions)
                expected = [r["id"] for r in rows if matches(r["metadata_"], conditions)]
                assert len(expected) == 2 and sorted(found) == sorted(expected), value
    finally:
        await store.close()
