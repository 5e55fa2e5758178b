"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Connection, create_engine, inspect, text

from server.store.db import Database as Store
from server.store.migrate import alembic_config
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


class DatabaseAt:
    """A SQLite database at a revision, taking the raw rows its schema had then."""

    def __init__(self, tmp_path: Path, revision: str) -> None:
        self._config = alembic_config(f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}")
        command.upgrade(self._config, revision)
        self._engine = create_engine(f"sqlite:///{tmp_path / 'switchboard.db'}")

    def insert(self, statement: str, rows: list[dict[str, Any]] | None = None) -> None:
        with self._engine.begin() as connection:
            connection.execute(text(statement), rows or [{}])

    def rows(self, query: str) -> list[tuple[Any, ...]]:
        with self._engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(query))]

    def columns(self, table: str) -> set[str]:
        with self._engine.connect() as connection:
            return {column["name"] for column in inspect(connection).get_columns(table)}

    def upgrade(self) -> None:
        command.upgrade(self._config, "head")

    def downgrade(self, revision: str) -> None:
        command.downgrade(self._config, revision)

    def close(self) -> None:
        self._engine.dispose()


@pytest.fixture
def database_at(tmp_path: Path) -> Iterator[Callable[[str], DatabaseAt]]:
    made: list[DatabaseAt] = []

    def at(revision: str) -> DatabaseAt:
        made.append(DatabaseAt(tmp_path, revision))
        return made[-1]

    yield at
    for database in made:
        database.close()


def test_resource_uids_pin_what_existing_references_name_now(database_at: Callable[[str], DatabaseAt]) -> None:
    """0011 gives every resource a uid and pins each alias to its target as it is (an alias whose target was
    deleted before stays unresolved: it pins nothing); its downgrade drops them again."""
    database = database_at("0010")
    database.insert(
        "INSERT INTO resources (kind, name, share_to_all, created_at) VALUES (2, 'kept', false, '2026-01-01')"
    )
    alias = "INSERT INTO model_aliases (name, public_model_id, display_name, target_kind, target_name, unlisted, "
    alias += "created_at) VALUES (:name, :name, '', 2, :target, false, '2026-01-01')"
    database.insert(alias, [{"name": "to-kept", "target": "kept"}, {"name": "to-gone", "target": "gone"}])
    database.upgrade()
    ((uid,),) = database.rows("SELECT uid FROM resources WHERE name = 'kept'")
    pins = dict(database.rows("SELECT name, pins FROM model_aliases"))
    assert len(uid) == 32
    assert json.loads(pins["to-kept"]) == {"2:kept": uid} and json.loads(pins["to-gone"]) == {}
    database.downgrade("0010")
    assert "uid" not in database.columns("resources")


def test_rag_thresholds_outside_0_to_1_get_the_nearest_bound(database_at: Callable[[str], DatabaseAt]) -> None:
    """0013: a RAG saved with a threshold /context refuses (a 400 on every call that sent none) keeps its meaning at
    the nearest bound; one inside the range, or none, is left as it is."""
    database = database_at("0012")
    rag = "INSERT INTO rag_deployments (id, name, display_name, embedding_model, chunk_size_tokens,"
    rag += " chunk_overlap_tokens, top_k, weights, pins, creator, created_at, updated_at, used_bytes, score_threshold)"
    rag += " VALUES (:name, :name, '', 'e5', 512, 64, 10, '{}', '{}', '', '2026-01-01', '2026-01-01', 0, :threshold)"
    saved = {"below": -3.0, "inside": 0.25, "above": 5.0, "none": None}
    database.insert(rag, [{"name": name, "threshold": value} for name, value in saved.items()])
    database.upgrade()
    now = dict(database.rows("SELECT name, score_threshold FROM rag_deployments"))
    assert now == {"below": 0.0, "inside": 0.25, "above": 1.0, "none": None}


def test_capture_grants_of_users_no_longer_admin_end(database_at: Callable[[str], DatabaseAt]) -> None:
    """0014: a capture grant whose user was since demoted or removed ends, so being made admin again does not bring
    it back; a grant to a tenant's admin stays."""
    database = database_at("0013")
    database.insert("INSERT INTO tenants (id, name, display_name, created_at) VALUES ('t', 't', '', '2026-01-01')")
    member = "INSERT INTO tenant_members (tenant_id, user_id, role, created_at) VALUES ('t', :u, :r, '2026-01-01')"
    database.insert(member, [{"u": "admin", "r": 3}, {"u": "demoted", "r": 1}, {"u": "editor", "r": 2}])
    grant = (
        "INSERT INTO capture_grants (tenant_id, user_id, granted_at, granted_by) VALUES ('t', :u, '2026-01-01', 'op')"
    )
    database.insert(grant, [{"u": u} for u in ("admin", "demoted", "editor", "removed")])
    database.upgrade()
    assert database.rows("SELECT user_id FROM capture_grants") == [("admin",)]


def test_existing_rags_keep_the_model_they_name_now(database_at: Callable[[str], DatabaseAt]) -> None:
    """0015: a RAG on a model records that model; one on an alias, the alias's target as the alias pinned it (so
    the RAG keeps it once the alias is repointed); one whose model is gone, none. Its downgrade drops the record."""
    database = database_at("0014")
    database.insert(
        "INSERT INTO public_model_ids (public_model_id, kind, name) VALUES (:id, :kind, :name)",
        [{"id": "e5", "kind": 1, "name": "dep"}, {"id": "alias/e5", "kind": 6, "name": "al"}],
    )
    alias = "INSERT INTO model_aliases (name, public_model_id, display_name, target_kind, target_name, pins,"
    alias += " unlisted, created_at) VALUES ('al', 'alias/e5', '', 1, 'dep', :pins, false, '2026-01-01')"
    database.insert(alias, [{"pins": json.dumps({"1:dep": "uid-dep"})}])
    rag = "INSERT INTO rag_deployments (id, name, display_name, embedding_model, chunk_size_tokens,"
    rag += " chunk_overlap_tokens, top_k, weights, pins, creator, created_at, updated_at, used_bytes)"
    rag += " VALUES (:id, :id, '', :model, 256, 32, 10, '{}', :pins, '', '2026-01-01', '2026-01-01', 0)"
    database.insert(
        rag,
        [
            {"id": "direct", "model": "e5", "pins": json.dumps({"1:dep": "uid-dep"})},
            {"id": "aliased", "model": "alias/e5", "pins": json.dumps({"6:al": "uid-al"})},
            {"id": "orphan", "model": "gone", "pins": "{}"},
        ],
    )
    database.upgrade()
    query = "SELECT id, embedding_target_kind, embedding_target_name, pins FROM rag_deployments"
    rows = {id_: (kind, name, json.loads(pins)) for id_, kind, name, pins in database.rows(query)}
    assert rows == {
        "direct": (1, "dep", {"1:dep": "uid-dep"}),
        "aliased": (1, "dep", {"6:al": "uid-al", "1:dep": "uid-dep"}),
        "orphan": (None, None, {}),
    }
    database.downgrade("0014")
    assert not {"embedding_target_kind", "embedding_target_name"} & database.columns("rag_deployments")
