"""group_list_versions: a per-tenant counter every group and group-member change moves, kept by triggers

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-24 09:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

# Both dialects take this upsert: a tenant's counter starts at 1 and moves by one per changed row. The WHERE skips a
# member row whose group is already gone (deleted by the same statement, which moved the counter itself); on SQLite
# it also keeps the upsert's ON CONFLICT from being read as part of the SELECT.
_BUMP = (
    "INSERT INTO group_list_versions (tenant_id, version) SELECT {tenant}, 1 WHERE {tenant} IS NOT NULL "
    "ON CONFLICT (tenant_id) DO UPDATE SET version = group_list_versions.version + 1"
)
_GROUP_TENANT = "(SELECT tenant_id FROM groups WHERE id = {row}.group_id)"  # a member row's tenant

_POSTGRESQL = [
    f"""
    CREATE FUNCTION bump_group_list_version() RETURNS trigger AS $$
    DECLARE
        new_tenant varchar;
        old_tenant varchar;
    BEGIN
        IF TG_TABLE_NAME = 'groups' THEN
            IF TG_OP <> 'DELETE' THEN new_tenant := NEW.tenant_id; END IF;
            IF TG_OP <> 'INSERT' THEN old_tenant := OLD.tenant_id; END IF;
        ELSE
            IF TG_OP <> 'DELETE' THEN new_tenant := {_GROUP_TENANT.format(row="NEW")}; END IF;
            IF TG_OP <> 'INSERT' THEN old_tenant := {_GROUP_TENANT.format(row="OLD")}; END IF;
        END IF;
        {_BUMP.format(tenant="new_tenant")};
        IF old_tenant IS DISTINCT FROM new_tenant THEN
            {_BUMP.format(tenant="old_tenant")};
        END IF;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql
    """,
    "CREATE TRIGGER groups_bump_list_version AFTER INSERT OR UPDATE OR DELETE ON groups "
    "FOR EACH ROW EXECUTE FUNCTION bump_group_list_version()",
    "CREATE TRIGGER group_members_bump_list_version AFTER INSERT OR UPDATE OR DELETE ON group_members "
    "FOR EACH ROW EXECUTE FUNCTION bump_group_list_version()",
]


def _sqlite_trigger(table: str, event: str, *tenants: str) -> str:
    bumps = "".join(f"{_BUMP.format(tenant=tenant)}; " for tenant in tenants)
    return f"CREATE TRIGGER {table}_bump_list_version_{event.lower()} AFTER {event} ON {table} BEGIN {bumps}END"


_SQLITE = [
    _sqlite_trigger("groups", "INSERT", "NEW.tenant_id"),
    # An update moves the counter of the tenant it leaves too (twice when it stays: still a change).
    _sqlite_trigger("groups", "UPDATE", "NEW.tenant_id", "OLD.tenant_id"),
    _sqlite_trigger("groups", "DELETE", "OLD.tenant_id"),
    _sqlite_trigger("group_members", "INSERT", _GROUP_TENANT.format(row="NEW")),
    _sqlite_trigger("group_members", "UPDATE", _GROUP_TENANT.format(row="NEW"), _GROUP_TENANT.format(row="OLD")),
    _sqlite_trigger("group_members", "DELETE", _GROUP_TENANT.format(row="OLD")),
]


def upgrade() -> None:
    op.create_table(
        "group_list_versions",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id"),
    )
    for statement in _POSTGRESQL if op.get_bind().dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER group_members_bump_list_version ON group_members")
        op.execute("DROP TRIGGER groups_bump_list_version ON groups")
        op.execute("DROP FUNCTION bump_group_list_version()")
    else:
        for table in ("groups", "group_members"):
            for event in ("insert", "update", "delete"):
                op.execute(f"DROP TRIGGER {table}_bump_list_version_{event}")
    op.drop_table("group_list_versions")
