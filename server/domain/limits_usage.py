"""Reads of the current use of every limit that applies to one API key's calls, or of the limits set on one scope
(GetLimitUsage; the console shows the latter beside a service account, a tenant or a model).

The counts come from the counter store the gateways share (Redis). Without one, each gateway process counts on its
own and the management server cannot see those counts: `used`/`remaining` are then absent, never a made-up zero.
They are absent too while the store is unreachable (logged at most once a minute): the limits themselves come from
the database, and an outage of the store is never an error, here as in the gateway.
Soft-budget crossings come from the database, where the gateways record them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.limits import BudgetPeriod, Metric, Policy, Scope, ScopeKind, tenant_policies, validated_scope
from server.domain.limits_plan import Applied, Caller, applied_limits
from server.domain.principal import Principal
from server.errors import InvalidArgument
from server.failure_log import RepeatedFailure
from server.store.limit_counters import Counters, CountersUnavailable
from server.store.models import LimitSoftCrossingRow, PresetAgentRow

__all__ = ["LimitUse", "limit_usage"]

log = logging.getLogger("switchboard.limits")


@dataclass(frozen=True)
class LimitUse:
    policy: Policy
    metric: Metric
    limit: int
    used: int | None
    reset_at: datetime | None
    budget_period: BudgetPeriod
    soft_limit: int | None
    soft_crossed_at: datetime | None

    @property
    def remaining(self) -> int | None:
        return max(0, self.limit - self.used) if self.used is not None else None


async def _crossings(
    session: AsyncSession, tenant_id: str, budgets: list[Applied]
) -> dict[tuple[int, int, str, str], datetime]:
    if not budgets:
        return {}
    rows = await session.execute(
        select(LimitSoftCrossingRow).where(
            LimitSoftCrossingRow.tenant_id == tenant_id,
            LimitSoftCrossingRow.period.in_({a.period for a in budgets}),
        )
    )
    return {(r.tier, r.scope_kind, r.scope_id, r.period): r.crossed_at for (r,) in rows}


def _scope_caller(tenant_id: str, scope: Scope) -> Caller:
    """A caller that exactly this scope's policies apply to (with the tenant's): the counters it names are the
    scope's own, whichever key made the calls."""
    return Caller(
        tenant_id,
        scope.id if scope.kind == ScopeKind.API_KEY else "",
        scope.id if scope.kind == ScopeKind.SERVICE_ACCOUNT else None,
        scope.id if scope.kind == ScopeKind.MODEL else None,
    )


async def _base_model(session: AsyncSession, model: str) -> str | None:
    """The model a preset agent runs on, when `model` names one: its limits hold for the agent's calls (gateway.calls),
    so a read of what limits a key's calls of the agent lists them too."""
    if not model:
        return None
    query = select(PresetAgentRow.base_public_model_id).where(PresetAgentRow.public_model_id == model)
    return await session.scalar(query)


async def limit_usage(
    session: AsyncSession,
    principal: Principal,
    *,
    tenant_id: str,
    api_key_id: str,
    model: str,
    counters: Counters | None,
    now: float,
    scope: Scope | None = None,
) -> list[LimitUse]:
    """The use of every limit on one key's calls; with `scope`, of the limits set on that scope only (tenant admins:
    the policies themselves are theirs to read)."""
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    if scope is None:
        key_id, service_account_id = await permissions.require_usage_reader(session, principal, tenant_id, api_key_id)
        caller = Caller(tenant_id, key_id, service_account_id, model or None, await _base_model(session, model))
        policies = await tenant_policies(session, tenant_id)
    else:
        if api_key_id or model:
            field = "api_key_id" if api_key_id else "model"
            raise InvalidArgument(f"{field} must be empty when scope is set", field=field)
        scope = validated_scope(scope)
        await permissions.require_tenant_admin(session, principal, tenant_id)
        caller = _scope_caller(tenant_id, scope)
        policies = await tenant_policies(session, tenant_id, scope)
    return await _uses(session, tenant_id, applied_limits(policies, caller, now), counters, now)


_store_reads = RepeatedFailure(log, "reading the rate-limit counter store for a usage read")


async def _counts(applied: list[Applied], counters: Counters, now: float) -> list[int | None]:
    """Each applied limit's count in the shared store, in order; all None when the store cannot be reached."""
    windowed = [i for i, a in enumerate(applied) if a.window is not None]
    leased = [i for i, a in enumerate(applied) if a.window is None]
    try:
        values = await counters.peek([applied[i].counter for i in windowed], [applied[i].counter for i in leased], now)
    except CountersUnavailable:
        _store_reads.failed("the rate-limit counter store is unreachable: usage is answered without use")
        return [None] * len(applied)
    _store_reads.succeeded()
    used: list[int | None] = [None] * len(applied)
    for index, count in zip(windowed + leased, values, strict=True):
        used[index] = count
    return used


async def _uses(
    session: AsyncSession, tenant_id: str, applied: list[Applied], counters: Counters | None, now: float
) -> list[LimitUse]:
    used = await _counts(applied, counters, now) if counters is not None and applied else [None] * len(applied)
    budgets = [a for a in applied if a.metric == Metric.TOKEN_BUDGET]
    crossed = await _crossings(session, tenant_id, budgets)
    found = []
    for a, value in zip(applied, used, strict=True):
        policy = a.policy
        is_budget = a.metric == Metric.TOKEN_BUDGET
        found.append(
            LimitUse(
                policy=policy,
                metric=a.metric,
                limit=a.limit,
                used=value,
                reset_at=datetime.fromtimestamp(a.window.end, UTC) if a.window is not None else None,
                budget_period=policy.limits.budget_period if is_budget else BudgetPeriod.UNSPECIFIED,
                soft_limit=policy.soft_budget if is_budget else None,
                soft_crossed_at=crossed.get((int(policy.tier), int(policy.scope.kind), policy.scope.id, a.period))
                if is_budget
                else None,
            )
        )
    return found
