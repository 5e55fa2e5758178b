"""Admission of a gateway call against every limit that applies to it, and settlement once it ends.

`admit` runs before each model call: it finds the policies of the key's tenant (cached per process for
`settings.api_key_cache_seconds`, so no database round trip per request; a changed policy reaches every replica
through server.invalidation, that TTL being the fallback), keeps those whose scope matches (the tenant, the key's
service account, the key, the model named) and asks the counter store, in one atomic step, to count one request in
every requests-per-minute window, reserve the call's estimated tokens in every tokens-per-minute window and budget
period, and hold a lease in every concurrency cap. If any limit has no room, nothing is counted and the call is
refused (`LimitExceeded`, a 429 with Retry-After). `finish` settles the reservation to the tokens the answer
reported and gives the leases back.

When the counter store (Redis) is unreachable the call is admitted without limits (fail open, the default) or refused
with a 429 (fail closed), never a 5xx; each case counts on the `switchboard.limits.store_unavailable` metric and is
logged at most once a minute.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from opentelemetry import metrics

from gateway.limits.headers import NAMES, duration, retry_headers
from server.domain.limits import BudgetPeriod, Metric, Policy, ScopeKind, tenant_policies
from server.domain.limits_plan import Applied, Caller, Rule, Window, budget_window, counter, minute_window, rules
from server.domain.principal import ApiKeyIdentity, Principal
from server.domain.quantities import INT64_MAX
from server.errors import QuotaExceeded
from server.invalidation import Topic
from server.store.db import Database, insert_ignoring_duplicates
from server.store.limit_counters import Bound, Counters, CountersUnavailable, Slot, Take
from server.store.models import LimitSoftCrossingRow
from server.ttlcache import TtlCache

__all__ = ["Grant", "LimitExceeded", "Limiter"]

log = logging.getLogger("switchboard.gateway.limits")
_unavailable = metrics.get_meter("switchboard.gateway.limits").create_counter(
    "switchboard.limits.store_unavailable", description="Calls admitted or refused without the rate-limit store"
)

_MINUTE_MARGIN = 120.0  # a minute counter outlives its window by this much, so late settlements still find it
_PERIOD_MARGIN = 86_400.0
_CONCURRENCY_WAIT = 1.0  # what a caller refused by a concurrency cap is told to wait
_LOG_EVERY = 60.0
_MAX_PLANS = 50_000
_TOKEN_METRICS = frozenset({Metric.TOKENS_PER_MINUTE, Metric.TOKEN_BUDGET})
_HEADER_KINDS = ((Metric.REQUESTS_PER_MINUTE, "requests"), (Metric.TOKENS_PER_MINUTE, "tokens"))
_SCOPE_NAMES = {
    ScopeKind.TENANT: "tenant",
    ScopeKind.SERVICE_ACCOUNT: "service account",
    ScopeKind.API_KEY: "API key",
    ScopeKind.MODEL: "model",
}
_METRIC_NAMES = {
    Metric.REQUESTS_PER_MINUTE: "requests per minute",
    Metric.TOKENS_PER_MINUTE: "tokens per minute",
    Metric.CONCURRENT_REQUESTS: "concurrent requests",
    Metric.TOKEN_BUDGET: "token budget",
}


class LimitExceeded(QuotaExceeded):
    """A call refused by a limit; `headers` go on the 429 (Retry-After and the rate-limit trios)."""

    def __init__(self, message: str, headers: dict[str, str]) -> None:
        super().__init__(message)
        self.headers = headers


@dataclass(slots=True)
class Grant:
    """What one admitted model call holds: its token reservations (counter, expiry) and its leases; counted in
    process, the window's counters themselves (`bound`)."""

    lease: str
    reserved: int
    token_counters: list[tuple[str, float]]
    soft: list[_Soft]  # budgets with a soft threshold
    slots: list[str]
    headers: dict[str, str]
    bound: Bound | None = None


@dataclass(slots=True)
class _Soft:
    """A budget with a soft threshold, as one plan counts it (the threshold is watched on every count)."""

    applied: Applied
    threshold: int
    position: int  # its counter's index in the plan's token_counters
    take: int  # its index among the plan's takes


@dataclass(slots=True)
class _Check:
    """One counter a caller's calls are checked against: the lowest limit of the rules sharing it."""

    rule: Rule
    limit: int
    tokens: bool  # reserves the call's tokens (else counts one request, or holds a lease)


