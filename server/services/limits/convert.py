"""switchboard.limits.v1 messages <-> the limits domain's values, nothing else."""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

from gen.switchboard.limits.v1 import limit_policy_pb2 as pb
from server.domain.limits import BudgetPeriod, LimitValues, Policy, Scope, ScopeKind, Tier
from server.domain.limits_usage import LimitUse
from server.errors import InvalidArgument
from server.services.tenants.convert import enum, timestamp

__all__ = ["limit_use", "limit_values", "policy", "scope", "tier"]

_E = TypeVar("_E", bound=IntEnum)
_FIELDS = ("requests_per_minute", "tokens_per_minute", "concurrent_requests", "token_budget", "soft_budget")


def _known(kind: type[_E], value: int, field: str, *, allow_unspecified: bool = False) -> _E:
    if allow_unspecified and value == 0:
        return kind(0)
    try:
        return kind(value)
    except ValueError:
        raise InvalidArgument(f"{field} must be set to one of its defined values", field=field) from None


def tier(value: int) -> Tier:
    return _known(Tier, value, "tier")


def scope(value: pb.LimitScope) -> Scope:
    return Scope(_known(ScopeKind, value.kind, "scope.kind"), value.id)


def limit_values(value: pb.Limits) -> LimitValues:
    quantities = {name: getattr(value, name) for name in _FIELDS if value.HasField(name)}
    period = _known(BudgetPeriod, value.budget_period, "limits.budget_period", allow_unspecified=True)
    return LimitValues(quantities, period)


def _scope(value: Scope) -> pb.LimitScope:
    return pb.LimitScope(kind=enum(pb.LimitScopeKind, value.kind), id=value.id)


def policy(value: Policy) -> pb.LimitPolicy:
    return pb.LimitPolicy(
        tenant_id=value.tenant_id,
        tier=enum(pb.LimitTier, value.tier),
        scope=_scope(value.scope),
        limits=pb.Limits(budget_period=enum(pb.BudgetPeriod, value.limits.budget_period), **value.limits.quantities),
        update_time=timestamp(value.updated_at),
    )


def limit_use(value: LimitUse) -> pb.LimitUsage:
    return pb.LimitUsage(
        tier=enum(pb.LimitTier, value.policy.tier),
        scope=_scope(value.policy.scope),
        metric=enum(pb.LimitMetric, value.metric),
        limit=value.limit,
        used=value.used,
        remaining=value.remaining,
        reset_time=timestamp(value.reset_at) if value.reset_at is not None else None,
        budget_period=enum(pb.BudgetPeriod, value.budget_period),
        soft_limit=value.soft_limit,
        soft_limit_crossed_time=timestamp(value.soft_crossed_at) if value.soft_crossed_at is not None else None,
    )
