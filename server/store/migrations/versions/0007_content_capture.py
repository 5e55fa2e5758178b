"""content capture: policies, the capability's grants, sealed exchanges and their usage rows' link (issue 26)

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-28 02:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "capture_policies",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("scope_kind", sa.Integer(), nullable=False),
        sa.Column("scope_id", sa.String(length=128), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("tenant_id", "scope_kind", "scope_id"),
    )
    op.create_table(
        "capture_grants",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("granted_by", sa.String(length=128), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("tenant_id", "user_id"),
    )
    op.create_table(
        "captured_exchanges",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("api_key_id", sa.String(length=64), nullable=False),
        sa.Column("service_account_id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("model_id", sa.String(length=128), nullable=False),
        sa.Column("call_kind", sa.Integer(), nullable=False),
        sa.Column("status", sa.Integer(), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.Column("request_bytes", sa.BigInteger(), nullable=False),
        sa.Column("response_bytes", sa.BigInteger(), nullable=False),
        sa.Column("request_truncated", sa.Boolean(), nullable=False),
        sa.Column("response_truncated", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_captured_exchanges_time", "captured_exchanges", ["occurred_at", "id"])
    op.create_index("ix_captured_exchanges_tenant_time", "captured_exchanges", ["tenant_id", "occurred_at", "id"])
    with op.batch_alter_table("usage_events") as batch:
        batch.add_column(sa.Column("capture_id", sa.String(length=40), nullable=True))
    op.create_index(
        "ix_usage_events_capture",
        "usage_events",
        ["capture_id"],
        postgresql_where=sa.text("capture_id IS NOT NULL"),
        sqlite_where=sa.text("capture_id IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_usage_events_capture", table_name="usage_events")
    with op.batch_alter_table("usage_events") as batch:
        batch.drop_column("capture_id")
    op.drop_index("ix_captured_exchanges_tenant_time", table_name="captured_exchanges")
    op.drop_index("ix_captured_exchanges_time", table_name="captured_exchanges")
    op.drop_table("captured_exchanges")
    op.drop_table("capture_grants")
    op.drop_table("capture_policies")