@dataclass(slots=True)
class _Plan:
    """The checks of one (key, model), built once from the tenant's policies (`source`) and reused while those stay
    the cached ones. What depends on the windows (counter names, expiries, the one-request Takes, the limits as
    header text) is rebuilt only when a window ends (`until`); per call only the token reservations are new."""

    source: list[Policy]
    takes: list[_Check]
    slots: list[_Check]
    until: float = 0.0
    windows: list[Window] = field(default_factory=list)
    fixed: list[Take] = field(default_factory=list)  # each check's Take: what every call of the window counts
    names: list[str] = field(default_factory=list)
    expiries: list[float] = field(default_factory=list)
    slot_takes: list[Slot] = field(default_factory=list)
    token_room: int = 0  # the lowest token limit: a reservation above it can never fit
    token_counters: list[tuple[str, float]] = field(default_factory=list)  # what settles: (counter, expiry)
    soft: list[_Soft] = field(default_factory=list)
    # The header names of a kind (requests, tokens), the take indices it picks from.
    trios: list[tuple[tuple[str, str, str], list[int]]] = field(default_factory=list)
    limits: list[int] = field(default_factory=list)  # each take's limit
    limit_texts: list[str] = field(default_factory=list)  # each take's limit as its header writes it
    slot_names: list[str] = field(default_factory=list)
    bound: Bound | None = None  # counted in process: the window's counters
    # A reset header is written once per hundredth of a second (from its start: at most 10 ms late), not per call.
    reset_at: int = -1
    reset_end: float = 0.0
    reset_text: str = ""

    def refresh(self, clock: _Windows, now: float, counters: Counters) -> None:
        self.windows = [clock.of(c.rule.period, now) for c in self.takes]
        self.names = [counter(c.rule, w) for c, w in zip(self.takes, self.windows, strict=True)]
        self.expiries = [_expiry(c.rule.metric, w) for c, w in zip(self.takes, self.windows, strict=True)]
        self.fixed = [
            Take(n, c.limit, c.tokens, e) for c, n, e in zip(self.takes, self.names, self.expiries, strict=True)
        ]
        self.slot_takes = [Slot(c.rule.base, c.limit) for c in self.slots]
        self.slot_names = [s.counter for s in self.slot_takes]
        self.bound = counters.bind(self.fixed, self.slot_takes, now)
        self.token_room = min((c.limit for c in self.takes if c.tokens), default=INT64_MAX)
        self.until = min((w.end for w in self.windows), default=INT64_MAX)
        tokens = [i for i, c in enumerate(self.takes) if c.tokens]
        self.token_counters = [(self.names[i], self.expiries[i]) for i in tokens]
        # Only the policy whose (lowest) limit a shared budget counter keeps is watched for its soft threshold.
        self.soft = [
            _Soft(Applied(c.rule.policy, c.rule.metric, c.limit, self.names[i], self.windows[i]), soft, position, i)
            for position, i in enumerate(tokens)
            if (c := self.takes[i]).rule.metric == Metric.TOKEN_BUDGET
            and (soft := c.rule.policy.soft_budget) is not None
        ]
        self.limits = [c.limit for c in self.takes]
        self.limit_texts = [str(c.limit) for c in self.takes]
        self.trios = [
            (NAMES[kind], found)
            for metric, kind in _HEADER_KINDS
            if (found := [i for i, c in enumerate(self.takes) if c.rule.metric == metric])
        ]


def _plan(policies: list[Policy], caller: Caller) -> _Plan:
    takes: dict[str, _Check] = {}
    slots: dict[str, _Check] = {}
    for rule in rules(policies, caller):
        into = slots if rule.metric == Metric.CONCURRENT_REQUESTS else takes
        # Counters are per (scope, metric, period): a platform and a tenant policy on one scope share one.
        name = rule.base + (f"|{int(rule.period)}" if rule.period is not None else "")
        found = into.get(name)
        if found is None:
            into[name] = _Check(rule, rule.limit, rule.metric in _TOKEN_METRICS)
        elif rule.limit < found.limit:
            found.rule, found.limit = rule, rule.limit
    return _Plan(policies, list(takes.values()), list(slots.values()))


class _Windows:
    """The current minute and budget periods, recomputed only when one ends."""

    __slots__ = ("_minute", "_periods")

    def __init__(self) -> None:
        self._minute = minute_window(0)
        self._periods: dict[BudgetPeriod, Window] = {}

    def of(self, period: BudgetPeriod | None, now: float) -> Window:
        if period is None:
            if now >= self._minute.end:
                self._minute = minute_window(now)
            return self._minute
        window = self._periods.get(period)
        if window is None or now >= window.end:
            window = self._periods[period] = budget_window(period, now)
        return window


