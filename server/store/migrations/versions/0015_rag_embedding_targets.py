"""RAG embedding targets: a RAG keeps the model its embedding model resolved to, not where an alias points later

Why: a RAG named its embedding model by public id, and when that id was an alias the RAG followed the alias: an
operator repointing the alias at another model of the same vector size silently changed the model that embedded the
RAG's new chunks and its queries, mixing two models' vectors in one index (the spec: changing the embedding model of
an existing RAG is rejected). `embedding_target_kind`/`embedding_target_name` name the model itself, pinned in the
RAG's `pins` (server.domain.resource_pins). Existing RAGs keep the model they name now: an alias's target as the
alias pinned it (an alias whose target is gone pins nothing, and the RAG stays refused); a RAG whose model is gone
records none.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-03 08:00:00
"""

from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_MODEL_KINDS = (1, 2)  # ResourceKind.MODEL_DEPLOYMENT, EXTERNAL_MODEL
_MODEL_ALIAS = 6  # ResourceKind.MODEL_ALIAS
_RAGS = (
    "SELECT r.id, r.pins, p.kind, p.name FROM rag_deployments r"
    " JOIN public_model_ids p ON p.public_model_id = r.embedding_model"
)
_ALIASES = "SELECT name, target_kind, target_name, pins FROM model_aliases"


def upgrade() -> None:
    with op.batch_alter_table("rag_deployments") as batch:
        batch.add_column(sa.Column("embedding_target_kind", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("embedding_target_name", sa.String(length=128), nullable=True))

    bind = op.get_bind()
    # Alias target kinds (ModelAliasTargetKind) are numbered as the resource kinds they name.
    aliases = {
        str(name): (int(kind), str(target), _json(pins)) for name, kind, target, pins in bind.execute(sa.text(_ALIASES))
    }
    for rag_id, pins, kind, name in bind.execute(sa.text(_RAGS)).all():
        pinned = _json(pins)
        if int(kind) in _MODEL_KINDS:
            target = (int(kind), str(name))
        elif int(kind) == _MODEL_ALIAS and str(name) in aliases:
            target_kind, target_name, alias_pins = aliases[str(name)]
            target = (target_kind, target_name)
            key = f"{target_kind}:{target_name}"
            if key in alias_pins:
                pinned[key] = alias_pins[key]
        else:
            continue
        bind.execute(
            sa.text(
                "UPDATE rag_deployments SET embedding_target_kind = :kind, embedding_target_name = :name, pins = :pins"
                " WHERE id = :id"
            ),
            {"kind": target[0], "name": target[1], "pins": json.dumps(pinned), "id": rag_id},
        )


def _json(value: object) -> dict[str, str]:
    """A JSON object column's value as the driver returns it (decoded on PostgreSQL, text on SQLite)."""
    if value is None:
        return {}
    decoded = json.loads(value) if isinstance(value, str) else value
    return {str(k): str(v) for k, v in decoded.items()} if isinstance(decoded, dict) else {}


def downgrade() -> None:
    with op.batch_alter_table("rag_deployments") as batch:
        batch.drop_column("embedding_target_name")
        batch.drop_column("embedding_target_kind")
