"""Rate limits, concurrency caps and token budgets (issue 25): policies, who may set them, and which apply to a call.

A policy is the limits one *tier* sets on one *scope* of a tenant:
- scopes: the tenant (every call with any of its keys), a service account (calls with its keys), an API key, and a
  model as the tenant uses it (calls naming that publicModelId);
- tiers: PLATFORM (set by a platform operator, can_manage_tenants) and TENANT (set by a tenant admin). Every policy
  that applies to a call is enforced and the tightest limit wins, so a tenant admin can narrow what the operator
  allowed but never widen it; a tenant-tier value above the operator's tenant-wide value is refused outright.
- limits: requests per minute, tokens per minute, concurrent requests, and a token budget per UTC day, ISO week or
  month with an optional soft threshold (crossing it is recorded, nothing is refused). Each is a resource quantity
  (`600`, `10k`, `2.5M`; server.domain.quantities), kept as its value and as the string that was set.
Keys never set limits (server.permissions.limits). Counting and enforcement are the gateway's (gateway/limits/).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.principal import Principal
from server.domain.quantities import parse_bytes
from server.errors import InvalidArgument, NotFound
from server.store.keyset import Window
from server.store.models import (
    ApiKeyRow,
    LimitPolicyRow,
    LimitSoftCrossingRow,
    PublicModelIdRow,
    ServiceAccountRow,
    TenantRow,
    utcnow,
)

__all__ = [
    "METRIC_FIELDS",
    "BudgetPeriod",
    "LimitValues",
    "Metric",
    "Policy",
    "Scope",
    "ScopeKind",
    "Tier",
    "delete_policy",
    "list_policies",
    "set_policy",
    "tenant_policies",
    "validated_scope",
]


class ScopeKind(IntEnum):
    """Numbers match switchboard.limits.v1.LimitScopeKind."""

    TENANT = 1
    SERVICE_ACCOUNT = 2
    API_KEY = 3
    MODEL = 4


class Tier(IntEnum):
    """Numbers match switchboard.limits.v1.LimitTier."""

    PLATFORM = 1
    TENANT = 2


class BudgetPeriod(IntEnum):
    """Numbers match switchboard.limits.v1.BudgetPeriod."""

    UNSPECIFIED = 0
    DAY = 1
    WEEK = 2
    MONTH = 3


class Metric(IntEnum):
    """Numbers match switchboard.limits.v1.LimitMetric."""

    REQUESTS_PER_MINUTE = 1
    TOKENS_PER_MINUTE = 2
    CONCURRENT_REQUESTS = 3
    TOKEN_BUDGET = 4


# The quantity fields of a policy, by the metric each limits (the soft budget limits nothing).
METRIC_FIELDS: dict[str, Metric] = {
    "requests_per_minute": Metric.REQUESTS_PER_MINUTE,
    "tokens_per_minute": Metric.TOKENS_PER_MINUTE,
    "concurrent_requests": Metric.CONCURRENT_REQUESTS,
    "token_budget": Metric.TOKEN_BUDGET,
}
_QUANTITY_FIELDS = (*METRIC_FIELDS, "soft_budget")
_MAX_SCOPE_ID = 128


@dataclass(frozen=True)
class Scope:
    kind: ScopeKind
    id: str = ""  # service account id, API key id or publicModelId; "" for the tenant


@dataclass(frozen=True)
class LimitValues:
    """The limits as set: quantity strings by field name (absent: no limit) and the budget's period."""

    quantities: dict[str, str] = field(default_factory=dict)
    budget_period: BudgetPeriod = BudgetPeriod.UNSPECIFIED

    def value(self, name: str) -> int | None:
        text = self.quantities.get(name)
        return parse_bytes(text, name) if text is not None else None


@dataclass(frozen=True)
class Policy:
    tenant_id: str
    tier: Tier
    scope: Scope
    limits: LimitValues
    updated_at: datetime
    # The parsed values, by field name; what the gateway enforces.
    values: dict[str, int] = field(default_factory=dict)

    @property
    def soft_budget(self) -> int | None:
        return self.values.get("soft_budget")


