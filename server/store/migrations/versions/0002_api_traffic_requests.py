"""api_traffic rows count requests: one row per service, status and second

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-24 07:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing rows each recorded one request: the default says so.
    with op.batch_alter_table("api_traffic", schema=None) as batch_op:
        batch_op.add_column(sa.Column("requests", sa.Integer(), server_default="1", nullable=False))


def downgrade() -> None:
    with op.batch_alter_table("api_traffic", schema=None) as batch_op:
        batch_op.drop_column("requests")
