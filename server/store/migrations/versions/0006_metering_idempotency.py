"""metering idempotency: a unique id per usage row and per traffic row, so a replayed journal inserts nothing twice

Usage rows carry the call id the gateway gave the call (`call_id`), traffic rows the key of the journal batch and
bucket they sum (`batch_key`); both are unique, and the meter inserts with ON CONFLICT DO NOTHING (server.metering).
Rows written before this revision keep NULL there, which a unique index allows any number of times.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-28 02:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("usage_events") as batch:
        batch.add_column(sa.Column("call_id", sa.String(length=40), nullable=True))
    op.create_index("ux_usage_events_call_id", "usage_events", ["call_id"], unique=True)
    with op.batch_alter_table("api_traffic") as batch:
        batch.add_column(sa.Column("batch_key", sa.String(length=160), nullable=True))
    op.create_index("ux_api_traffic_batch_key", "api_traffic", ["batch_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ux_api_traffic_batch_key", table_name="api_traffic")
    with op.batch_alter_table("api_traffic") as batch:
        batch.drop_column("batch_key")
    op.drop_index("ux_usage_events_call_id", table_name="usage_events")
    with op.batch_alter_table("usage_events") as batch:
        batch.drop_column("call_id")
