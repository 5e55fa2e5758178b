"""The Alembic migrations build exactly the schema the models describe, on both databases."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_resource_uids_pin_what_existing_references_name_now(tmp_path: Path) -> None:
    """0011 gives every resource a uid and pins each alias to its target as it is (an alias whose target was
    deleted before stays unresolved: it pins nothing); its downgrade drops them again."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}"
    command.upgrade(alembic_config(url), "0010")
    engine = create_engine(f"sqlite:///{tmp_path / 'switchboard.db'}")
    alias = "INSERT INTO model_aliases (name, public_model_id, display_name, target_kind, target_name, unlisted, "
    alias += "created_at) VALUES (:name, :name, '', 2, :target, false, '2026-01-01')"
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO resources (kind, name, share_to_all, created_at) VALUES (2, 'kept', false, '2026-01-01')")
        )
        connection.execute(text(alias), [{"name": "to-kept", "target": "kept"}, {"name": "to-gone", "target": "gone"}])
    command.upgrade(alembic_config(url), "head")
    with engine.connect() as connection:
        uid = connection.execute(text("SELECT uid FROM resources WHERE name = 'kept'")).scalar_one()
        pins = dict(connection.execute(text("SELECT name, pins FROM model_aliases")).all())
    assert len(uid) == 32
    assert json.loads(pins["to-kept"]) == {"2:kept": uid} and json.loads(pins["to-gone"]) == {}
    command.downgrade(alembic_config(url), "0010")
    with engine.connect() as connection:
        assert "uid" not in {c["name"] for c in inspect(connection).get_columns("resources")}
    engine.dispose()


def test_rag_thresholds_outside_0_to_1_get_the_nearest_bound(tmp_path: Path) -> None:
    """0013: a RAG saved with a threshold /context refuses (a 400 on every call that sent none) keeps its meaning at
    the nearest bound; one inside the range, or none, is left as it is."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}"
    command.upgrade(alembic_config(url), "0012")
    engine = create_engine(f"sqlite:///{tmp_path / 'switchboard.db'}")
    rag = "INSERT INTO rag_deployments (id, name, display_name, embedding_model, chunk_size_tokens,"
    rag += " chunk_overlap_tokens, top_k, weights, pins, creator, created_at, updated_at, used_bytes, score_threshold)"
    rag += " VALUES (:name, :name, '', 'e5', 512, 64, 10, '{}', '{}', '', '2026-01-01', '2026-01-01', 0, :threshold)"
    saved = {"below": -3.0, "inside": 0.25, "above": 5.0, "none": None}
    with engine.begin() as connection:
        connection.execute(text(rag), [{"name": name, "threshold": value} for name, value in saved.items()])
    command.upgrade(alembic_config(url), "head")
    with engine.connect() as connection:
        now = dict(connection.execute(text("SELECT name, score_threshold FROM rag_deployments")).all())
    engine.dispose()
    assert now == {"below": 0.0, "inside": 0.25, "above": 1.0, "none": None}


def test_capture_grants_of_users_no_longer_admin_end(tmp_path: Path) -> None:
    """0014: a capture grant whose user was since demoted or removed ends, so being made admin again does not bring
    it back; a grant to a tenant's admin stays."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}"
    command.upgrade(alembic_config(url), "0013")
    engine = create_engine(f"sqlite:///{tmp_path / 'switchboard.db'}")
    with engine.begin() as connection:
        connection.execute(
            text("INSERT INTO tenants (id, name, display_name, created_at) VALUES ('t', 't', '', '2026-01-01')")
        )
        member = "INSERT INTO tenant_members (tenant_id, user_id, role, created_at) VALUES ('t', :u, :r, '2026-01-01')"
        connection.execute(text(member), [{"u": "admin", "r": 3}, {"u": "demoted", "r": 1}, {"u": "editor", "r": 2}])
        grant = "INSERT INTO capture_grants (tenant_id, user_id, granted_at, granted_by)"
        grant += " VALUES ('t', :u, '2026-01-01', 'op')"
        connection.execute(text(grant), [{"u": u} for u in ("admin", "demoted", "editor", "removed")])
    command.upgrade(alembic_config(url), "head")
    with engine.connect() as connection:
        kept = connection.execute(text("SELECT user_id FROM capture_grants")).scalars().all()
    engine.dispose()
    assert kept == ["admin"]
