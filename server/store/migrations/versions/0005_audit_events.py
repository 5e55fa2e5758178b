"""audit_events: who changed what, from where, with which outcome (issue 26)

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 23:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("actor_type", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column("service_account_id", sa.String(length=64), nullable=False),
        sa.Column("api_key_id", sa.String(length=64), nullable=False),
        sa.Column("peer_address", sa.String(length=128), nullable=False),
        sa.Column("source", sa.Integer(), nullable=False),
        sa.Column("method", sa.String(length=200), nullable=False),
        sa.Column("resource_kind", sa.String(length=64), nullable=False),
        sa.Column("resource_name", sa.String(length=256), nullable=False),
        sa.Column("outcome", sa.Integer(), nullable=False),
        sa.Column("code", sa.String(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_audit_events_time", "audit_events", ["occurred_at", "id"])
    op.create_index("ix_audit_events_tenant_time", "audit_events", ["tenant_id", "occurred_at", "id"])


def downgrade() -> None:
    op.drop_index("ix_audit_events_tenant_time", table_name="audit_events")
    op.drop_index("ix_audit_events_time", table_name="audit_events")
    op.drop_table("audit_events")
