"""Usage: narrow rollups (per API key alone, with UTC calendar-month rows; per model alone), kept by triggers

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-28 05:30:00
"""

# ruff: noqa: S608  (every statement here is built from this file's own constants, never from input)
from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

# Why: the rollups of 0008 split a key's calls by user and call kind and a model's by call kind, so ranking a
# month's keys summed ~330,000 day rows and a month of hourly points per model ~36,000 hour rows. Summed by the one
# dimension those reads group by, a key's month is one row and a model's hour is one row:
#
# - usage_api_key_rollups, per tenant and API key, in hours, UTC days and UTC calendar months. The month rows,
#   indexed by tokens, let the top keys come from the heaviest keys of the months a range touches
#   (server.domain._usage_ranking) instead of every key that called in it.
# - usage_model_call_rollups, per tenant and model, of the calls grouped "by model" only: model calls
#   (call kinds 1-5) that named a model. Other kinds may carry a model id but are never counted per model.
#
# The triggers are 0008's, for two more tables: same transaction as the write, statement-level on PostgreSQL (one
# grouped upsert per statement and table, rows upserted in key order so concurrent writers lock in one order).
HOUR = 3600
DAY = 86400
MONTH = 31 * DAY  # the grain tag of calendar-month rows (a month's most seconds); their bucket is its first second
_SUMS = ("prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens", "total_tokens")
_COUNTS = ("requests", "errors", *_SUMS)
_MODEL_CALLS = "{row}call_kind IN (1, 2, 3, 4, 5) AND {row}model_id <> ''"
# table -> (its key in index order, its grains, which usage_events rows it counts: `{row}` prefixes their columns). A key's rows of a range (the
# ranked candidates' sums, the top keys' points) are one range of the primary key; a tenant's models of a range too.
_ROLLUPS: dict[str, tuple[tuple[str, ...], tuple[int, ...], str]] = {
    "usage_api_key_rollups": (("tenant_id", "api_key_id", "grain", "bucket"), (HOUR, DAY, MONTH), "true"),
    "usage_model_call_rollups": (("tenant_id", "grain", "bucket", "model_id"), (HOUR, DAY), _MODEL_CALLS),
}


def _key(table: str) -> tuple[str, ...]:
    return _ROLLUPS[table][0]


def _bucket(postgresql: bool, grain: int, at: str) -> str:
    if postgresql:
        if grain == MONTH:
            return f"extract(epoch FROM date_trunc('month', {at}, 'UTC'))::bigint"
        return f"floor(extract(epoch FROM {at}) / {grain})::bigint * {grain}"
    # SQLite keeps times as UTC text (SQLAlchemy's storage format), which strftime reads.
    if grain == MONTH:
        return f"CAST(strftime('%s', {at}, 'start of month') AS INTEGER)"
    return f"CAST(strftime('%s', {at}) AS INTEGER) / {grain} * {grain}"


def _values(table: str, row: str, grain: int, postgresql: bool) -> dict[str, str]:
    """Key column -> its value for a usage_events row named `row` ("NEW." in a row trigger, "" in a SELECT)."""
    special = {"grain": str(grain), "bucket": _bucket(postgresql, grain, f"{row}occurred_at")}
    return {c: special.get(c, f"{row}{c}") for c in _key(table)}


def _grouped(table: str, rows: str, postgresql: bool) -> str:
    """The rollup rows of `rows` (a table or a transition table), key columns then counts."""
    _, grains, counted = _ROLLUPS[table]
    sums = ", ".join(f"sum({c})" for c in _SUMS)
    counted = counted.format(row="")
    return " UNION ALL ".join(
        f"SELECT {', '.join(_values(table, '', grain, postgresql).values())}, count(*), "
        f"sum(CASE WHEN status >= 400 THEN 1 ELSE 0 END), {sums} FROM {rows} WHERE {counted} GROUP BY 1, 2, 3, 4"
        for grain in grains
    )


def _pg_apply(table: str) -> str:
    key = _key(table)
    columns = ", ".join((*key, *_COUNTS))
    match = f"({', '.join(f'u.{c}' for c in key)}) = ({', '.join(f'd.{c}' for c in key)})"
    removed = f"({_grouped(table, 'removed', True)}) AS d({columns})"
    add = ", ".join(f"{c} = {table}.{c} + excluded.{c}" for c in _COUNTS)
    return f"""
        IF TG_OP <> 'INSERT' THEN
            UPDATE {table} AS u SET {", ".join(f"{c} = u.{c} - d.{c}" for c in _COUNTS)} FROM {removed} WHERE {match};
            DELETE FROM {table} AS u USING {removed} WHERE {match} AND u.requests = 0;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO {table} ({columns}) SELECT * FROM ({_grouped(table, 'added', True)}) AS a ORDER BY 1, 2, 3, 4
            ON CONFLICT ({", ".join(key)}) DO UPDATE SET {add};
        END IF;"""


