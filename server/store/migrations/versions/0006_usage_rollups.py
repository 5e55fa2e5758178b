"""usage_rollups: metered calls summed per hour and per day, tenant, call kind, model and key, kept by triggers

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28 02:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

# Why triggers: the rollup must agree with usage_events exactly, whoever writes them (the gateway's meter, another
# replica, a test, plain SQL, a retention DELETE). A trigger runs in the writing statement's transaction, so the
# two never disagree, not even for a moment.
#
# Rows are kept per tenant, call kind, model, API key and user (the caller; a member reads their own calls).
# Every usage_events row counts once in each grain: its hour (3600) and its UTC day (86400). `bucket` is the epoch
# second the hour or day starts at.
_GRAINS = (3600, 86400)
_SUMS = ("prompt_tokens", "completion_tokens", "embedding_tokens", "rerank_tokens", "total_tokens")
_KEY = "tenant_id, grain, bucket, call_kind, model_id, api_key_id, user_id"
_COUNTS = ("requests", "errors", *_SUMS)
_ADD = ", ".join(f"{c} = usage_rollups.{c} + excluded.{c}" for c in _COUNTS)

# PostgreSQL: statement-level triggers with transition tables, so a batch of a thousand rows costs one grouped
# upsert, not a thousand. Rows are upserted in key order: two replicas flushing at once then lock shared rollup rows
# in the same order and wait for each other instead of deadlocking.
_PG_ROWS = f"""
    SELECT r.tenant_id, g.grain, floor(extract(epoch FROM r.occurred_at) / g.grain)::bigint * g.grain AS bucket,
           r.call_kind, r.model_id, r.api_key_id, r.user_id, count(*) AS requests,
           count(*) FILTER (WHERE r.status >= 400) AS errors,
           {", ".join(f"sum(r.{c}) AS {c}" for c in _SUMS)}
    FROM {{rows}} AS r CROSS JOIN (VALUES {", ".join(f"({g})" for g in _GRAINS)}) AS g(grain)
    GROUP BY 1, 2, 3, 4, 5, 6, 7
"""
_POSTGRESQL = [
    f"""
    CREATE FUNCTION usage_rollups_apply() RETURNS trigger AS $$
    BEGIN
        IF TG_OP <> 'INSERT' THEN
            UPDATE usage_rollups AS u SET {", ".join(f"{c} = u.{c} - d.{c}" for c in _COUNTS)}
            FROM ({_PG_ROWS.format(rows="removed")}) AS d
            WHERE (u.tenant_id, u.grain, u.bucket, u.call_kind, u.model_id, u.api_key_id, u.user_id)
                = (d.tenant_id, d.grain, d.bucket, d.call_kind, d.model_id, d.api_key_id, d.user_id);
            DELETE FROM usage_rollups AS u USING ({_PG_ROWS.format(rows="removed")}) AS d
            WHERE (u.tenant_id, u.grain, u.bucket, u.call_kind, u.model_id, u.api_key_id, u.user_id)
                = (d.tenant_id, d.grain, d.bucket, d.call_kind, d.model_id, d.api_key_id, d.user_id)
                AND u.requests = 0;
        END IF;
        IF TG_OP <> 'DELETE' THEN
            INSERT INTO usage_rollups ({_KEY}, {", ".join(_COUNTS)})
            SELECT * FROM ({_PG_ROWS.format(rows="added")}) AS a ORDER BY 1, 2, 3, 4, 5, 6, 7
            ON CONFLICT ({_KEY}) DO UPDATE SET {_ADD};
        END IF;
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
def _sqlite_key(row: str, grain: int) -> list[str]:
    bucket = f"CAST(strftime('%s', {row}.occurred_at) AS INTEGER) / {grain} * {grain}"
    return [
        f"{row}.tenant_id",
        str(grain),
        bucket,
        f"{row}.call_kind",
        f"{row}.model_id",
        f"{row}.api_key_id",
        f"{row}.user_id",
    ]


def _sqlite_add(row: str) -> str:
    values = [f"1, CASE WHEN {row}.status >= 400 THEN 1 ELSE 0 END", *(f"{row}.{c}" for c in _SUMS)]
    return "".join(
        f"INSERT INTO usage_rollups ({_KEY}, {', '.join(_COUNTS)}) "
        f"VALUES ({', '.join(_sqlite_key(row, grain))}, {', '.join(values)}) "
        f"ON CONFLICT ({_KEY}) DO UPDATE SET {_ADD}; "
        for grain in _GRAINS
    )


