"""Service accounts: non-human principals of a tenant that own API keys (and, through them, conversations).

Managed by tenant admins. Deleting one deletes its keys (database cascade) and forgets its grants.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain import api_keys
from server.domain.principal import Principal
from server.domain.validation import MAX_DESCRIPTION, limit_text, require_name, require_nonempty
from server.errors import NotFound
from server.store.db import integrity_as, new_id
from server.store.models import ApiKeyRow, ServiceAccountRow

__all__ = ["ServiceAccount", "create", "delete", "get", "list_all", "update", "view"]


@dataclass(frozen=True)
class ServiceAccount:
    id: str
    tenant_id: str
    name: str
    description: str
    created_at: datetime
    created_by: str


def view(row: ServiceAccountRow) -> ServiceAccount:
    return ServiceAccount(row.id, row.tenant_id, row.name, row.description, row.created_at, row.created_by)


def _description(value: str) -> str:
    return limit_text(value, "description", MAX_DESCRIPTION)


async def _admin_row(session: AsyncSession, principal: Principal, tenant_id: str, account_id: str) -> ServiceAccountRow:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    require_nonempty(account_id, "service_account_id")
    row = await session.get(ServiceAccountRow, account_id)
    if row is None or row.tenant_id != tenant_id:
        raise NotFound(f"service account {account_id!r} not found", field="service_account_id")
    return row


async def create(
    session: AsyncSession, principal: Principal, tenant_id: str, name: str, description: str
) -> ServiceAccount:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    name = require_name(name, "name")
    row = ServiceAccountRow(
        id=new_id("sa"),
        tenant_id=tenant_id,
        name=name,
        description=_description(description or ""),
        created_by=principal.subject_id,
    )
    session.add(row)
    with integrity_as(f"a service account named {name!r} already exists in this tenant", field="name"):
        await session.flush()
    return view(row)


async def get(session: AsyncSession, principal: Principal, tenant_id: str, account_id: str) -> ServiceAccount:
    return view(await _admin_row(session, principal, tenant_id, account_id))


async def list_all(session: AsyncSession, principal: Principal, tenant_id: str) -> list[ServiceAccount]:
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    rows = await session.scalars(
        select(ServiceAccountRow).where(ServiceAccountRow.tenant_id == tenant_id).order_by(ServiceAccountRow.name)
    )
    return [view(r) for r in rows]


async def update(
    session: AsyncSession, principal: Principal, tenant_id: str, account_id: str, description: str | None
) -> ServiceAccount:
    row = await _admin_row(session, principal, tenant_id, account_id)
    if description is not None:
        row.description = _description(description)
    await session.flush()
    return view(row)


async def delete(session: AsyncSession, principal: Principal, tenant_id: str, account_id: str) -> None:
    row = await _admin_row(session, principal, tenant_id, account_id)
    await api_keys.delete_keys(session, ApiKeyRow.service_account_id == row.id)
    await permissions.forget_subject(session, permissions.SubjectType.SERVICE_ACCOUNT, row.id)
    await session.delete(row)
    await session.flush()
