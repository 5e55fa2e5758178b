"""content capture: bodies sealed in groups (`captured_bodies`), one compression and one encryption per group of a
tenant's exchanges in a meter batch instead of one of each per exchange

Why: compressing and sealing each exchange alone cost a captured call most of its price in the gateway (zlib's
fixed cost per stream, an AES-GCM call, a nonce, base64, and a few hundred bytes more in each exchange row). New
exchanges name their group (`bodies_id`) and their place in it (`bodies_index`) and leave `sealed` NULL; rows
written before keep their own `sealed`, which still opens. On SQLite the table, rebuilt for the change anyway, is
rebuilt WITHOUT ROWID: its rows in the primary key's b-tree, one b-tree insert fewer a captured call.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28 12:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "captured_bodies",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("occurred_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_captured_bodies_time", "captured_bodies", ["occurred_at"])
    op.create_index("ix_captured_bodies_tenant", "captured_bodies", ["tenant_id"])
    with op.batch_alter_table("captured_exchanges", table_kwargs={"sqlite_with_rowid": False}) as batch:
        batch.alter_column("sealed", existing_type=sa.Text(), nullable=True)
        batch.add_column(sa.Column("bodies_id", sa.String(length=40), nullable=True))
        batch.add_column(sa.Column("bodies_index", sa.Integer(), nullable=True))


def downgrade() -> None:
    # Grouped exchanges have no bodies of their own to keep: they go with their groups, and their usage rows no longer
    # name them (a usage row never names an exchange that is not there).
    grouped = "SELECT id FROM captured_exchanges WHERE sealed IS NULL"
    op.execute(f"UPDATE usage_events SET capture_id = NULL WHERE capture_id IN ({grouped})")  # noqa: S608
    op.execute("DELETE FROM captured_exchanges WHERE sealed IS NULL")
    with op.batch_alter_table("captured_exchanges", table_kwargs={"sqlite_with_rowid": True}) as batch:
        batch.drop_column("bodies_index")
        batch.drop_column("bodies_id")
        batch.alter_column("sealed", existing_type=sa.Text(), nullable=False)
    op.drop_index("ix_captured_bodies_tenant", table_name="captured_bodies")
    op.drop_index("ix_captured_bodies_time", table_name="captured_bodies")
    op.drop_table("captured_bodies")
