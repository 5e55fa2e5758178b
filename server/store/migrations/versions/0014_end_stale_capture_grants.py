"""Content capture grants end with their holder's admin role: drop those whose user is no longer the tenant's admin

Why: a grant was only ignored while its user was not the tenant's admin, so making them admin again (which any tenant
admin may do) brought back what only an operator grants. Demoting or removing a member now ends their grant
(server.permissions.end_capture_grant); this ends the grants left from earlier demotions and removals.
No downgrade: the ended grants are not kept.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-03 02:00:00
"""

from __future__ import annotations

from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "DELETE FROM capture_grants WHERE NOT EXISTS (SELECT 1 FROM tenant_members m"
        " WHERE m.tenant_id = capture_grants.tenant_id AND m.user_id = capture_grants.user_id AND m.role = 3)"
    )


def downgrade() -> None:
    pass
