"""Stored responses (/v1/responses with `store: true`): kept for retrieval, deletion and `previous_response_id`.

A stored response belongs to the principal that created it (its user, or the service account behind a key) within
the key's tenant; anyone else gets not_found, so response ids cannot be probed. Reading one passes the gate of
conversations first (`server.permissions.conversation_owner`): like a conversation, it is a private exchange with a
model in the tenant's context, so a member removed from the tenant no longer reads it (permission_denied), even with
a personal key that still authenticates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.principal import Principal
from server.errors import NotFound
from server.store.models import StoredResponseRow

__all__ = ["StoredResponse", "delete", "load", "save"]


@dataclass(frozen=True)
class StoredResponse:
    id: str
    body: dict[str, Any]
    input_items: list[Any]
    context: list[Any]
    mcp_listings: list[Any] = field(default_factory=list)


def _tenant(principal: Principal) -> str:
    return (principal.api_key.tenant_id if principal.api_key else principal.scoped_tenant_id) or ""


async def save(
    session: AsyncSession,
    principal: Principal,
    body: dict[str, Any],
    input_items: list[Any],
    context: list[Any],
    *,
    mcp_listings: list[Any] | None = None,
) -> None:
    session.add(
        StoredResponseRow(
            id=body["id"],
            tenant_id=_tenant(principal),
            owner=principal.subject_id,
            model_id=str(body.get("model", "")),
            body=body,
            input_items=input_items,
            context=context,
            mcp_listings=mcp_listings or [],
        )
    )
    await session.flush()


async def _row(session: AsyncSession, principal: Principal, response_id: str, field: str) -> StoredResponseRow:
    await permissions.conversation_owner(session, principal, "")
    row = await session.get(StoredResponseRow, response_id)
    if row is None or row.owner != principal.subject_id or row.tenant_id != _tenant(principal):
        raise NotFound(f"No response found with id '{response_id}'.", field=field)
    return row


async def load(session: AsyncSession, principal: Principal, response_id: str, *, field: str = "id") -> StoredResponse:
    row = await _row(session, principal, response_id, field)
    return StoredResponse(
        row.id, row.body, list(row.input_items or ()), list(row.context or ()), list(row.mcp_listings or ())
    )


async def delete(session: AsyncSession, principal: Principal, response_id: str) -> None:
    await session.delete(await _row(session, principal, response_id, "id"))
