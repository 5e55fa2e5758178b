"""Which limits apply to a call, and the counters and windows they are counted in (shared by the gateway's enforcement
and the management server's usage reads, so both name the same counters).

Windows
- Requests and tokens per minute count in fixed one-minute windows aligned to the epoch minute (UTC): a limit of 600
  admits 600 per window, and the window's end is the reset time sent to clients.
- Token budgets count in calendar periods (UTC): a day, an ISO week starting Monday, a month.
- Concurrent requests are a count of leases in flight, with no window.
Counters
- One counter per (tenant, scope, metric, window): a platform-tier and a tenant-tier policy on the same scope count the
  same calls, so they share it and the lower limit applies (`merged`). Budget counters of different periods differ.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from server.domain.limits import METRIC_FIELDS, BudgetPeriod, Metric, Policy, ScopeKind

__all__ = [
    "Applied",
    "Caller",
    "Rule",
    "Window",
    "applied_limits",
    "budget_window",
    "counter",
    "minute_window",
    "rules",
    "window_of",
]

MINUTE = 60.0


@dataclass(frozen=True)
class Window:
    id: str  # part of the counter's name: m<epoch minute>, d2026-11-25, w2026-W48, M2026-11
    end: float  # epoch seconds when the window ends (its counter then resets)


@dataclass(frozen=True)
class Caller:
    """Who is calling, for matching scopes: the key's tenant, the key, its service account, the model named and, when
    that is a preset agent, the model it runs on."""

    tenant_id: str
    key_id: str
    service_account_id: str | None
    model: str | None  # None: leave per-model limits out (a usage read that names no model)
    base_model: str | None = None


@dataclass(frozen=True)
class Rule:
    """One limit of one policy that applies to a caller, whatever the time: its counter's name without the window."""

    policy: Policy
    metric: Metric
    limit: int
    base: str  # tenant|scope kind|scope id|metric

    @property
    def period(self) -> BudgetPeriod | None:
        """The budget's period; None for per-minute limits (and concurrency, which has no window)."""
        return self.policy.limits.budget_period if self.metric == Metric.TOKEN_BUDGET else None


@dataclass(frozen=True)
class Applied:
    """One limit of one policy, as it applies now."""

    policy: Policy
    metric: Metric
    limit: int
    counter: str
    window: Window | None  # None for concurrent requests

    @property
    def period(self) -> str:
        """The budget period's name (2026-11-25, 2026-W48, 2026-11), for soft-threshold records."""
        return self.window.id[1:] if self.window is not None else ""


def minute_window(now: float) -> Window:
    minute = int(now // MINUTE)
    return Window(f"m{minute}", (minute + 1) * MINUTE)


def budget_window(period: BudgetPeriod, now: float) -> Window:
    day = datetime.fromtimestamp(now, UTC).date()
    if period == BudgetPeriod.DAY:
        start, name = day, f"d{day.isoformat()}"
        end = start + timedelta(days=1)
    elif period == BudgetPeriod.WEEK:
        year, week, weekday = day.isocalendar()
        start, name = day - timedelta(days=weekday - 1), f"w{year}-W{week:02d}"
        end = start + timedelta(days=7)
    else:
        start, name = day.replace(day=1), f"M{day.year}-{day.month:02d}"
        end = start + timedelta(days=calendar.monthrange(day.year, day.month)[1])
    return Window(name, datetime(end.year, end.month, end.day, tzinfo=UTC).timestamp())


def _applies(policy: Policy, caller: Caller) -> bool:
    kind, scope_id = policy.scope.kind, policy.scope.id
    if kind == ScopeKind.TENANT:
        return True
    if kind == ScopeKind.API_KEY:
        return scope_id == caller.key_id
    if kind == ScopeKind.SERVICE_ACCOUNT:
        return scope_id == caller.service_account_id
    return scope_id in (caller.model, caller.base_model)


def rules(policies: Iterable[Policy], caller: Caller) -> list[Rule]:
    """Every limit of every policy that applies to the caller's calls."""
    found: list[Rule] = []
    for policy in policies:
        if not _applies(policy, caller):
            continue
        scope = f"{caller.tenant_id}|{int(policy.scope.kind)}|{policy.scope.id}"
        for name, metric in METRIC_FIELDS.items():
            limit = policy.values.get(name)
            if limit is not None:
                found.append(Rule(policy, metric, limit, f"{scope}|{int(metric)}"))
    return found


def counter(rule: Rule, window: Window | None) -> str:
    """The rule's counter in a window (concurrency counters have none)."""
    return rule.base if window is None else f"{rule.base}|{window.id}"


def window_of(rule: Rule, now: float) -> Window | None:
    if rule.metric == Metric.CONCURRENT_REQUESTS:
        return None
    period = rule.period
    return minute_window(now) if period is None else budget_window(period, now)


def applied_limits(policies: Iterable[Policy], caller: Caller, now: float) -> list[Applied]:
    """Every limit of every policy that applies to the caller's call now."""
    found = []
    for rule in rules(policies, caller):
        window = window_of(rule, now)
        found.append(Applied(rule.policy, rule.metric, rule.limit, counter(rule, window), window))
    return found