_EVENTS = ("insert", "update", "delete")
_TRANSITIONS = {
    "insert": "NEW TABLE AS added",
    "update": "OLD TABLE AS removed NEW TABLE AS added",
    "delete": "OLD TABLE AS removed",
}
_POSTGRESQL = [
    f"""
    CREATE FUNCTION usage_narrow_rollups_apply() RETURNS trigger AS $$
    BEGIN
        {"".join(_pg_apply(table) for table in _ROLLUPS)}
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql
    """,
    *(
        f"CREATE TRIGGER usage_narrow_rollups_{event} AFTER {event.upper()} ON usage_events "
        f"REFERENCING {_TRANSITIONS[event]} FOR EACH STATEMENT EXECUTE FUNCTION usage_narrow_rollups_apply()"
        for event in _EVENTS
    ),
]


# SQLite has row-level triggers only, and one writer at a time (no lock order to keep).
def _sqlite_values(table: str, row: str, grain: int) -> dict[str, str]:
    return _values(table, f"{row}.", grain, False)


def _sqlite_counts(row: str) -> dict[str, str]:
    return {"requests": "1", "errors": f"CASE WHEN {row}.status >= 400 THEN 1 ELSE 0 END"} | {
        c: f"{row}.{c}" for c in _SUMS
    }


def _sqlite_counted(table: str, row: str) -> str:
    return _ROLLUPS[table][2].format(row=f"{row}.")


def _sqlite_add(row: str) -> str:
    statements = []
    for table, (_, grains, _) in _ROLLUPS.items():
        for grain in grains:
            values = {**_sqlite_values(table, row, grain), **_sqlite_counts(row)}
            # INSERT ... SELECT ... WHERE: an upsert's SELECT needs its WHERE (SQLite's parsing of ON CONFLICT).
            statements.append(
                f"INSERT INTO {table} ({', '.join(values)}) SELECT {', '.join(values.values())} "
                f"WHERE {_sqlite_counted(table, row)} ON CONFLICT ({', '.join(_key(table))}) DO UPDATE SET "
                f"{', '.join(f'{c} = {c} + excluded.{c}' for c in _COUNTS)}; "
            )
    return "".join(statements)


def _sqlite_remove(row: str) -> str:
    statements = []
    for table, (_, grains, _) in _ROLLUPS.items():
        for grain in grains:
            match = " AND ".join(f"{c} = {v}" for c, v in _sqlite_values(table, row, grain).items())
            match += f" AND {_sqlite_counted(table, row)}"
            minus = ", ".join(f"{c} = {c} - {v}" for c, v in _sqlite_counts(row).items())
            statements.append(f"UPDATE {table} SET {minus} WHERE {match}; ")
            statements.append(f"DELETE FROM {table} WHERE {match} AND requests = 0; ")
    return "".join(statements)


_SQLITE = [
    f"CREATE TRIGGER usage_narrow_rollups_insert AFTER INSERT ON usage_events BEGIN {_sqlite_add('NEW')}END",
    f"CREATE TRIGGER usage_narrow_rollups_update AFTER UPDATE ON usage_events "
    f"BEGIN {_sqlite_remove('OLD')}{_sqlite_add('NEW')}END",
    f"CREATE TRIGGER usage_narrow_rollups_delete AFTER DELETE ON usage_events BEGIN {_sqlite_remove('OLD')}END",
]


def upgrade() -> None:
    types: dict[str, sa.types.TypeEngine[Any]] = {
        "tenant_id": sa.String(length=64),
        "api_key_id": sa.String(length=64),
        "model_id": sa.String(length=128),
        "grain": sa.Integer(),
        "bucket": sa.BigInteger(),
    }
    for table in _ROLLUPS:
        op.create_table(
            table,
            *(sa.Column(name, types[name], nullable=False) for name in _key(table)),
            *(sa.Column(name, sa.BigInteger(), nullable=False) for name in _COUNTS),
            sa.PrimaryKeyConstraint(*_key(table)),
        )
    # The heaviest keys of a month, read from the top; only month rows are indexed by tokens.
    month = sa.text(f"grain = {MONTH}")
    op.create_index(
        "ix_usage_api_key_rollups_month_tokens",
        "usage_api_key_rollups",
        ["tenant_id", "bucket", "total_tokens"],
        postgresql_where=month,
        sqlite_where=month,
    )
    op.create_index("ix_usage_model_call_rollups_time", "usage_model_call_rollups", ["grain", "bucket"])  # operators
    postgresql = op.get_bind().dialect.name == "postgresql"
    if postgresql:
        # Writers wait until the triggers exist (end of this transaction): no row lands between backfill and them.
        op.execute("LOCK TABLE usage_events IN SHARE ROW EXCLUSIVE MODE")
    for table in _ROLLUPS:
        columns = ", ".join((*_key(table), *_COUNTS))
        op.execute(f"INSERT INTO {table} ({columns}) SELECT * FROM ({_grouped(table, 'usage_events', postgresql)}) AS r")
    for statement in _POSTGRESQL if postgresql else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    postgresql = op.get_bind().dialect.name == "postgresql"
    for event in _EVENTS:
        op.execute(f"DROP TRIGGER usage_narrow_rollups_{event}" + (" ON usage_events" if postgresql else ""))
    if postgresql:
        op.execute("DROP FUNCTION usage_narrow_rollups_apply()")
    for table in _ROLLUPS:
        op.drop_table(table)
