"""Admission of a gateway call against every limit that applies to it, and settlement once it ends.

`admit` runs before each model call: it finds the policies of the key's tenant (cached per process for
`settings.api_key_cache_seconds`, so no database round trip per request; a changed policy reaches every replica
through server.invalidation, that TTL being the fallback), keeps those whose scope matches (the tenant, the key's
service account, the key, the model named and a preset agent's base model: a plan per key and models, reused until a
window ends or the policies go stale or change) and asks the counter store, in one atomic step, to count one request
in every requests-per-minute window, reserve the call's estimated tokens in every tokens-per-minute window and budget
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
import math
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry import metrics
from sqlalchemy import select

from gateway.limits.headers import NAMES, duration, retry_headers
from server.domain.limits import BudgetPeriod, Metric, Policy, ScopeKind, tenant_policies
from server.domain.limits_plan import Applied, Caller, Rule, Window, budget_window, counter, minute_window, rules
from server.domain.principal import ApiKeyIdentity, Principal
from server.domain.quantities import INT64_MAX
from server.errors import QuotaExceeded
from server.invalidation import Topic
from server.store.db import Database, insert_ignoring_duplicates
from server.store.limit_counters import ADMITTED, ASK_STORE, Counters, CountersUnavailable, Slot, Take
from server.store.models import LimitPolicyRow, LimitSoftCrossingRow
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
_MAX_SIGHTED = 100_000
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

    def retry_after(self) -> float | None:
        """Seconds until the call could be admitted; None when waiting cannot help (a budget spent, a call larger
        than the limit, a wait beyond what the SDKs wait)."""
        if self.headers.get("x-should-retry") != "true":
            return None
        return int(self.headers["retry-after-ms"]) / 1000


class Grant:
    """What one admitted model call holds: the span it was counted in (its windows' counters, so it settles in them
    even after they end), its token reservation, with `slots` a lease in each of the span's concurrency caps, and
    the soft thresholds its reservation took the count past (`crossing`, with that count), which `finish` decides on.
    (A plain class, not a dataclass: compiled, a dataclass's __init__ is still the interpreted one dataclasses
    writes, and one Grant is made per call.)"""

    __slots__ = ("crossing", "headers", "lease", "reserved", "slots", "span")

    def __init__(
        self,
        span: _Span,
        reserved: int,
        headers: dict[str, str],
        slots: bool,
        lease: str,
        *,
        crossing: tuple[tuple[_Soft, int], ...],
    ) -> None:
        self.span, self.reserved, self.headers, self.slots, self.lease = span, reserved, headers, slots, lease
        self.crossing = crossing


@dataclass(slots=True)
class _Soft:
    """A budget policy's soft threshold, as one plan counts it (watched on every count of the budget's counter)."""

    applied: Applied
    threshold: int
    position: int  # its counter's index in the span's token_takes
    take: int  # its index among the plan's takes


@dataclass(slots=True)
class _Check:
    """One counter a caller's calls are checked against: the lowest limit of the rules sharing it."""

    rule: Rule
    limit: int
    tokens: bool  # reserves the call's tokens (else counts one request, or holds a lease)
    # The budget rules sharing the counter that set a soft threshold, whatever their limit: each is watched.
    softs: list[Rule]


