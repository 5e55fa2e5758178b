"""resource uids: every resource gets an identity of its own, and what refers to a resource pins it

Why: resource names are one namespace a kind and are free again once a resource is deleted, and references named
their target by name alone. After a platform model behind a shared alias was deleted, a tenant admin could create
a tenant model under the same name and the alias (shared with every tenant) routed other tenants' prompts to it;
a preset agent's MCP servers and models could be taken over the same way. `resources.uid` is random and never
reused; `pins` ("kind:name" -> uid) on model aliases, preset agents and RAG deployments hold the uids of what they
named when saved, and a reference whose uid no longer matches is unresolved. Existing references pin what they
name now.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30 21:00:00
"""

from __future__ import annotations

import json
import secrets
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_MCP_SERVER = 4  # ResourceKind.MCP_SERVER


_PINNING = ("model_aliases", "preset_agents", "rag_deployments")


def upgrade() -> None:
    with op.batch_alter_table("resources") as batch:
        batch.add_column(sa.Column("uid", sa.String(length=32), nullable=True))
    for table in _PINNING:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("pins", sa.JSON(), nullable=True))

    bind = op.get_bind()
    resources = bind.execute(sa.text("SELECT kind, name FROM resources")).all()
    uids = {(int(kind), str(name)): secrets.token_hex(16) for kind, name in resources}
    if uids:
        bind.execute(
            sa.text("UPDATE resources SET uid = :uid WHERE kind = :kind AND name = :name"),
            [{"uid": uid, "kind": kind, "name": name} for (kind, name), uid in uids.items()],
        )
    public_ids = {str(pid): (int(kind), str(name)) for pid, kind, name in bind.execute(sa.text(_PUBLIC_IDS)).all()}

    def pins(named: list[tuple[int, str]]) -> str:
        return json.dumps({f"{kind}:{name}": uids[(kind, name)] for kind, name in named if (kind, name) in uids})

    # Alias target kinds (ModelAliasTargetKind) are numbered as the resource kinds they name.
    for name, kind, target in bind.execute(sa.text("SELECT name, target_kind, target_name FROM model_aliases")).all():
        _set_pins(bind, "model_aliases", "name", name, pins([(int(kind), str(target))]))
    for name, base_kind, base_name, guardrails, servers in bind.execute(sa.text(_AGENTS)).all():
        named = [(int(base_kind), str(base_name))]
        named += [(int(g[1]), str(g[2])) for g in _json(guardrails)]
        named += [(_MCP_SERVER, str(server)) for server in _json(servers)]
        _set_pins(bind, "preset_agents", "name", name, pins(named))
    for rag_id, embedding, rerank in bind.execute(sa.text(_RAGS)).all():
        named = [public_ids[model] for model in (embedding, rerank) if model in public_ids]
        _set_pins(bind, "rag_deployments", "id", rag_id, pins(named))

    with op.batch_alter_table("resources") as batch:
        batch.alter_column("uid", existing_type=sa.String(length=32), nullable=False)
    for table in _PINNING:
        with op.batch_alter_table(table) as batch:
            batch.alter_column("pins", existing_type=sa.JSON(), nullable=False)


_PUBLIC_IDS = "SELECT public_model_id, kind, name FROM public_model_ids"
_AGENTS = "SELECT name, base_kind, base_name, output_guardrails, default_mcp_servers FROM preset_agents"
_RAGS = "SELECT id, embedding_model, rerank_model FROM rag_deployments"


def _set_pins(bind: sa.Connection, table: str, key: str, value: str, pins: str) -> None:
    statement = f"UPDATE {table} SET pins = :pins WHERE {key} = :value"  # noqa: S608 (this file's own names)
    bind.execute(sa.text(statement), {"pins": pins, "value": value})


def _json(value: object) -> list[Any]:
    """A JSON column's value as the driver returns it (decoded on PostgreSQL, text on SQLite)."""
    if value is None:
        return []
    decoded = json.loads(value) if isinstance(value, str) else value
    return list(decoded) if isinstance(decoded, list) else []


def downgrade() -> None:
    for table in _PINNING:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("pins")
    with op.batch_alter_table("resources") as batch:
        batch.drop_column("uid")