def _sqlite_remove(row: str) -> str:
    values = {"requests": "1", "errors": f"CASE WHEN {row}.status >= 400 THEN 1 ELSE 0 END"}
    values.update({c: f"{row}.{c}" for c in _SUMS})
    statements = []
    for grain in _GRAINS:
        match = " AND ".join(
            f"{column} = {value}" for column, value in zip(_KEY.split(", "), _sqlite_key(row, grain), strict=True)
        )
        statements.append(
            f"UPDATE usage_rollups SET {', '.join(f'{c} = {c} - {v}' for c, v in values.items())} WHERE {match}; "
        )
        statements.append(f"DELETE FROM usage_rollups WHERE {match} AND requests = 0; ")
    return "".join(statements)


_SQLITE = [
    f"CREATE TRIGGER usage_rollups_insert AFTER INSERT ON usage_events BEGIN {_sqlite_add('NEW')}END",
    f"CREATE TRIGGER usage_rollups_update AFTER UPDATE ON usage_events "
    f"BEGIN {_sqlite_remove('OLD')}{_sqlite_add('NEW')}END",
    f"CREATE TRIGGER usage_rollups_delete AFTER DELETE ON usage_events BEGIN {_sqlite_remove('OLD')}END",
]


def _backfill(dialect: str) -> str:
    if dialect == "postgresql":
        rows = _PG_ROWS.format(rows="usage_events")
    else:
        unions = []
        for grain in _GRAINS:
            bucket = f"CAST(strftime('%s', occurred_at) AS INTEGER) / {grain} * {grain}"
            unions.append(
                f"SELECT tenant_id, {grain}, {bucket}, call_kind, model_id, api_key_id, user_id, count(*), "
                f"sum(CASE WHEN status >= 400 THEN 1 ELSE 0 END), {', '.join(f'sum({c})' for c in _SUMS)} "
                f"FROM usage_events GROUP BY 1, 2, 3, 4, 5, 6, 7"
            )
        rows = " UNION ALL ".join(unions)
    return f"INSERT INTO usage_rollups ({_KEY}, {', '.join(_COUNTS)}) SELECT * FROM ({rows}) AS r"  # noqa: S608


def upgrade() -> None:
    big = sa.BigInteger()
    op.create_table(
        "usage_rollups",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("grain", sa.Integer(), nullable=False),
        sa.Column("bucket", big, nullable=False),
        sa.Column("call_kind", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.String(length=128), nullable=False),
        sa.Column("api_key_id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        *(sa.Column(name, big, nullable=False) for name in _COUNTS),
        sa.PrimaryKeyConstraint("tenant_id", "grain", "bucket", "call_kind", "model_id", "api_key_id", "user_id"),
    )
    op.create_index("ix_usage_rollups_time", "usage_rollups", ["grain", "bucket"])
    op.create_index("ix_usage_rollups_key", "usage_rollups", ["tenant_id", "grain", "api_key_id", "bucket"])
    op.create_index("ix_usage_rollups_user", "usage_rollups", ["tenant_id", "grain", "user_id", "bucket"])
    dialect = op.get_bind().dialect.name
    if dialect == "postgresql":
        # Writers wait until the triggers exist (end of this transaction): no row lands between backfill and them.
        op.execute("LOCK TABLE usage_events IN SHARE ROW EXCLUSIVE MODE")
    op.execute(_backfill(dialect))
    for statement in _POSTGRESQL if dialect == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    for event in ("insert", "update", "delete"):
        if op.get_bind().dialect.name == "postgresql":
            op.execute(f"DROP TRIGGER usage_rollups_{event} ON usage_events")
        else:
            op.execute(f"DROP TRIGGER usage_rollups_{event}")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION usage_rollups_apply()")
    op.drop_index("ix_usage_rollups_user", table_name="usage_rollups")
    op.drop_index("ix_usage_rollups_key", table_name="usage_rollups")
    op.drop_index("ix_usage_rollups_time", table_name="usage_rollups")
    op.drop_table("usage_rollups")
