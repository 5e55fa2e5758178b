"""revoked sessions: a signed-out session token is refused until it would have expired

Why: signing out of the console only cleared the browser's cookie; a copy of the session token (a JWT, good for 12
hours after a development sign-in) kept working as a bearer token until its `exp`. A token is a bearer credential
with no server-side state, so sign-out records its SHA-256 here until its expiry (server.session_revocations).

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "revoked_sessions",
        sa.Column("token_hash", sa.LargeBinary(length=32), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_revoked_sessions_expires_at", "revoked_sessions", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_revoked_sessions_expires_at", table_name="revoked_sessions")
    op.drop_table("revoked_sessions")