def _expiry(metric: Metric, window: Window) -> float:
    return window.end + (_PERIOD_MARGIN if metric == Metric.TOKEN_BUDGET else _MINUTE_MARGIN)


def _too_large(plan: _Plan, reserve: int) -> LimitExceeded:
    check = min((c for c in plan.takes if c.tokens), key=lambda c: c.limit)
    return LimitExceeded(
        f"Request too large: it may use {reserve} tokens, more than the {_describe(check.rule)} allows "
        f"({check.limit}). Lower max_tokens or the input size.",
        {"x-should-retry": "false"},
    )


def _describe(rule: Rule) -> str:
    scope = rule.policy.scope
    named = f" {scope.id}" if scope.id else ""
    return f"{_METRIC_NAMES[rule.metric]} of the {_SCOPE_NAMES[scope.kind]}{named}"


class Limiter:
    def __init__(self, db: Database, counters: Counters, *, ttl: float, fail_closed: bool) -> None:
        self._db = db
        self._counters = counters
        self._policies: TtlCache[list[Policy]] = TtlCache(ttl)
        # A changed policy reaches every process at once (server.invalidation); the TTL is the fallback.
        db.invalidations.on(Topic.LIMITS, lambda _: self._policies.forget())
        self._plans: dict[tuple[str, str, str | None, str], _Plan] = {}
        self._windows = _Windows()
        self._fail_closed = fail_closed
        self._missed = 0
        self._next_log = 0.0
        self._background: set[asyncio.Task[None]] = set()
        # Leases need only be unique: a random prefix per process (the limiter is made in each worker, after the
        # fork) and a serial number cost far less than 64 random bits per call.
        self._lease_prefix = f"{random.getrandbits(64):016x}-"
        self._serial = itertools.count()

    async def close(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self._counters.close()

    async def _load(self, tenant_id: str) -> list[Policy]:
        async with self._db.read() as session:
            return await tenant_policies(session, tenant_id)

    def _plan_for(self, policies: list[Policy], key: ApiKeyIdentity, model: str) -> _Plan:
        lookup = (key.tenant_id, key.key_id, key.service_account_id, model)
        plan = self._plans.get(lookup)
        if plan is None or plan.source is not policies:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            caller = Caller(key.tenant_id, key.key_id, key.service_account_id, model)
            plan = self._plans[lookup] = _plan(policies, caller)
        return plan

    async def admit(
        self, principal: Principal, model: str, reserve: int, *, with_slots: bool, now: float | None = None
    ) -> Grant | None:
        """Count one model call; None when no limit applies (or the store is down and we fail open)."""
        key = principal.api_key
        if key is None:
            return None
        tenant_id = key.tenant_id
        policies = self._policies.fresh(tenant_id)
        if policies is None:
            policies = await self._policies.get(tenant_id, lambda: self._load(tenant_id))
        if not policies:
            return None
        plan = self._plan_for(policies, key, model)
        if not plan.takes and not (with_slots and plan.slots):
            return None
        now = time.time() if now is None else now
        if now >= plan.until:
            plan.refresh(self._windows, now, self._counters)
        if reserve > plan.token_room:
            raise _too_large(plan, reserve)
        bound = plan.bound
        if bound is not None:  # in process: counted on the window's counters, no store call
            refused = bound.count(reserve, with_slots)
            values: Sequence[int] = bound.values()
            if refused >= 0:
                raise self._refusal(plan, reserve, refused, values[: refused + 1], now)
            lease = ""
        else:
            counted = await self._acquire(plan, reserve, with_slots, now)
            if counted is None:
                return None
            values, lease = counted
        for soft in plan.soft:
            after = values[soft.take]
            if after - reserve < soft.threshold <= after:
                self._soft_crossed(soft.applied, after)
        slot_names = plan.slot_names if with_slots else []
        return Grant(lease, reserve, plan.token_counters, plan.soft, slot_names, _headers(plan, values, now), bound)

    async def _acquire(
        self, plan: _Plan, reserve: int, with_slots: bool, now: float
    ) -> tuple[Sequence[int], str] | None:
        """Count the call in the shared store: its counts and lease, None if the store is down (fail open)."""
        slots = plan.slot_takes if with_slots else []
        lease = f"{self._lease_prefix}{next(self._serial):x}" if slots else ""
        try:
            outcome = await self._counters.acquire(plan.fixed, reserve, slots, lease, now)
        except CountersUnavailable as exc:
            self._store_down(str(exc))
            return None
        if not outcome.admitted:
            raise self._refusal(plan, reserve, outcome.refused, outcome.values, now)
        return outcome.values, lease

    def _refusal(self, plan: _Plan, reserve: int, refused: int, values: Sequence[int], now: float) -> LimitExceeded:
        if refused >= len(plan.takes):
            cap = plan.slots[refused - len(plan.takes)]
            return LimitExceeded(
                f"Rate limit reached on the {_describe(cap.rule)}: limit {cap.limit} in flight. "
                f"Please try again in {_CONCURRENCY_WAIT:.0f}s.",
                retry_headers(_CONCURRENCY_WAIT),
            )
        check = plan.takes[refused]
        headers = {**_headers(plan, values, now), **retry_headers(plan.windows[refused].end - now)}
        return LimitExceeded(
            f"Rate limit reached on the {_describe(check.rule)}: limit {check.limit}, used {values[refused]}, "
            f"requested {reserve if check.tokens else 1}. Please try again in {headers['retry-after']}s.",
            headers,
        )

    def _store_down(self, reason: str) -> None:
        _unavailable.add(1, {"outcome": "refused" if self._fail_closed else "admitted"})
        self._missed += 1
        now = time.monotonic()
        if now >= self._next_log:
            self._next_log = now + _LOG_EVERY
            log.warning(
                "the rate-limit counter store is unreachable or full (%s): %d call(s) %s without limits since the "
                "last report",
                reason,
                self._missed,
                "refused" if self._fail_closed else "admitted",
            )
            self._missed = 0
        if self._fail_closed:
            raise LimitExceeded(
                "Rate limits cannot be checked right now. Please try again shortly.", retry_headers(_CONCURRENCY_WAIT)
            )

    async def finish(self, grant: Grant, used: int | None) -> None:
        """Settle the reservation to `used` tokens (None: keep it, the usage is unknown) and free the leases."""
        delta = 0 if used is None else used - grant.reserved
        counters = grant.token_counters if delta else []
        if not counters and not grant.slots:
            return
        bound = grant.bound
        if bound is not None:
            values: Sequence[int] = bound.settle(delta, bool(grant.slots))
        else:
            values = await self._settle(counters, delta, grant)
        for soft in grant.soft if counters else ():
            after = values[soft.position]
            if after - delta < soft.threshold <= after:
                self._soft_crossed(soft.applied, after)

    async def _settle(self, counters: list[tuple[str, float]], delta: int, grant: Grant) -> Sequence[int]:
        try:
            return await self._counters.finish(counters, delta, grant.slots, grant.lease)
        except CountersUnavailable:
            # A settlement that cannot reach the store leaves the reservation standing (its leases expire in Redis).
            _unavailable.add(1, {"outcome": "unsettled"})
            return ()

    def _soft_crossed(self, applied: Applied, after: int) -> None:
        policy = applied.policy
        log.warning(
            "soft token budget crossed: tenant %s, %s scope %r, period %s (%d of %d)",
            policy.tenant_id,
            _SCOPE_NAMES[policy.scope.kind],
            policy.scope.id,
            applied.period,
            after,
            policy.soft_budget,
        )
        task = asyncio.ensure_future(self._record_soft(applied))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _record_soft(self, applied: Applied) -> None:
        policy = applied.policy
        try:
            async with self._db.transaction() as session:
                await insert_ignoring_duplicates(
                    session,
                    LimitSoftCrossingRow,
                    {
                        "tenant_id": policy.tenant_id,
                        "tier": int(policy.tier),
                        "scope_kind": int(policy.scope.kind),
                        "scope_id": policy.scope.id,
                        "period": applied.period,
                    },
                )
        except Exception:
            log.exception("could not record a soft budget crossing")


def _headers(plan: _Plan, values: Sequence[int], now: float) -> dict[str, str]:
    """The trios of the tightest requests-per-minute and tokens-per-minute limits among the counts known (a refusal
    knows the counts up to the limit that refused)."""
    headers: dict[str, str] = {}
    known = len(values)
    limits = plan.limits
    at = int(now * 100)
    for (limit_name, remaining_name, reset_name), indices in plan.trios:
        best = -1
        least = 0
        for i in indices:
            if i < known:
                left = limits[i] - values[i]
                if best < 0 or left < least:
                    best, least = i, left
        if best < 0:
            continue
        end = plan.windows[best].end
        if at != plan.reset_at or end != plan.reset_end:
            plan.reset_at, plan.reset_end, plan.reset_text = at, end, duration(end - at / 100)
        headers[limit_name] = plan.limit_texts[best]
        headers[remaining_name] = str(least) if least > 0 else "0"
        headers[reset_name] = plan.reset_text
    return headers
