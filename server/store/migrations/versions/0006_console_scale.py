"""Console scale: usage rollups (calls summed per hour and per UTC day, kept by triggers); api_keys keyset index

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28 02:20:00
"""

# ruff: noqa: S608  (every statement here is built from this file's own constants, never from input)
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Why triggers: a rollup must agree with usage_events exactly, whoever writes them (the gateway's meter, another
# replica, a test, plain SQL, a DELETE). A trigger runs in the writing statement's transaction, so the two never
# disagree, not even for a moment.
#
# Why three rollups and not one with every dimension: keys are many and mostly quiet (a tenant's 100,000 keys, most
# of them calling a few times a month), so a row per hour, model, kind and key is about as many rows as calls and
# saves nothing. Summed per tenant alone, a month is 720 hour rows (the ungrouped series, and the whole a grouped
# series' `other` is taken from); per model and kind (no key), ~50,000 hour rows and ~3,000 day rows; per key (and
# its user and the call kind, no model), one row per key, kind and hour it called in.
#
# Every usage_events row counts once in each grain: its hour (3600) and its UTC day (86400). `bucket` is the epoch
# second the hour or day starts at.
_GRAINS = (3600, 86400)
_SUMS = ("prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens", "total_tokens")
_COUNTS = ("requests", "errors", *_SUMS)
_ROLLUPS: dict[str, tuple[str, ...]] = {
    "usage_tenant_rollups": (),
    "usage_model_rollups": ("call_kind", "model_id"),
    "usage_key_rollups": ("api_key_id", "user_id", "call_kind"),
}


def _key(table: str) -> tuple[str, ...]:
    return ("tenant_id", "grain", "bucket", *_ROLLUPS[table])


# PostgreSQL: statement-level triggers with transition tables, so a batch of a thousand rows costs one grouped
# upsert per rollup, not a thousand. Rows are upserted in key order: two replicas flushing at once then lock shared
# rollup rows in the same order and wait for each other instead of deadlocking.
def _pg_rows(table: str, rows: str) -> str:
    dims = "".join(f"r.{c}, " for c in _ROLLUPS[table])
    groups = ", ".join(str(i) for i in range(1, len(_key(table)) + 1))
    return (
        f"SELECT r.tenant_id, g.grain, floor(extract(epoch FROM r.occurred_at) / g.grain)::bigint * g.grain, {dims}"
        f"count(*), count(*) FILTER (WHERE r.status >= 400), {', '.join(f'sum(r.{c})' for c in _SUMS)} "
        f"FROM {rows} AS r CROSS JOIN (VALUES {', '.join(f'({g})' for g in _GRAINS)}) AS g(grain) "
        f"GROUP BY {groups}"
    )


def _pg_apply(table: str) -> str:
    key = _key(table)
    columns = ", ".join((*key, *_COUNTS))
    named = f"d({columns})"
    match = f"({', '.join(f'u.{c}' for c in key)}) = ({', '.join(f'd.{c}' for c in key)})"
    order = ", ".join(str(i) for i in range(1, len(key) + 1))
    add = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in _COUNTS)
    return f"""
        IF TG_OP <> 'INSERT' THEN
            UPDATE {table} AS u SET {", ".join(f"{c} = u.{c} - d.{c}" for c in _COUNTS)}
            FROM ({_pg_rows(table, "removed")}) AS {named} WHERE {match};
            DELETE FROM {table} AS u USING ({_pg_rows(table, "removed")}) AS {named} WHERE {match} AND u.requests = 0;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO {table} ({columns}) SELECT * FROM ({_pg_rows(table, "added")}) AS a ORDER BY {order}
            ON CONFLICT ({", ".join(key)}) DO UPDATE SET {add};
        END IF;"""


