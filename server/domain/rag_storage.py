"""RAG storage accounting and quota enforcement: what the RAG HTTP surfaces call around every stored byte.

Interface (for the upload and delete paths)

    await reserve_storage(session, rag_id=rag_id, nbytes=n)
        Before storing n bytes of file content in RAG `rag_id`: refuses with QuotaExceeded (Connect
        resource_exhausted / HTTP 429 through server.errors) when the RAG's used bytes + n would exceed its own quota
        (or, when it has none, its tenant's default quota), or when the tenant's total would exceed the tenant quota;
        otherwise adds n to the RAG's `used_bytes`. NotFound if the RAG does not exist; InvalidArgument if n < 0.
    await release_storage(session, rag_id=rag_id, nbytes=n)
        After deleting (or failing to keep) n bytes: subtracts n from `used_bytes` (never below 0). A RAG that no
        longer exists is ignored. Deleting a whole RAG needs no release: its row carries its usage.

Both only flush into the caller's transaction (`async with db.transaction() as session:`): call reserve_storage in
the transaction that records the file, so a rollback (a failed parse, a refused upload) gives the bytes back, and
call it before other writes to the RAG's row in that transaction (it takes the tenant's lock first; the same lock
order everywhere means no deadlock). Keep that transaction short: on SQLite it holds the database's write lock.

Why it is correct under concurrent uploads
    A reservation in a tenant first locks the tenant's `rag_tenant_quotas` row (SELECT … FOR UPDATE on PostgreSQL;
    on SQLite the preceding INSERT OR IGNORE takes the database write lock), so reservations of one tenant run one
    at a time and each sees every earlier one committed when it sums the tenant's usage. The RAG's own limit is a
    single conditional UPDATE … SET used_bytes = used_bytes + n WHERE used_bytes + n <= limit, which is atomic on
    its own (platform-owned RAGs, which have no tenant, rely on it alone). Releases only lower usage and take no
    tenant lock: a concurrent release can only make a reservation more conservative, never overshoot.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, case, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from server.errors import InvalidArgument, NotFound, QuotaExceeded
from server.invalidation import QUIET
from server.store.db import insert_ignoring_duplicates, transaction_memo
from server.store.models import RagDeploymentRow, RagTenantQuotaRow, utcnow

__all__ = ["release_storage", "reserve_storage"]

Rag = RagDeploymentRow


def _fits(nbytes: int, default_quota: int | None) -> ColumnElement[bool]:
    """The RAG's limit (its own quota, else the tenant default) leaves room for nbytes more."""
    if default_quota is None:
        return or_(Rag.quota_bytes.is_(None), Rag.used_bytes + nbytes <= Rag.quota_bytes)
    return Rag.used_bytes + nbytes <= func.coalesce(Rag.quota_bytes, default_quota)


async def _lock_tenant(session: AsyncSession, tenant_id: str) -> RagTenantQuotaRow:
    """The tenant's quota row, locked until the transaction ends: taken once per transaction, since the lock and the
    row's limits hold until then."""
    locked = transaction_memo(session, "rag_locked_tenants")
    if tenant_id not in locked:
        locked[tenant_id] = await _take_tenant_lock(session, tenant_id)
    row: RagTenantQuotaRow = locked[tenant_id]
    return row


async def _take_tenant_lock(session: AsyncSession, tenant_id: str) -> RagTenantQuotaRow:
    await insert_ignoring_duplicates(session, RagTenantQuotaRow, {"tenant_id": tenant_id, "updated_at": utcnow()})
    row = await session.scalar(
        select(RagTenantQuotaRow)
        .where(RagTenantQuotaRow.tenant_id == tenant_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    assert row is not None, "inserted just above"
    return row


async def _tenant_used(session: AsyncSession, tenant_id: str) -> int:
    total = await session.scalar(select(func.coalesce(func.sum(Rag.used_bytes), 0)).where(Rag.tenant_id == tenant_id))
    return int(total or 0)


async def reserve_storage(session: AsyncSession, *, rag_id: str, nbytes: int) -> None:
    """Account nbytes more to the RAG, or refuse with QuotaExceeded (see the module docstring)."""
    if nbytes < 0:
        raise InvalidArgument("nbytes must not be negative", field="nbytes")
    tenants = transaction_memo(session, "rag_tenants")  # a RAG's tenant never changes; its row is kept to the end
    if rag_id not in tenants:
        tenants[rag_id] = (await session.execute(select(Rag.tenant_id).where(Rag.id == rag_id))).one_or_none()
    tenant_id = tenants[rag_id]
    if tenant_id is None:
        raise NotFound(f"RAG {rag_id!r} not found", field="id")
    default_quota: int | None = None
    if tenant_id[0] is not None:
        limits = await _lock_tenant(session, tenant_id[0])
        default_quota = limits.default_quota_bytes
        if limits.quota_bytes is not None:
            used = await _tenant_used(session, tenant_id[0])
            if used + nbytes > limits.quota_bytes:
                raise QuotaExceeded(
                    f"storing {nbytes} more bytes would exceed the tenant's RAG storage quota of {limits.quota}"
                    f" ({limits.quota_bytes} bytes; {used} used)"
                )
    result = await session.execute(
        update(Rag)
        .where(Rag.id == rag_id, _fits(nbytes, default_quota))
        .values(used_bytes=Rag.used_bytes + nbytes)
        .execution_options(synchronize_session=False, **QUIET)  # accounting no cache holds: invalidates nothing
    )
    if result.rowcount == 0:  # type: ignore[attr-defined]
        await _refuse(session, rag_id, nbytes)


async def _refuse(session: AsyncSession, rag_id: str, nbytes: int) -> None:
    row = (
        await session.execute(
            select(Rag.used_bytes, Rag.quota_bytes, Rag.quota, RagTenantQuotaRow.default_quota)
            .outerjoin(RagTenantQuotaRow, RagTenantQuotaRow.tenant_id == Rag.tenant_id)
            .where(Rag.id == rag_id)
        )
    ).one_or_none()
    if row is None:  # deleted meanwhile
        raise NotFound(f"RAG {rag_id!r} not found", field="id")
    which = (
        f"its storage quota of {row.quota}"
        if row.quota is not None
        else f"the tenant's default RAG quota of {row.default_quota}"
    )
    raise QuotaExceeded(
        f"storing {nbytes} more bytes in RAG {rag_id!r} would exceed {which} ({row.used_bytes} bytes used)"
    )


async def release_storage(session: AsyncSession, *, rag_id: str, nbytes: int) -> None:
    """Give back nbytes of the RAG's usage (never below zero)."""
    if nbytes < 0:
        raise InvalidArgument("nbytes must not be negative", field="nbytes")
    if nbytes == 0:
        return
    await session.execute(
        update(Rag)
        .where(Rag.id == rag_id)
        .values(used_bytes=case((Rag.used_bytes >= nbytes, Rag.used_bytes - nbytes), else_=0))
        .execution_options(synchronize_session=False, **QUIET)
    )