def _validated_values(limits: LimitValues) -> dict[str, int]:
    unknown = set(limits.quantities) - set(_QUANTITY_FIELDS)
    if unknown:
        raise InvalidArgument(f"unknown limit {sorted(unknown)[0]!r}", field="limits")
    values = {name: parse_bytes(text, f"limits.{name}") for name, text in limits.quantities.items()}
    # 0 is refused for every quantity: a limit of 0 would refuse every call, and a soft threshold of 0 is reached
    # before any call is made, so no call could ever be recorded crossing it.
    for name in _QUANTITY_FIELDS:
        if values.get(name) == 0:
            raise InvalidArgument(
                f"limits.{name} must be at least 1; leave it out for no limit", field=f"limits.{name}"
            )
    budget = values.get("token_budget")
    if budget is None:
        if limits.budget_period != BudgetPeriod.UNSPECIFIED or "soft_budget" in values:
            raise InvalidArgument(
                "limits.budget_period and limits.soft_budget need limits.token_budget", field="limits.token_budget"
            )
    elif limits.budget_period == BudgetPeriod.UNSPECIFIED:
        raise InvalidArgument("limits.budget_period is required with a token budget", field="limits.budget_period")
    soft = values.get("soft_budget")
    if soft is not None and budget is not None and soft > budget:
        raise InvalidArgument("limits.soft_budget must not exceed limits.token_budget", field="limits.soft_budget")
    return values


def _policy(row: LimitPolicyRow) -> Policy:
    limits = LimitValues(dict(row.quantities or {}), BudgetPeriod(row.budget_period))
    values = {
        name: value
        for name in _QUANTITY_FIELDS
        if (value := getattr(row, name)) is not None  # the columns are named after the fields
    }
    return Policy(
        row.tenant_id, Tier(row.tier), Scope(ScopeKind(row.scope_kind), row.scope_id), limits, row.updated_at, values
    )


def validated_scope(scope: Scope) -> Scope:
    if scope.kind == ScopeKind.TENANT:
        if scope.id:
            raise InvalidArgument("scope.id must be empty for a tenant scope", field="scope.id")
        return scope
    if not scope.id or not scope.id.strip():
        raise InvalidArgument("scope.id is required for this scope kind", field="scope.id")
    if len(scope.id) > _MAX_SCOPE_ID:
        raise InvalidArgument(f"scope.id is longer than {_MAX_SCOPE_ID} characters", field="scope.id")
    return scope


async def _require_scope_target(session: AsyncSession, tenant_id: str, scope: Scope) -> None:
    """The scope's key, service account or model must exist (in the tenant), so a typo never sets a dead policy."""
    if scope.kind == ScopeKind.API_KEY:
        found = await session.scalar(
            select(ApiKeyRow.id).where(ApiKeyRow.id == scope.id, ApiKeyRow.tenant_id == tenant_id)
        )
        what = "API key"
    elif scope.kind == ScopeKind.SERVICE_ACCOUNT:
        found = await session.scalar(
            select(ServiceAccountRow.id).where(
                ServiceAccountRow.id == scope.id, ServiceAccountRow.tenant_id == tenant_id
            )
        )
        what = "service account"
    elif scope.kind == ScopeKind.MODEL:
        found = await session.scalar(
            select(PublicModelIdRow.public_model_id).where(PublicModelIdRow.public_model_id == scope.id)
        )
        what = "model"
    else:
        return
    if found is None:
        raise NotFound(f"no {what} {scope.id!r} in tenant {tenant_id!r}", field="scope.id")


async def _existing_tenant(session: AsyncSession, tenant_id: str) -> str:
    if await session.get(TenantRow, tenant_id) is None:
        raise NotFound(f"tenant {tenant_id!r} not found", field="tenant_id")
    return tenant_id


async def _within_ceiling(session: AsyncSession, tenant_id: str, values: dict[str, int], limits: LimitValues) -> None:
    """A tenant-tier limit may not exceed the operator's tenant-wide limit of the same kind (budgets: same period)."""
    ceiling_row = await session.get(LimitPolicyRow, (tenant_id, int(Tier.PLATFORM), int(ScopeKind.TENANT), ""))
    if ceiling_row is None:
        return
    ceiling = _policy(ceiling_row)
    for name in METRIC_FIELDS:
        mine, theirs = values.get(name), ceiling.values.get(name)
        if name == "token_budget" and limits.budget_period != ceiling.limits.budget_period:
            continue
        if mine is not None and theirs is not None and mine > theirs:
            raise InvalidArgument(
                f"limits.{name} exceeds the platform operator's limit for the tenant "
                f"({ceiling.limits.quantities.get(name)})",
                field=f"limits.{name}",
            )


