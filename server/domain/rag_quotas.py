"""RAG storage quotas (spec: platform.ragmanager.v1.RagQuotaService) and usage reports against them.

Quotas
- Per RAG (`SetQuota`, `BatchSetQuota`): a RAG of the tenant; kept on its rag_deployments row.
- Per tenant (`SetTenantQuota`): the most all of the tenant's RAGs may store together.
- Tenant default (`SetDefaultQuota`): the quota of every RAG of the tenant that has none of its own.
A quota is a resource quantity (server.domain.quantities), stored as bytes and as the string that was set, which is
what reads echo back. Lowering a quota below current usage is allowed: it refuses further uploads, deletes nothing.
Platform-owned RAGs belong to no tenant and have no quota (their usage is still counted).
"The quota" of a RAG in reads (GetQuota, GetTenantUsage) is the one that applies: its own, else the tenant default,
absent when neither is set. Usage is the stored file bytes per RAG (`used_bytes`, maintained by
server.domain.rag_storage); tenant totals are the exact sum over the tenant's RAGs.

Gates (the spec leaves them unshown; our choice)
- Writes (Set*, Unset*, Batch*) need the platform role can_manage_tenants: quotas are a platform operator's budget.
- Tenant reads (GetQuota, GetTenantQuota, GetDefaultQuota, GetTenantUsage) need tenant admin on the tenant (tenant
  Admins and their personal keys, platform operators with can_manage_tenants).
- ListTenantsUsage spans every tenant and needs can_manage_tenants.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.principal import Principal
from server.domain.quantities import parse_bytes
from server.domain.validation import require_nonempty
from server.errors import InvalidArgument, NotFound
from server.store.db import insert_ignoring_duplicates
from server.store.models import RagDeploymentRow, RagTenantQuotaRow, TenantRow, utcnow

__all__ = [
    "Quota",
    "ServiceUsage",
    "TenantSummary",
    "TenantUsage",
    "default_quota",
    "get_quota",
    "set_default_quota",
    "set_quotas",
    "set_tenant_quota",
    "tenant_quota",
    "tenant_usage",
    "tenants_usage",
]

_MAX_IDS = 10_000

PLATFORM_ROLE = "can_manage_tenants"
Rag = RagDeploymentRow


@dataclass(frozen=True)
class Quota:
    bytes: int
    text: str  # the quantity as it was set


@dataclass(frozen=True)
class ServiceUsage:
    id: str
    tenant_id: str
    quota: Quota | None  # the quota that applies: the RAG's own, else the tenant default
    used_bytes: int


@dataclass(frozen=True)
class TenantUsage:
    tenant_id: str
    services: list[ServiceUsage]
    tenant_quota: Quota | None
    total_used_bytes: int


@dataclass(frozen=True)
class TenantSummary:
    tenant_id: str
    tenant_name: str
    service_count: int
    total_used_bytes: int
    tenant_quota: Quota | None


def _quota(value_bytes: int | None, text: str | None) -> Quota | None:
    return Quota(value_bytes, text or str(value_bytes)) if value_bytes is not None else None


def parse_quota(value: str, field: str) -> Quota:
    return Quota(parse_bytes(value, field), value)


async def _existing_tenant(session: AsyncSession, tenant_id: str) -> str:
    if await session.get(TenantRow, tenant_id) is None:
        raise NotFound(f"tenant {tenant_id!r} not found", field="tenant_id")
    return tenant_id


async def _writer(session: AsyncSession, principal: Principal, tenant_id: str) -> str:
    """The write gate (can_manage_tenants), then the tenant acted on, which must exist."""
    permissions.require_platform_role(principal, PLATFORM_ROLE)
    return await _existing_tenant(session, permissions.resolve_tenant(principal, tenant_id))


async def _reader(session: AsyncSession, principal: Principal, tenant_id: str) -> str:
    """The tenant-read gate: tenant admin on the tenant (platform operators included)."""
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    return tenant_id


async def _tenant_limits(session: AsyncSession, tenant_id: str) -> RagTenantQuotaRow | None:
    return await session.get(RagTenantQuotaRow, tenant_id, populate_existing=True)


async def _upsert_limits(session: AsyncSession, tenant_id: str, **values: object) -> None:
    await insert_ignoring_duplicates(session, RagTenantQuotaRow, {"tenant_id": tenant_id, "updated_at": utcnow()})
    await session.execute(
        update(RagTenantQuotaRow)
        .where(RagTenantQuotaRow.tenant_id == tenant_id)
        .values(updated_at=utcnow(), **values)
        .execution_options(synchronize_session=False)
    )


def _ids(ids: Sequence[str], field: str) -> list[str]:
    if not ids or any(not i or not i.strip() for i in ids):
        raise InvalidArgument(f"{field} is required: name RAGs by id, none empty", field=field)
    wanted = list(dict.fromkeys(ids))
    if len(wanted) > _MAX_IDS:  # bound before the database: one bind parameter each
        raise InvalidArgument(f"{field} names at most {_MAX_IDS} RAGs per call", field=field)
    return wanted


async def set_quotas(
    session: AsyncSession,
    principal: Principal,
    *,
    tenant_id: str,
    ids: Sequence[str],
    quota: str | None,
    ids_field: str = "ids",
) -> None:
    """Set (quota given) or remove (None) the own quota of each RAG; every id must be a RAG of the tenant, else
    nothing changes."""
    tenant_id = await _writer(session, principal, tenant_id)
    wanted = _ids(ids, ids_field)
    parsed = parse_quota(quota, "quota") if quota is not None else None
    found = set(await session.scalars(select(Rag.id).where(Rag.id.in_(wanted), Rag.tenant_id == tenant_id)))
    missing = [i for i in wanted if i not in found]
    if missing:
        more = f" and {len(missing) - 10} more" if len(missing) > 10 else ""
        named = ", ".join(repr(m) for m in missing[:10]) + more
        raise NotFound(f"no RAG {named} in tenant {tenant_id!r}", field=ids_field)
    await session.execute(
        update(Rag)
        .where(Rag.id.in_(wanted))
        .values(quota_bytes=parsed.bytes if parsed else None, quota=parsed.text if parsed else None)
        .execution_options(synchronize_session=False)
    )


async def get_quota(session: AsyncSession, principal: Principal, *, tenant_id: str, rag_id: str) -> ServiceUsage:
    tenant_id = await _reader(session, principal, tenant_id)
    rag_id = require_nonempty(rag_id, "id")
    row = (
        await session.execute(
            select(Rag.used_bytes, Rag.quota_bytes, Rag.quota).where(Rag.id == rag_id, Rag.tenant_id == tenant_id)
        )
    ).one_or_none()
    if row is None:
        raise NotFound(f"no RAG {rag_id!r} in tenant {tenant_id!r}", field="id")
    limits = await _tenant_limits(session, tenant_id)
    default = _quota(limits.default_quota_bytes, limits.default_quota) if limits else None
    return ServiceUsage(rag_id, tenant_id, _quota(row.quota_bytes, row.quota) or default, int(row.used_bytes))


async def set_tenant_quota(session: AsyncSession, principal: Principal, *, tenant_id: str, quota: str | None) -> None:
    tenant_id = await _writer(session, principal, tenant_id)
    parsed = parse_quota(quota, "quota") if quota is not None else None
    await _upsert_limits(
        session, tenant_id, quota_bytes=parsed.bytes if parsed else None, quota=parsed.text if parsed else None
    )


async def tenant_quota(session: AsyncSession, principal: Principal, *, tenant_id: str) -> tuple[str, Quota | None]:
    tenant_id = await _reader(session, principal, tenant_id)
    limits = await _tenant_limits(session, tenant_id)
    return tenant_id, _quota(limits.quota_bytes, limits.quota) if limits else None


async def set_default_quota(session: AsyncSession, principal: Principal, *, tenant_id: str, quota: str | None) -> None:
    tenant_id = await _writer(session, principal, tenant_id)
    parsed = parse_quota(quota, "default_quota") if quota is not None else None
    await _upsert_limits(
        session,
        tenant_id,
        default_quota_bytes=parsed.bytes if parsed else None,
        default_quota=parsed.text if parsed else None,
    )


async def default_quota(session: AsyncSession, principal: Principal, *, tenant_id: str) -> tuple[str, Quota | None]:
    tenant_id = await _reader(session, principal, tenant_id)
    limits = await _tenant_limits(session, tenant_id)
    return tenant_id, _quota(limits.default_quota_bytes, limits.default_quota) if limits else None


async def tenant_usage(session: AsyncSession, principal: Principal, *, tenant_id: str) -> TenantUsage:
    tenant_id = await _reader(session, principal, tenant_id)
    limits = await _tenant_limits(session, tenant_id)
    default = _quota(limits.default_quota_bytes, limits.default_quota) if limits else None
    rows = (
        await session.execute(
            select(Rag.id, Rag.used_bytes, Rag.quota_bytes, Rag.quota)
            .where(Rag.tenant_id == tenant_id)
            .order_by(Rag.id)
        )
    ).all()
    services = [
        ServiceUsage(r.id, tenant_id, _quota(r.quota_bytes, r.quota) or default, int(r.used_bytes)) for r in rows
    ]
    return TenantUsage(
        tenant_id=tenant_id,
        services=services,
        tenant_quota=_quota(limits.quota_bytes, limits.quota) if limits else None,
        total_used_bytes=sum(s.used_bytes for s in services),
    )


async def tenants_usage(session: AsyncSession, principal: Principal) -> list[TenantSummary]:
    """One summary per tenant (tenants without RAGs included), by tenant name, in one query."""
    permissions.require_platform_scope(principal, PLATFORM_ROLE)
    usage = (
        select(
            Rag.tenant_id.label("tenant_id"),
            func.count(Rag.id).label("rag_count"),
            func.coalesce(func.sum(Rag.used_bytes), 0).label("used_total"),
        )
        .where(Rag.tenant_id.is_not(None))
        .group_by(Rag.tenant_id)
        .subquery()
    )
    rows = (
        await session.execute(
            select(
                TenantRow.id,
                TenantRow.name,
                usage.c.rag_count,
                usage.c.used_total,
                RagTenantQuotaRow.quota_bytes,
                RagTenantQuotaRow.quota,
            )
            .outerjoin(usage, usage.c.tenant_id == TenantRow.id)
            .outerjoin(RagTenantQuotaRow, RagTenantQuotaRow.tenant_id == TenantRow.id)
            .order_by(TenantRow.name)
        )
    ).all()
    return [
        TenantSummary(
            tenant_id=r.id,
            tenant_name=r.name,
            service_count=int(r.rag_count or 0),
            total_used_bytes=int(r.used_total or 0),
            tenant_quota=_quota(r.quota_bytes, r.quota),
        )
        for r in rows
    ]
