"""A list of file ids sent to PostgreSQL as one text[] literal (server/store/rag_index/pg_restriction.py) reads back
as the same list, whatever the strings hold."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from server.store.db import Database as Store
from server.store.rag_index.pg_restriction import text_array
from tests.conftest import Database

AWKWARD = [
    "rf_0123abcd",
    "",
    "NULL",
    "null",
    " spaced out ",
    'a "quoted" id',
    "back\\slash\\",
    "\\",
    '"',
    "comma,separated",
    "{braces}",
    "line\nbreak\ttab\rreturn\x01\x1f",
    "ünïcödé ✓ 日本",
    "emoji 🙂",
    "'single'",
]


@pytest.mark.parametrize("rag_database", ["postgresql"], indirect=True)
@pytest.mark.parametrize("values", [[], [""], ["rf_1"], AWKWARD, [f"rf_{n:07d}" for n in range(70_000)]])
async def test_a_text_array_literal_reads_back_as_the_list(rag_database: Database, values: list[str]) -> None:
    store = Store(rag_database.url)
    try:
        async with store.read() as session:
            read = await session.scalar(text("SELECT CAST(:values AS text[])"), {"values": text_array(values)})
    finally:
        await store.close()
    assert read == values


def test_a_string_holding_nul_is_left_out_rather_than_split() -> None:
    # PostgreSQL text cannot hold NUL: such a string names no row, and must never become two that might.
    assert text_array(["rf_a\x00rf_b", "rf_c"]) == text_array(["rf_c"]) == '{"rf_c"}'