_POSTGRESQL = [
    f"""
    CREATE FUNCTION usage_rollups_apply() RETURNS trigger AS $$
    BEGIN
        {"".join(_pg_apply(table) for table in _ROLLUPS)}
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER usage_rollups_insert AFTER INSERT ON usage_events REFERENCING NEW TABLE AS added "
    "FOR EACH STATEMENT EXECUTE FUNCTION usage_rollups_apply()",
    "CREATE TRIGGER usage_rollups_update AFTER UPDATE ON usage_events REFERENCING OLD TABLE AS removed "
    "NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION usage_rollups_apply()",
    "CREATE TRIGGER usage_rollups_delete AFTER DELETE ON usage_events REFERENCING OLD TABLE AS removed "
    "FOR EACH STATEMENT EXECUTE FUNCTION usage_rollups_apply()",
]


# SQLite has row-level triggers only; it has one writer at a time, so there is no lock order to keep. Its times are
# UTC text (SQLAlchemy's storage format), which strftime('%s') reads.
def _sqlite_values(table: str, row: str, grain: int) -> dict[str, str]:
    bucket = f"CAST(strftime('%s', {row}.occurred_at) AS INTEGER) / {grain} * {grain}"
    return {"tenant_id": f"{row}.tenant_id", "grain": str(grain), "bucket": bucket} | {
        c: f"{row}.{c}" for c in _ROLLUPS[table]
    }


def _sqlite_counts(row: str) -> dict[str, str]:
    return {"requests": "1", "errors": f"CASE WHEN {row}.status >= 400 THEN 1 ELSE 0 END"} | {
        c: f"{row}.{c}" for c in _SUMS
    }


def _sqlite_add(row: str) -> str:
    statements = []
    for table in _ROLLUPS:
        key = _key(table)
        for grain in _GRAINS:
            values = {**_sqlite_values(table, row, grain), **_sqlite_counts(row)}
            statements.append(
                f"INSERT INTO {table} ({', '.join(values)}) VALUES ({', '.join(values.values())}) "
                f"ON CONFLICT ({', '.join(key)}) DO UPDATE SET "
                f"{', '.join(f'{c} = {c} + excluded.{c}' for c in _COUNTS)}; "
            )
    return "".join(statements)


def _sqlite_remove(row: str) -> str:
    statements = []
    for table in _ROLLUPS:
        for grain in _GRAINS:
            match = " AND ".join(f"{c} = {v}" for c, v in _sqlite_values(table, row, grain).items())
            minus = ", ".join(f"{c} = {c} - {v}" for c, v in _sqlite_counts(row).items())
            statements.append(f"UPDATE {table} SET {minus} WHERE {match}; ")
            statements.append(f"DELETE FROM {table} WHERE {match} AND requests = 0; ")
    return "".join(statements)


_SQLITE = [
    f"CREATE TRIGGER usage_rollups_insert AFTER INSERT ON usage_events BEGIN {_sqlite_add('NEW')}END",
    f"CREATE TRIGGER usage_rollups_update AFTER UPDATE ON usage_events "
    f"BEGIN {_sqlite_remove('OLD')}{_sqlite_add('NEW')}END",
    f"CREATE TRIGGER usage_rollups_delete AFTER DELETE ON usage_events BEGIN {_sqlite_remove('OLD')}END",
]


def _backfill(table: str, dialect: str) -> str:
    key = _key(table)
    if dialect == "postgresql":
        rows = _pg_rows(table, "usage_events")
    else:
        dims = "".join(f"{c}, " for c in _ROLLUPS[table])
        groups = ", ".join(str(i) for i in range(1, len(key) + 1))
        rows = " UNION ALL ".join(
            f"SELECT tenant_id, {grain}, CAST(strftime('%s', occurred_at) AS INTEGER) / {grain} * {grain}, {dims}"
            f"count(*), sum(CASE WHEN status >= 400 THEN 1 ELSE 0 END), {', '.join(f'sum({c})' for c in _SUMS)} "
            f"FROM usage_events GROUP BY {groups}"
            for grain in _GRAINS
        )
    return f"INSERT INTO {table} ({', '.join((*key, *_COUNTS))}) SELECT * FROM ({rows}) AS r"


def _dimension(name: str) -> sa.Column[Any]:
    if name == "call_kind":
        return sa.Column(name, sa.Integer(), nullable=False)
    return sa.Column(name, sa.String(length=64 if name == "api_key_id" else 128), nullable=False)


def upgrade() -> None:
    for table, dims in _ROLLUPS.items():
        op.create_table(
            table,
            sa.Column("tenant_id", sa.String(length=64), nullable=False),
            sa.Column("grain", sa.Integer(), nullable=False),
            sa.Column("bucket", sa.BigInteger(), nullable=False),
            *(_dimension(name) for name in dims),
            *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _COUNTS),
            sa.PrimaryKeyConstraint(*_key(table)),
        )
    # Operators' reads across tenants; the chosen (top) keys' points; one member's own calls.
    op.create_index("ix_usage_model_rollups_time", "usage_model_rollups", ["grain", "bucket"])
    op.create_index("ix_usage_key_rollups_key", "usage_key_rollups", ["tenant_id", "grain", "api_key_id", "bucket"])
    op.create_index("ix_usage_key_rollups_user", "usage_key_rollups", ["tenant_id", "grain", "user_id", "bucket"])
    # The reads no rollup answers (a user's or key's calls per model) sum one user's raw rows of the range.
    op.create_index("ix_usage_events_user", "usage_events", ["tenant_id", "user_id", "occurred_at"])
    # TenantListService pages a tenant's keys oldest first: the page after (created_at, id) is one index range.
    op.create_index("ix_api_keys_tenant_created", "api_keys", ["tenant_id", "created_at", "id"])
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        # Writers wait until the triggers exist (end of this transaction): no row lands between backfill and them.
        op.execute("LOCK TABLE usage_events IN SHARE ROW EXCLUSIVE MODE")
    for table in _ROLLUPS:
        op.execute(_backfill(table, dialect))
    for statement in _POSTGRESQL if dialect == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER usage_rollups_{event}" + (" ON usage_events" if postgresql else ""))
    if postgresql:
        op.execute("DROP FUNCTION usage_rollups_apply()")
    op.drop_index("ix_api_keys_tenant_created", table_name="api_keys")
    op.drop_index("ix_usage_events_user", table_name="usage_events")
    op.drop_index("ix_usage_key_rollups_user", table_name="usage_key_rollups")
    op.drop_index("ix_usage_key_rollups_key", table_name="usage_key_rollups")
    op.drop_index("ix_usage_model_rollups_time", table_name="usage_model_rollups")
    for table in _ROLLUPS:
        op.drop_table(table)