class _Span:
    """What a plan counts on until the first of its windows ends (`until`): the counter names, expiries and Takes
    every call of those windows counts, in memory the counters themselves (`bound`), and the limits as header
    text. Made once per window, so per call only the token reservation is new."""

    __slots__ = (
        "bound",
        "caps",
        "checks",
        "fixed",
        "reset_at",
        "reset_end_ms",
        "reset_names",
        "reset_next",
        "slot_names",
        "slot_takes",
        "soft",
        "template",
        "token_room",
        "token_takes",
        "trios",
        "unsighted",
        "until",
        "windows",
    )

    def __init__(
        self, takes: list[_Check], slots: list[_Check], clock: _Windows, now: float, counters: Counters
    ) -> None:
        self.checks, self.caps = takes, slots
        self.windows = windows = [clock.of(c.rule.period, now) for c in takes]
        names = [counter(c.rule, w) for c, w in zip(takes, windows, strict=True)]
        expiries = [_expiry(c.rule.metric, w) for c, w in zip(takes, windows, strict=True)]
        # Each check's Take: what every call of the window counts.
        self.fixed = [Take(n, c.limit, c.tokens, e) for c, n, e in zip(takes, names, expiries, strict=True)]
        self.slot_takes = [Slot(c.rule.base, c.limit) for c in slots]
        self.slot_names = [s.counter for s in self.slot_takes]
        self.bound = counters.bind(self.fixed, self.slot_takes, now)
        self.token_room = min((c.limit for c in takes if c.tokens), default=INT64_MAX)  # above it nothing fits
        self.until = min((w.end for w in windows), default=INT64_MAX)
        tokens = [i for i, c in enumerate(takes) if c.tokens]
        self.token_takes = [self.fixed[i] for i in tokens]  # what settles
        # Every soft threshold of every policy counted on a budget counter, not only that of the policy whose
        # (lowest) limit the counter keeps: an operator's threshold holds under a tenant admin's lower budget.
        self.soft = [
            _Soft(Applied(rule.policy, rule.metric, rule.limit, names[i], windows[i]), soft, position, i)
            for position, i in enumerate(tokens)
            for rule in takes[i].softs
            if (soft := rule.policy.soft_budget) is not None
        ]
        self.unsighted = bool(self.soft)  # until this process has seen each threshold's count once (Limiter.finish)
        # The header names of a kind (requests, tokens), and the takes it picks from: (index, limit, limit as text).
        self.trios = [
            (NAMES[kind], found)
            for metric, kind in _HEADER_KINDS
            if (found := [(i, c.limit, str(c.limit)) for i, c in enumerate(takes) if c.rule.metric == metric])
        ]
        # Each call's headers start as a copy of these, in the order they are sent; only the counts are per call.
        self.template: dict[str, str] = {name: "" for names, _ in self.trios for name in names}
        # A reset header is written once per hundredth of a second (from its start: at most 10 ms late), not per call.
        # Both kinds count per minute: one window, one reset.
        self.reset_names = [names[2] for names, _ in self.trios]
        self.reset_end_ms = round(windows[self.trios[0][1][0][0]].end * 1000) if self.trios else 0
        self.reset_at = self.reset_next = 0.0  # the hundredth of a second it was written for: [at, next) * 1/100


@dataclass(slots=True)
class _Plan:
    """The checks of one (key, model), built once from the tenant's policies (`source`) and reused while those stay
    the cached ones; its span is remade when a window ends. Valid (`since` <= now < `until`) until the first of its
    windows ends or its policies go stale in the cache, whichever comes first: each call within that is one lookup."""

    source: list[Policy]
    span: _Span  # the current windows'; its checks carry over to the next span
    since: float = 0.0
    until: float = -math.inf


def _checks(policies: list[Policy], caller: Caller) -> tuple[list[_Check], list[_Check]]:
    takes: dict[str, _Check] = {}
    slots: dict[str, _Check] = {}
    for rule in rules(policies, caller):
        into = slots if rule.metric == Metric.CONCURRENT_REQUESTS else takes
        # Counters are per (scope, metric, period): a platform and a tenant policy on one scope share one.
        name = rule.base + (f"|{int(rule.period)}" if rule.period is not None else "")
        found = into.get(name)
        if found is None:
            found = into[name] = _Check(rule, rule.limit, rule.metric in _TOKEN_METRICS, [])
        elif rule.limit < found.limit:
            found.rule, found.limit = rule, rule.limit
        if rule.metric == Metric.TOKEN_BUDGET and rule.policy.soft_budget is not None:
            found.softs.append(rule)
    return list(takes.values()), list(slots.values())


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