async def _forget_crossings(session: AsyncSession, tenant_id: str, tier: Tier, scope: Scope) -> None:
    """Drop the soft-threshold crossings recorded for one policy. A crossing is of the threshold that was set (its row
    does not keep which), so one a policy no longer sets must not be reported as crossed, nor stop the crossing of
    the new one this period from being recorded (once per period: the gateway inserts it ignoring duplicates)."""
    await session.execute(
        delete(LimitSoftCrossingRow).where(
            LimitSoftCrossingRow.tenant_id == tenant_id,
            LimitSoftCrossingRow.tier == int(tier),
            LimitSoftCrossingRow.scope_kind == int(scope.kind),
            LimitSoftCrossingRow.scope_id == scope.id,
        )
    )


async def set_policy(
    session: AsyncSession, principal: Principal, *, tenant_id: str, tier: Tier, scope: Scope, limits: LimitValues
) -> Policy:
    """Set (replace) one tier's limits on one scope; at least one limit must be given."""
    tenant_id = await permissions.require_limit_writer(
        session, principal, tenant_id, platform_tier=tier == Tier.PLATFORM
    )
    await _existing_tenant(session, tenant_id)
    scope = validated_scope(scope)
    values = _validated_values(limits)
    if not values:
        raise InvalidArgument("limits must set at least one limit; DeleteLimitPolicy removes a policy", field="limits")
    await _require_scope_target(session, tenant_id, scope)
    if tier == Tier.TENANT:
        await _within_ceiling(session, tenant_id, values, limits)
    key = (tenant_id, int(tier), int(scope.kind), scope.id)
    row = await session.get(LimitPolicyRow, key)
    if row is not None and row.soft_budget != values.get("soft_budget"):
        await _forget_crossings(session, tenant_id, tier, scope)
    if row is None:
        row = LimitPolicyRow(tenant_id=tenant_id, tier=int(tier), scope_kind=int(scope.kind), scope_id=scope.id)
        session.add(row)
    for name in _QUANTITY_FIELDS:
        setattr(row, name, values.get(name))
    row.budget_period = int(limits.budget_period)
    row.quantities = dict(limits.quantities)
    row.updated_at = utcnow()
    await session.flush()
    return _policy(row)


async def delete_policy(
    session: AsyncSession, principal: Principal, *, tenant_id: str, tier: Tier, scope: Scope
) -> None:
    tenant_id = await permissions.require_limit_writer(
        session, principal, tenant_id, platform_tier=tier == Tier.PLATFORM
    )
    scope = validated_scope(scope)
    deleted = await session.execute(
        delete(LimitPolicyRow).where(
            LimitPolicyRow.tenant_id == tenant_id,
            LimitPolicyRow.tier == int(tier),
            LimitPolicyRow.scope_kind == int(scope.kind),
            LimitPolicyRow.scope_id == scope.id,
        )
    )
    if getattr(deleted, "rowcount", 0) == 0:
        raise NotFound("no such limit policy", field="scope")
    await _forget_crossings(session, tenant_id, tier, scope)


# The order policies are listed in: the primary key's after the tenant, so a keyset page is a range of it.
LIST_ORDER = (LimitPolicyRow.tier, LimitPolicyRow.scope_kind, LimitPolicyRow.scope_id)


async def tenant_policies(
    session: AsyncSession, tenant_id: str, scope: Scope | None = None, window: Window | None = None
) -> list[Policy]:
    """Every policy of a tenant, or only those set on `scope` (both tiers), on LIST_ORDER (a window: one keyset page
    of them); no gate (the gateway's enforcement and the gated reads call it)."""
    query = select(LimitPolicyRow).where(LimitPolicyRow.tenant_id == tenant_id)
    if scope is not None:
        # Both tiers named, so the primary key (tenant, tier, kind, id) finds the scope's rows in one probe per tier
        # instead of a walk through every policy of the tenant (one per key, for a tenant that limits its keys).
        query = query.where(
            LimitPolicyRow.tier.in_([int(t) for t in Tier]),
            LimitPolicyRow.scope_kind == int(scope.kind),
            LimitPolicyRow.scope_id == scope.id,
        )
    query = query.order_by(*LIST_ORDER)
    if window is not None:
        query = window.apply(query, *LIST_ORDER)
    return [_policy(r) for r in await session.scalars(query)]


async def list_policies(
    session: AsyncSession,
    principal: Principal,
    *,
    tenant_id: str,
    scope: Scope | None = None,
    window: Window | None = None,
) -> list[Policy]:
    """A tenant's policies, or with `scope` those set on exactly that scope (a window: one keyset page of them); the
    same readers either way."""
    if scope is not None:
        scope = validated_scope(scope)
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_tenant_admin(session, principal, tenant_id)
    return await tenant_policies(session, tenant_id, scope, window)
