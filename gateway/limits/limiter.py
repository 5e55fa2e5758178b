"""Admission of a gateway call against every limit that applies to it, and settlement once it ends.

`admit` runs before each model call: it finds the policies of the key's tenant (cached per process for
`settings.api_key_cache_seconds`, so no database round trip per request; a changed policy applies on every replica
within that bound), keeps those whose scope matches (the tenant, the key's service account, the key, the model named)
and asks the counter store, in one atomic step, to count one request in every requests-per-minute window, reserve
the call's estimated tokens in every tokens-per-minute window and budget period, and hold a lease in every
concurrency cap. If any limit has no room, nothing is counted and the call is refused (`LimitExceeded`, a 429 with
Retry-After). `finish` settles the reservation to the tokens the answer reported and gives the leases back.

When the counter store (Redis) is unreachable the call is admitted without limits (fail open, the default) or refused
with a 429 (fail closed), never a 5xx; each case counts on the `switchboard.limits.store_unavailable` metric and is
logged at most once a minute.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from dataclasses import dataclass, field

from opentelemetry import metrics

from gateway.limits.headers import retry_headers, window_headers
from server.domain.limits import Metric, Policy, ScopeKind, tenant_policies
from server.domain.limits_plan import Applied, Caller, applied_limits
from server.domain.principal import Principal
from server.errors import QuotaExceeded
from server.store.db import Database, insert_ignoring_duplicates
from server.store.limit_counters import Adjustment, Counters, CountersUnavailable, Slot, Take
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
    """What one admitted model call holds: its token reservations (counter, expiry) and its leases."""

    lease: str
    reserved: int
    token_counters: list[tuple[str, float]]
    soft: list[tuple[Applied, int]]  # budgets with a soft threshold: (limit, index into token_counters)
    slots: list[str]
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class _Merged:
    """One counter's check: the lowest limit of the policies sharing it."""

    applied: Applied
    limit: int
    amount: int


def _expiry(applied: Applied) -> float:
    assert applied.window is not None
    margin = _MINUTE_MARGIN if applied.metric != Metric.TOKEN_BUDGET else _PERIOD_MARGIN
    return applied.window.end + margin


def _describe(applied: Applied) -> str:
    scope = applied.policy.scope
    named = f" {scope.id}" if scope.id else ""
    return f"{_METRIC_NAMES[applied.metric]} of the {_SCOPE_NAMES[scope.kind]}{named}"


