"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection

from server.store.db import Database as Store
from server.store.models import Base
from server.store.rag_index import RUNTIME_SCHEMA_COLUMNS, RUNTIME_SCHEMA_PREFIXES
from tests.conftest import Database


def _managed_by_migrations(name: str | None, type_: str, parents: dict[str, str | None]) -> bool:
    """The RAG chunk index creates its engine-specific tables, indexes and columns at run time (a vector's dimension
    is data), so whether a test before this one used a RAG on the shared database must not matter."""
    if type_ == "column":
        return (parents.get("table_name"), name) not in RUNTIME_SCHEMA_COLUMNS
    return not (type_ in ("table", "index") and name is not None and name.startswith(RUNTIME_SCHEMA_PREFIXES))


async def test_migrated_schema_matches_the_models(database: Database) -> None:
    store = Store(database.url)

    def diff(connection: Connection) -> list[object]:
        context = MigrationContext.configure(
            connection, opts={"compare_type": True, "include_name": _managed_by_migrations}
        )
        return list(compare_metadata(context, Base.metadata))

    try:
        async with store.engine.connect() as connection:
            differences = await connection.run_sync(diff)
    finally:
        await store.close()
    assert differences == []
