"""rate limits: limit_policies and limit_soft_crossings (issue 25)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 22:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_SCOPE = ("tenant_id", "tier", "scope_kind", "scope_id")


def _scope_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("tier", sa.Integer(), nullable=False),
        sa.Column("scope_kind", sa.Integer(), nullable=False),
        sa.Column("scope_id", sa.String(length=128), nullable=False),
    ]


def upgrade() -> None:
    op.create_table(
        "limit_policies",
        *_scope_columns(),
        sa.Column("requests_per_minute", sa.BigInteger(), nullable=True),
        sa.Column("tokens_per_minute", sa.BigInteger(), nullable=True),
        sa.Column("concurrent_requests", sa.BigInteger(), nullable=True),
        sa.Column("token_budget", sa.BigInteger(), nullable=True),
        sa.Column("budget_period", sa.Integer(), nullable=False),
        sa.Column("soft_budget", sa.BigInteger(), nullable=True),
        sa.Column("quantities", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint(*_SCOPE),
    )
    op.create_table(
        "limit_soft_crossings",
        *_scope_columns(),
        sa.Column("period", sa.String(length=16), nullable=False),
        sa.Column("crossed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint(*_SCOPE, "period"),
    )


def downgrade() -> None:
    op.drop_table("limit_soft_crossings")
    op.drop_table("limit_policies")