class Limiter:
    def __init__(self, db: Database, counters: Counters, *, ttl: float, fail_closed: bool) -> None:
        self._db = db
        self._counters = counters
        self._policies: TtlCache[list[Policy]] = TtlCache(ttl)
        self._fail_closed = fail_closed
        self._missed = 0
        self._next_log = 0.0
        self._background: set[asyncio.Task[None]] = set()

    async def close(self) -> None:
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        await self._counters.close()

    async def _load(self, tenant_id: str) -> list[Policy]:
        async with self._db.read() as session:
            return await tenant_policies(session, tenant_id)

    async def admit(
        self, principal: Principal, model: str, reserve: int, *, with_slots: bool, now: float | None = None
    ) -> Grant | None:
        """Count one model call; None when no limit applies (or the store is down and we fail open)."""
        key = principal.api_key
        if key is None:
            return None
        policies = await self._policies.get(key.tenant_id, lambda: self._load(key.tenant_id))
        if not policies:
            return None
        now = time.time() if now is None else now
        caller = Caller(key.tenant_id, key.key_id, key.service_account_id, model)
        takes: dict[str, _Merged] = {}
        slots: dict[str, _Merged] = {}
        for applied in applied_limits(policies, caller, now):
            if applied.metric == Metric.CONCURRENT_REQUESTS:
                if with_slots:
                    _merge(slots, applied, 0)
            else:
                _merge(takes, applied, 1 if applied.metric == Metric.REQUESTS_PER_MINUTE else reserve)
        if not takes and not slots:
            return None
        for merged in takes.values():
            if merged.amount > merged.limit:
                raise LimitExceeded(
                    f"Request too large: it may use {merged.amount} tokens, more than the "
                    f"{_describe(merged.applied)} allows ({merged.limit}). Lower max_tokens or the input size.",
                    {"x-should-retry": "false"},
                )
        return await self._acquire(list(takes.values()), list(slots.values()), reserve, now)

    async def _acquire(self, takes: list[_Merged], slots: list[_Merged], reserve: int, now: float) -> Grant | None:
        lease = f"{random.getrandbits(64):016x}"
        try:
            outcome = await self._counters.acquire(
                [Take(m.applied.counter, m.limit, m.amount, _expiry(m.applied)) for m in takes],
                [Slot(m.applied.counter, m.limit) for m in slots],
                lease,
                now,
            )
        except CountersUnavailable:
            self._store_down()
            return None
        if not outcome.admitted:
            raise self._refusal(takes, slots, outcome.refused, outcome.values, now)
        token_counters: list[tuple[str, float]] = []
        soft: list[tuple[Applied, int]] = []
        for merged, value in zip(takes, outcome.values, strict=True):
            if merged.applied.metric == Metric.REQUESTS_PER_MINUTE:
                continue
            token_counters.append((merged.applied.counter, _expiry(merged.applied)))
            for applied in _budgets_with_soft(merged):
                soft.append((applied, len(token_counters) - 1))
                self._check_soft(applied, value - merged.amount, value)
        headers = _headers(takes, outcome.values, now)
        return Grant(lease, reserve, token_counters, soft, [m.applied.counter for m in slots], headers)

    def _refusal(
        self, takes: list[_Merged], slots: list[_Merged], refused: int, values: tuple[int, ...], now: float
    ) -> LimitExceeded:
        if refused >= len(takes):
            cap = slots[refused - len(takes)]
            return LimitExceeded(
                f"Rate limit reached on the {_describe(cap.applied)}: limit {cap.limit} in flight. "
                f"Please try again in {_CONCURRENCY_WAIT:.0f}s.",
                retry_headers(_CONCURRENCY_WAIT),
            )
        merged = takes[refused]
        window = merged.applied.window
        assert window is not None
        wait = window.end - now
        headers = {**_headers(takes[: refused + 1], values, now), **retry_headers(wait)}
        return LimitExceeded(
            f"Rate limit reached on the {_describe(merged.applied)}: limit {merged.limit}, used {values[refused]}, "
            f"requested {merged.amount}. Please try again in {headers['retry-after']}s.",
            headers,
        )

    def _store_down(self) -> None:
        _unavailable.add(1, {"outcome": "refused" if self._fail_closed else "admitted"})
        self._missed += 1
        now = time.monotonic()
        if now >= self._next_log:
            self._next_log = now + _LOG_EVERY
            log.warning(
                "the rate-limit counter store is unreachable: %d call(s) %s without limits since the last report",
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
        adjustments = [Adjustment(c, delta, expires) for c, expires in grant.token_counters] if delta else []
        if not adjustments and not grant.slots:
            return
        try:
            values = await self._counters.finish(adjustments, grant.slots, grant.lease)
        except CountersUnavailable:
            self._store_down_quietly()
            return
        for applied, index in grant.soft if adjustments else ():
            self._check_soft(applied, values[index] - delta, values[index])

    def _store_down_quietly(self) -> None:
        # A settlement that cannot reach the store leaves the reservation standing (its leases expire in Redis).
        _unavailable.add(1, {"outcome": "unsettled"})

    def _check_soft(self, applied: Applied, before: int, after: int) -> None:
        soft = applied.policy.soft_budget
        if soft is None or not (before < soft <= after):
            return
        policy = applied.policy
        log.warning(
            "soft token budget crossed: tenant %s, %s scope %r, period %s (%d of %d)",
            policy.tenant_id,
            _SCOPE_NAMES[policy.scope.kind],
            policy.scope.id,
            applied.period,
            after,
            soft,
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


def _merge(into: dict[str, _Merged], applied: Applied, amount: int) -> None:
    found = into.get(applied.counter)
    if found is None:
        into[applied.counter] = _Merged(applied, applied.limit, amount)
    elif applied.limit < found.limit:
        found.applied, found.limit = applied, applied.limit


def _budgets_with_soft(merged: _Merged) -> list[Applied]:
    # Only the policy that set the (lowest) limit is kept in the merge; its soft threshold is the one watched.
    applied = merged.applied
    return [applied] if applied.metric == Metric.TOKEN_BUDGET and applied.policy.soft_budget is not None else []


def _headers(takes: list[_Merged], values: tuple[int, ...], now: float) -> dict[str, str]:
    """The trios of the tightest requests-per-minute and tokens-per-minute limits among the counts known."""
    best: dict[Metric, tuple[int, _Merged]] = {}
    for merged, value in zip(takes, values, strict=False):
        metric = merged.applied.metric
        if metric not in (Metric.REQUESTS_PER_MINUTE, Metric.TOKENS_PER_MINUTE):
            continue
        left = merged.limit - value
        if metric not in best or left < best[metric][0]:
            best[metric] = (left, merged)
    headers: dict[str, str] = {}
    for metric, kind in ((Metric.REQUESTS_PER_MINUTE, "requests"), (Metric.TOKENS_PER_MINUTE, "tokens")):
        if metric in best:
            left, merged = best[metric]
            assert merged.applied.window is not None
            headers.update(window_headers(kind, merged.limit, left, merged.applied.window.end - now))
    return headers
