"""RAG score thresholds lie from 0 to 1: a RAG saved with one outside that range gets the nearest bound

Why: a RAG's default `score_threshold` was checked only for being finite, while /context (and fused scores) take 0 to
1, so a RAG saved with, say, 5 answered every /context call that sent no threshold with a 400 on a field its caller
never sent. New values are checked (server.domain.rags); this brings earlier ones into the range. The nearest bound
keeps what the value meant: below 0 dropped nothing, as 0 does; above 1 dropped every chunk, as 1 does all but a
perfect match.
No downgrade: the values outside the range are not kept.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-02 02:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("UPDATE rag_deployments SET score_threshold = 0 WHERE score_threshold < 0")
    op.execute("UPDATE rag_deployments SET score_threshold = 1 WHERE score_threshold > 1")


def downgrade() -> None:
    pass