def _too_large(span: _Span, reserve: int) -> LimitExceeded:
    check = min((c for c in span.checks if c.tokens), key=lambda c: c.limit)
    return LimitExceeded(
        f"Request too large: it may use {reserve} tokens, more than the {_describe(check.rule)} allows "
        f"({check.limit}). Lower max_tokens, n or the input size.",
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
        db.invalidations.on(Topic.LIMITS, lambda _: self._forget())
        self._plans: dict[tuple[str, str, str], _Plan] = {}  # by (key, model, base model)
        self._windows = _Windows()
        self._fail_closed = fail_closed
        self._missed = 0
        self._next_log = 0.0
        self._background: set[asyncio.Task[None]] = set()
        # The soft thresholds (policy, threshold, period) whose settled count this process has read once: a threshold
        # set below the period's use is never crossed by a call, so the first count of it seen records it instead.
        self._sighted: set[tuple[str, int, int, str, int, str]] = set()
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

    def _forget(self) -> None:
        self._policies.forget()
        self._plans.clear()

    async def _current(self, key: ApiKeyIdentity, model: str, base_model: str, now: float) -> _Plan:
        """The plan of (key, model, base model) made valid at `now`: its policies (re)loaded, it rebuilt if they
        changed, its span remade if a window ended."""
        tenant_id = key.tenant_id
        policies = await self._policies.get(tenant_id, lambda: self._load(tenant_id))
        lookup = (key.key_id, model, base_model)  # a key's tenant and service account never change
        plan = self._plans.get(lookup)
        if plan is None or plan.source is not policies:
            if len(self._plans) >= _MAX_PLANS:
                self._plans.clear()
            caller = Caller(tenant_id, key.key_id, key.service_account_id, model, base_model or None)
            takes, slots = _checks(policies, caller)
            span = _Span(takes, slots, self._windows, now, self._counters)
            plan = self._plans[lookup] = _Plan(policies, span)
        elif now >= plan.span.until:
            plan.span = _Span(plan.span.checks, plan.span.caps, self._windows, now, self._counters)
        # The policies' expiry is on the monotonic clock, the windows' on the wall clock `now` comes from.
        stale = now + (self._policies.expires(tenant_id, policies) - time.monotonic())
        plan.since, plan.until = now, min(plan.span.until, stale)
        return plan

    async def admit(
        self,
        principal: Principal,
        model: str,
        reserve: int,
        *,
        with_slots: bool,
        base_model: str = "",
        now: float | None = None,
    ) -> Grant | None:
        """Count one model call of `model` (running on `base_model` when it is a preset agent); None when no limit
        applies (or the store is down and we fail open)."""
        key = principal.api_key
        if key is None:
            return None
        if now is None:
            now = time.time()
        plan = self._plans.get((key.key_id, model, base_model))
        if plan is None or not plan.since <= now < plan.until:
            plan = await self._current(key, model, base_model, now)
        span = plan.span
        if not span.checks and not (with_slots and span.caps):
            return None
        if reserve > span.token_room:
            if any(check.tokens for check in span.checks):
                raise _too_large(span, reserve)
            # Nothing here counts tokens; the counters still take the reservation as an int64 (max_tokens has no
            # upper bound: 2**63 was an internal error).
            reserve = span.token_room
        bound = span.bound
        values: list[int]
        # Counted on the window's counters in this host's memory, or from the permits this process holds: no store
        # call, no coroutine.
        if bound is None or (counted := bound.count(reserve, with_slots, now)) == ASK_STORE:
            found = await self._acquire(span, reserve, with_slots, now)
            if found is None:
                return None
            values, lease = found
        elif counted == ADMITTED:
            values, lease = bound.values(), ""
        else:
            raise self._refusal(span, reserve, counted, bound.values()[: counted + 1], now)
        crossing = _crossing(span.soft, values, reserve) if span.soft else ()
        return Grant(span, reserve, _headers(span, values, now), with_slots, lease, crossing=crossing)

    async def _acquire(self, span: _Span, reserve: int, with_slots: bool, now: float) -> tuple[list[int], str] | None:
        """Count the call in the shared store: its counts and lease, None if the store is down (fail open)."""
        slots = span.slot_takes if with_slots else []
        lease = f"{self._lease_prefix}{next(self._serial):x}" if slots else ""
        try:
            outcome = await self._counters.acquire(span.fixed, reserve, slots, lease, now)
        except CountersUnavailable as exc:
            self._store_down(str(exc))
            return None
        if not outcome.admitted:
            raise self._refusal(span, reserve, outcome.refused, outcome.values, now)
        return list(outcome.values), lease

    def _refusal(self, span: _Span, reserve: int, refused: int, values: Sequence[int], now: float) -> LimitExceeded:
        """The refusal by take or slot `refused`; `values` are the counts of the takes found up to it."""
        checks = span.checks
        capped = refused >= len(checks)
        wait = _CONCURRENCY_WAIT if capped else span.windows[refused].end - now
        # A refusal is a call the limits counted: it carries the trios of the counts found, as every answer does.
        headers = {**_headers(span, list(values), now), **retry_headers(wait)}
        if capped:
            cap = span.caps[refused - len(checks)]
            return LimitExceeded(
                f"Rate limit reached on the {_describe(cap.rule)}: limit {cap.limit} in flight. "
                f"Please try again in {headers['retry-after']}s.",
                headers,
            )
        check = checks[refused]
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
        span = grant.span
        delta = 0 if used is None else used - grant.reserved
        # Counts are read back only to watch a soft budget: one a settlement adding tokens may cross, one the call's
        # reservation took the count past (crossed only if the count stays there once settled), or one this process
        # has not seen a count of yet. Most keys have none, and most settlements give back part of a reservation.
        unsighted = self._unsighted(span) if span.unsighted else ()
        watch = bool(unsighted) or (delta != 0 and bool(span.soft) and (delta > 0 or bool(grant.crossing)))
        values = await self._settle(grant, delta, watch)
        if watch and values:
            self._watch_settled(span.soft, grant.crossing, delta, values, unsighted)
        else:
            # The reservation stands as admitted (settled unchanged, or not at all): so does each count it crossed at.
            for soft, after in grant.crossing:
                self._soft_crossed(soft.applied, after)

    async def _settle(self, grant: Grant, delta: int, watch: bool) -> Sequence[int] | None:
        """Add `delta` to the grant's token counters and free its leases: the token counts after it when `watch`
        (else perhaps none), None when the store could not be reached."""
        span = grant.span
        bound = span.bound
        if bound is not None and bound.settle(delta, grant.slots):
            return bound.token_values() if watch else ()
        # The store settles it all, or (a bound gave the leases back) the tokens the bound could not.
        takes = span.token_takes if delta or watch else []
        slots = span.slot_names if grant.slots and bound is None else []
        if not takes and not slots:
            return ()
        try:
            return await self._counters.finish(takes, delta, slots, grant.lease)
        except CountersUnavailable:
            # A settlement that cannot reach the store leaves the reservation standing (its leases expire in Redis).
            _unavailable.add(1, {"outcome": "unsettled"})
            return None

    def _unsighted(self, span: _Span) -> tuple[_Soft, ...]:
        found = tuple(soft for soft in span.soft if _sighting(soft) not in self._sighted)
        span.unsighted = bool(found)
        return found

    def _watch_settled(
        self,
        softs: list[_Soft],
        crossing: tuple[tuple[_Soft, int], ...],
        delta: int,
        values: Sequence[int],
        unsighted: tuple[_Soft, ...],
    ) -> None:
        """Record each soft threshold the settled counts (`values`, after adding `delta`) are at or past and that
        this call crossed: by what the settlement added, or by a reservation that took the count past it; or that
        this process had not seen a count of (`unsighted`: it may have been set below the use already counted)."""
        if len(self._sighted) > _MAX_SIGHTED:  # past periods' and old thresholds' entries: forget them all at once
            self._sighted.clear()
        self._sighted.update(_sighting(soft) for soft in unsighted)
        for soft in softs:
            after = values[soft.position]
            if after >= soft.threshold and (
                after - delta < soft.threshold
                or any(held is soft for held, _ in crossing)
                or any(s is soft for s in unsighted)
            ):
                self._soft_crossed(soft.applied, after)

    def _soft_crossed(self, applied: Applied, after: int) -> None:
        task = asyncio.ensure_future(self._record_soft(applied, after))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _record_soft(self, applied: Applied, after: int) -> None:
        """Record the crossing, and log it when this is its first record: every gateway process sees a threshold's
        count once a period (`_sighted`), and those that find it past the threshold all try to record it."""
        policy = applied.policy
        try:
            async with self._db.transaction() as session:
                # A call admitted before its policy's threshold changed may end after: the threshold it crossed is no
                # longer set, and SetLimitPolicy has forgotten that policy's crossings. (FOR SHARE, on PostgreSQL:
                # a change being committed is waited for, then read.)
                still = await session.scalar(
                    select(LimitPolicyRow.soft_budget)
                    .where(
                        LimitPolicyRow.tenant_id == policy.tenant_id,
                        LimitPolicyRow.tier == int(policy.tier),
                        LimitPolicyRow.scope_kind == int(policy.scope.kind),
                        LimitPolicyRow.scope_id == policy.scope.id,
                    )
                    .with_for_update(read=True)
                )
                if still != policy.soft_budget:
                    return
                first = await insert_ignoring_duplicates(
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
            return
        if first:
            log.warning(
                "soft token budget crossed: tenant %s, %s scope %r, period %s (%d of %d)",
                policy.tenant_id,
                _SCOPE_NAMES[policy.scope.kind],
                policy.scope.id,
                applied.period,
                after,
                policy.soft_budget,
            )


def _sighting(soft: _Soft) -> tuple[str, int, int, str, int, str]:
    """One soft threshold of one period: a changed threshold is a new one (SetLimitPolicy forgot the crossing)."""
    policy = soft.applied.policy
    return (
        policy.tenant_id,
        int(policy.tier),
        int(policy.scope.kind),
        policy.scope.id,
        soft.threshold,
        soft.applied.period,
    )


def _crossing(softs: list[_Soft], values: list[int], reserve: int) -> tuple[tuple[_Soft, int], ...]:
    """The soft thresholds a call's reservation took the count past (`values`: the counts after it), with the count:
    only tentatively crossed, since most of a reservation is usually given back when the call ends (`finish`)."""
    found: tuple[tuple[_Soft, int], ...] = ()  # made only when one is crossed (seldom), not on every call
    for soft in softs:
        after = values[soft.take]
        if after - reserve < soft.threshold <= after:
            found += ((soft, after),)
    return found


def _headers(span: _Span, values: list[int], now: float) -> dict[str, str]:
    """The trios of the tightest requests-per-minute and tokens-per-minute limits among the counts known (`values`,
    the span's takes in order: a refusal knows the counts up to the limit that refused)."""
    known = len(values)
    hundredths = now * 100
    if not span.reset_at <= hundredths < span.reset_next:
        span.reset_at = at = float(int(hundredths))
        span.reset_next = at + 1
        reset = duration(span.reset_end_ms - int(at) * 10)
        for name in span.reset_names:
            span.template[name] = reset
    headers = span.template.copy()
    for (limit_name, remaining_name, reset_name), candidates in span.trios:
        least, text = 0, ""
        for i, limit, limit_text in candidates:
            if i < known:
                left = limit - values[i]
                if not text or left < least:
                    least, text = left, limit_text
        if text:
            headers[limit_name] = text
            headers[remaining_name] = str(least) if least > 0 else "0"
        else:
            del headers[limit_name], headers[remaining_name], headers[reset_name]
    return headers
