"""The rate-limit counter store on Redis, shared by every replica (`RedisCounters`), and the permits a replica holds
of it in its own memory (`PermitBound`). It implements the protocol of server.store.limit_counters, where the records
it takes and answers and the in-process store live; this module holds what only Redis needs: its Lua scripts, its
leases and its permits.

Each operation is one script call, atomic in Redis and batched with the other calls of the same event-loop turn into
one round trip (server.store.redis_scripts). Leases in Redis expire after `LEASE_SECONDS`, so a replica that dies with
calls in flight frees its slots by then.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Final

from server.store.limit_counters import ADMITTED, ASK_STORE, CountersUnavailable, Outcome, Slot, Take
from server.store.permits import (
    IDLE_SECONDS,
    NO_CREDIT,
    PERMIT_CALLS,
    PERMIT_LEASES,
    Credit,
    fill_target,
    grants_permits,
)
from server.store.redis_scripts import ScriptBatcher, ScriptFailed

__all__ = ["LEASE_SECONDS", "PermitBound", "RedisCounters"]

LEASE_SECONDS = 900.0
# The wall clock, read on every settlement. Final, compiled code keeps it in a C variable; `time.time()` looks the
# attribute up on the module object at each call (~270 instructions under callgrind, the call itself ~180), and a
# plain global is a dictionary lookup (~150).
_clock: Final = time.time


@dataclass(slots=True)
class _Adjustment:
    """A delta for one counter (Redis's settlements and permits given back)."""

    counter: str
    delta: int
    expires: float


# KEYS: the takes' counters, then the slots'. ARGV: lease, now (ms), lease end (ms), number of takes, then per take
# its limit, amount, expiry (ms since the epoch) and permits asked, then per slot its limit and permits asked.
# Returns {admitted, refused index (1-based, 0 when admitted), counts...}, and when admitted the permits granted
# (per take, then per slot). A grant is at most what was asked and at most 1/8 of the room left after the call.
_ACQUIRE = """
local lease, now, lease_end, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local values = {}
for i = 1, n do
  local a = 5 + 4 * (i - 1)
  local current = tonumber(redis.call('GET', KEYS[i]) or '0')
  values[i] = current
  if current + math.max(tonumber(ARGV[a + 1]), 1) > tonumber(ARGV[a]) then
    return {0, i, unpack(values)}
  end
end
local base = 5 + 4 * n
local held = {}
for j = 1, #KEYS - n do
  local key = KEYS[n + j]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  held[j] = redis.call('ZCARD', key)
  if held[j] >= tonumber(ARGV[base + 2 * (j - 1)]) then
    return {0, n + j, unpack(values)}
  end
end
local reply = {1, 0}
local grants = {}
for i = 1, n do
  local a = 5 + 4 * (i - 1)
  local amount = tonumber(ARGV[a + 1])
  local grant = math.max(0, math.min(tonumber(ARGV[a + 3]), math.floor((tonumber(ARGV[a]) - values[i] - amount) / 8)))
  grants[i] = grant
  reply[2 + i] = redis.call('INCRBY', KEYS[i], string.format('%d', amount + grant))
  redis.call('PEXPIREAT', KEYS[i], ARGV[a + 2])
end
for j = 1, #KEYS - n do
  local key, b = KEYS[n + j], base + 2 * (j - 1)
  local grant = math.max(0, math.min(tonumber(ARGV[b + 1]), math.floor((tonumber(ARGV[b]) - held[j] - 1) / 8)))
  grants[n + j] = grant
  redis.call('ZADD', key, lease_end, lease)
  for g = 1, grant do
    redis.call('ZADD', key, lease_end, lease .. '#' .. g)
  end
  redis.call('PEXPIREAT', key, lease_end)
end
for k = 1, #grants do
  reply[2 + n + k] = grants[k]
end
return reply
"""

# KEYS: the counters to adjust, then the slots. ARGV: number of counters, then per counter its delta and expiry (ms;
# a counter whose window already ended is dropped by the expiry in the past), then per slot the lease to remove.
# Returns the new counts.
_FINISH = """
local n = tonumber(ARGV[1])
local values = {}
for i = 1, n do
  local a = 2 + 2 * (i - 1)
  values[i] = redis.call('INCRBY', KEYS[i], ARGV[a])
  redis.call('PEXPIREAT', KEYS[i], ARGV[a + 1])
end
for j = n + 1, #KEYS do
  redis.call('ZREM', KEYS[j], ARGV[2 + 2 * n + j - n - 1])
end
return values
"""

# KEYS: counters, then slots. ARGV: number of counters, now (ms). Returns counts, then leases held.
_PEEK = """
local n = tonumber(ARGV[1])
local values = {}
for i = 1, n do
  values[i] = tonumber(redis.call('GET', KEYS[i]) or '0')
end
for j = n + 1, #KEYS do
  values[j] = redis.call('ZCOUNT', KEYS[j], '(' .. ARGV[2], '+inf')
end
return values
"""


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


# A spare lease is reused only this long after Redis took it (it expires after 15 min). (Final, as the next: compiled
# code folds it in, where a plain module global is a dictionary lookup and a float unboxed at every use, here on
# every call that gives a lease back.)
_FRESH_LEASE_SECONDS: Final = 60.0
_SWEEP_SECONDS: Final = 60.0


@dataclass(slots=True)
class _Spare:
    member: str  # the lease in Redis's set
    taken: float  # when Redis counted it
    idle_since: float
    # Kept as a spare when its call ends (else dropped at once): only the leases of a cap that grants spares. A
    # smaller cap's lease held idle would refuse other replicas' calls meanwhile.
    reusable: bool = True


class _Leases:
    """The leases this process holds of one concurrency cap (`slot`): spares no call holds (`idle`, the newest last,
    used first), and those of its calls in flight (`busy`). Redis counts a cap's leases, not whose they are, so a call
    that ends gives back the oldest: the calls still running keep the newest, which expire last. `busy` keeps the
    newest first, so the oldest is popped from the end (from the front, a list moves every item after it). One per
    cap, kept for the life of the store: a plan's bound counters hold theirs (`PermitBound`), so a call finds them
    without a lookup by name."""

    __slots__ = ("busy", "idle", "slot")

    def __init__(self, slot: str) -> None:
        self.slot = slot
        self.idle: list[_Spare] = []
        self.busy: list[_Spare] = []


class RedisCounters:
    """Counters shared by every replica, in Redis under `prefix`. Each method is one script call (EVALSHA), batched
    with the calls of the same event-loop turn into one round trip (server.store.redis_scripts). With `permits`,
    most admissions and settlements of a busy process need no script call at all (see PERMIT_CALLS)."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = "switchboard:limits:",
        timeout: float = 2.0,
        permits: bool = False,
        idle_seconds: float = IDLE_SECONDS,
    ) -> None:
        import redis.asyncio as redis

        # No per-read socket timeout: each batch has one deadline of `timeout` (server.store.redis_scripts).
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=None, socket_connect_timeout=timeout)
        self._prefix = prefix
        scripts = {"acquire": _ACQUIRE, "finish": _FINISH, "peek": _PEEK}
        self._scripts = ScriptBatcher(self._redis, scripts, timeout=timeout)
        self._permits = permits
        self._idle = idle_seconds
        self._credit: dict[str, Credit] = {}
        self._leases: dict[str, _Leases] = {}  # slot -> the leases held of it, idle and busy
        self._asking: set[str] = set()  # counters and slots a request for permits is in flight for
        self._next_sweep = 0.0
        self._trim: asyncio.TimerHandle | None = None
        self._releasing: set[asyncio.Task[None]] = set()

    def bind(self, takes: Sequence[Take], slots: Sequence[Slot], now: float) -> PermitBound | None:
        """With permits, what counts the calls they cover (`PermitBound`); without, None: each call goes through
        `acquire`."""
        if not self._permits:
            return None
        return PermitBound(self, list(takes), [self._leases_of(s.counter) for s in slots])

    def _leases_of(self, slot: str) -> _Leases:
        held = self._leases.get(slot)
        if held is None:
            held = self._leases[slot] = _Leases(slot)
        return held

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> list[int]:
        try:
            return [int(v) for v in await self._scripts.call(script, keys, args)]
        except ScriptFailed as exc:
            raise CountersUnavailable(str(exc)) from None

    def _found(self, take: Take) -> Credit:
        """The credit held for `take`'s counter, kept on the Take from now on (called when the Take has none yet, or
        its window's has ended): a lookup by name once per Take, not per call."""
        credit = take.credit = self._credit.get(take.counter, NO_CREDIT)
        return credit

    def _draw(self, takes: list[Take], reserve: int, leases: list[_Leases], now: float) -> list[int] | None:
        """Admit from this process's permits alone (every take covered, a spare lease of every cap in `leases`, which
        the call then holds): the takes' counts, or None, nothing drawn."""
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_SECONDS
            self._credit = {k: c for k, c in self._credit.items() if c.expires > now}
        need = reserve or 1
        for take in takes:
            credit = take.credit
            if credit.expires <= now:
                credit = self._found(take)
                if credit.expires <= now:
                    return None
            if credit.units < (need if take.tokens else 1):
                return None
        for held in leases:
            if not held.idle:
                return None
        for take in takes:
            credit = take.credit
            credit.units -= reserve if take.tokens else 1
            credit.used = now
            if credit.units < credit.low and take.counter not in self._asking:  # top up before it runs out
                self._asking.add(take.counter)
                self._background(self._refill(take, credit))
        for held in leases:
            held.busy.insert(0, held.idle.pop())
        # (A comprehension over a list: compiled, it fills a list made at its size, where appends grow one.)
        return [take.credit.seen - take.credit.units for take in takes]

    async def acquire(
        self, takes: Sequence[Take], reserve: int, slots: Sequence[Slot], lease: str, now: float
    ) -> Outcome:
        permits = self._permits
        if permits:
            local = self._draw(list(takes), reserve, [self._leases_of(s.counter) for s in slots], now)
            if local is not None:
                return Outcome(True, -1, tuple(local))
        p = self._prefix
        keys = [p + t.counter for t in takes] + [p + s.counter for s in slots]
        args: list[Any] = [lease, _ms(now), _ms(now + LEASE_SECONDS), len(takes)]
        asks = []
        # One request for permits per counter in flight at a time: the calls of a burst that all miss at once must
        # not each take a grant (together they could take the whole room and leave it idle here).
        asking = self._asking
        # Permits serve only calls they can admit whole: a call under a limit too small to grant any is counted here
        # every time, and permits of its other limits would sit idle, holding room other replicas could use.
        grants = permits and all(grants_permits(t.limit) for t in takes) and all(grants_permits(s.limit) for s in slots)
        for take in takes:
            amount = reserve if take.tokens else 1
            ask = 0
            if grants and take.counter not in asking:
                # Up to what a top-up fills to, no more: for tokens that is half a grant's worth, so the refund of
                # this very call does not push the permits over their cap and back to Redis.
                ask = fill_target(PERMIT_CALLS * (amount or 1), take.tokens)
                held = self._credit.get(take.counter)
                if held is not None and held.expires > now:
                    ask = max(0, ask - held.units)
            asks.append(ask)
            args += [take.limit, amount, _ms(take.expires), ask]
        spares = []
        for slot in slots:
            spare = 0
            if grants and slot.counter not in asking:
                leases = self._leases.get(slot.counter)
                spare = max(0, PERMIT_LEASES - (len(leases.idle) if leases is not None else 0))
            spares.append(spare)
            args += [slot.limit, spare]
        mine = [t.counter for t, ask in zip(takes, asks, strict=True) if ask] + [
            s.counter for s, spare in zip(slots, spares, strict=True) if spare
        ]
        asking.update(mine)
        try:
            reply = await self._run("acquire", keys, args)
        finally:
            asking.difference_update(mine)
        n = len(takes)
        values = reply[2 : 2 + n]
        if reply[0] != 1:
            return Outcome(False, reply[1] - 1, tuple(values))
        if permits:
            self._keep(takes, reserve, slots, lease, now=now, values=values, asks=asks, grants=reply[2 + n :])
        return Outcome(True, -1, tuple(values))

    def _background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.ensure_future(work)
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _refill(self, take: Take, credit: Credit) -> None:
        """Ask Redis for another grant of `take`'s counter (counting no call), off the request path; the caller
        marked the counter as asking."""
        ask = credit.target - credit.units
        now = _clock()
        args = ["-", _ms(now), _ms(now), 1, take.limit, 0, _ms(take.expires), ask]
        try:
            reply = await self._run("acquire", [self._prefix + take.counter], args)
        except CountersUnavailable:
            return
        finally:
            self._asking.discard(take.counter)
        if self._credit.get(take.counter) is not credit:
            return
        granted = reply[3] if reply[0] == 1 else 0
        credit.hold(granted, ask)
        if granted:
            credit.seen = reply[2]
            self._schedule_trim()

    def _keep(
        self,
        takes: Sequence[Take],
        reserve: int,
        slots: Sequence[Slot],
        lease: str,
        *,
        now: float,
        values: list[int],
        asks: list[int],
        grants: list[int],
    ) -> None:
        """Keep the permits Redis granted with an admission; `values` become the counts less what is kept here."""
        n = len(takes)
        for i, take in enumerate(takes):
            credit = self._credit.get(take.counter)
            if credit is None or credit.expires <= now:
                if not grants[i]:
                    continue
                credit = self._credit[take.counter] = Credit(take.expires)
            if grants[i]:
                self._schedule_trim()
            credit.used = now
            credit.size(max(credit.cap, PERMIT_CALLS * ((reserve or 1) if take.tokens else 1)), take.tokens)
            credit.hold(grants[i], asks[i])
            credit.seen = values[i]
            values[i] -= credit.units
        for j, slot in enumerate(slots):
            held = self._leases_of(slot.counter)
            held.busy.insert(0, _Spare(lease, now, now, grants_permits(slot.limit)))
            if grants[n + j]:
                held.idle += [_Spare(f"{lease}#{g}", now, now) for g in range(1, grants[n + j] + 1)]
                self._schedule_trim()

    def _settle_into(self, take: Take, credit: Credit, delta: int, now: float) -> _Adjustment | None:
        """Settle `delta` into `credit` (`take`'s, live, holding at least `delta`): a refund kept here, or a shortfall
        paid from what is held. The surplus to give back to Redis when that takes it over its cap (a grant's worth),
        else None."""
        credit.units -= delta
        credit.used = now
        if credit.units > 0 and self._trim is None:
            self._schedule_trim()
        if credit.units <= credit.cap:
            return None
        surplus = credit.units - credit.target  # hold no more than a grant's worth
        credit.units -= surplus
        credit.seen -= surplus
        return _Adjustment(take.counter, -surplus, take.expires)

    def _live(self, take: Take, now: float) -> Credit:
        """`take`'s credit, looked up again by name once the one kept on it has expired (NO_CREDIT when none is held:
        it is expired from the start)."""
        credit = take.credit
        return credit if credit.expires > now else self._found(take)

    def _settle(self, takes: list[Take], delta: int, now: float) -> tuple[list[int], list[tuple[int, _Adjustment]]]:
        """Settle what this process's permits can: the values known here (0 where Redis will tell), and what goes
        to Redis (the index whose value its answer gives, -1 for a surplus given back)."""
        values: list[int] = []
        remote: list[tuple[int, _Adjustment]] = []
        index = -1
        for take in takes:
            index += 1
            credit = self._live(take, now)
            if credit.expires <= now or credit.units < delta:
                remote.append((index, _Adjustment(take.counter, delta, take.expires)))
                values.append(0)
                continue
            surplus = self._settle_into(take, credit, delta, now)
            if surplus is not None:
                remote.append((-1, surplus))
            values.append(credit.seen - credit.units)
        return values, remote

    def _unlease(self, leases: list[_Leases], lease: str, now: float) -> list[tuple[str, str]]:
        """Give back a lease of each cap in `leases`, kept as a spare while fresh; the (slot, lease) pairs Redis must
        drop. Spares above PERMIT_LEASES (the leases of calls admitted one by one while a grant was being asked for)
        go back with the next trim, together, not one round trip each."""
        members = []
        for held in leases:
            busy = held.busy
            if not busy:  # counted without permits: the call's own lease
                members.append((held.slot, lease))
                continue
            spare = busy.pop()  # the oldest
            if spare.reusable and now - spare.taken < _FRESH_LEASE_SECONDS:
                spare.idle_since = now
                held.idle.append(spare)
                if self._trim is None:
                    self._schedule_trim()
            else:
                members.append((held.slot, spare.member))
        return members

    def _settle_held(self, takes: list[Take], delta: int, leases: list[_Leases]) -> bool:
        """`PermitBound.settle`: a lease of each cap in `leases` given back, and `delta` settled from or to the units
        held here; False when the units here cannot settle it (`finish` then must, with no slots). Each take's credit
        is then the one kept on it (`PermitBound.token_values` reads them)."""
        now = _clock()
        members = self._unlease(leases, "", now)
        for take in takes:
            credit = self._live(take, now)
            if credit.expires <= now or credit.units < delta:
                if members:
                    self._background(self._release([], members))
                return False
        returned: list[_Adjustment] = []
        for take in takes:  # all of it here: only surpluses go back
            surplus = self._settle_into(take, take.credit, delta, now)
            if surplus is not None:
                returned.append(surplus)
        if returned or members:
            self._background(self._release(returned, members))
        return True

    async def finish(self, takes: Sequence[Take], delta: int, slots: Sequence[str], lease: str) -> tuple[int, ...]:
        now = _clock()
        # (Lists, which compiled code indexes directly: the permits' own path takes them on every call.)
        values, remote = self._settle(list(takes), delta, now)
        # A cap this process holds no leases of (no permits): a holder of none, not kept, gives back the call's own.
        members = self._unlease([self._leases.get(slot) or _Leases(slot) for slot in slots], lease, now)
        if remote or members:
            p = self._prefix
            keys = [p + a.counter for _, a in remote] + [p + slot for slot, _ in members]
            args: list[Any] = [len(remote)]
            for _, adjustment in remote:
                args += [adjustment.delta, _ms(adjustment.expires)]
            args += [member for _, member in members]
            counts = await self._run("finish", keys, args)
            for (index, adjustment), count in zip(remote, counts, strict=False):
                if index < 0:
                    continue
                credit = self._credit.get(adjustment.counter) if self._permits else None
                if credit is not None and credit.expires > now:
                    credit.seen = count
                    values[index] = count - credit.units  # what this process has not kept for itself
                else:
                    values[index] = count
        return tuple(values)

    def _schedule_trim(self) -> None:
        if self._trim is None:
            self._trim = asyncio.get_running_loop().call_later(self._idle, self._trim_idle)

    def _trim_idle(self) -> None:
        """Give back the permits unused for `idle_seconds`: another replica may need them, and usage reads (which
        see Redis) should show what calls used, not what a process holds."""
        self._trim = None
        now = _clock()
        cutoff = now - self._idle
        members: list[tuple[str, str]] = []
        for held in self._leases.values():
            spares = held.idle
            if not spares:
                continue
            # The newest are used first (taken from the end), so the idle and the surplus are at the start.
            drop = len(spares) - min(PERMIT_LEASES, sum(s.idle_since > cutoff for s in spares))
            members += [(held.slot, s.member) for s in spares[:drop]]
            del spares[:drop]
        returned: list[_Adjustment] = []
        for counter, credit in self._credit.items():
            if credit.units > 0 and credit.used <= cutoff and credit.expires > now:
                returned.append(_Adjustment(counter, -credit.units, credit.expires))
                credit.seen -= credit.units
                credit.units = 0
        if members or returned:
            self._background(self._release(returned, members))
        if any(held.idle for held in self._leases.values()) or any(c.units > 0 for c in self._credit.values()):
            self._schedule_trim()

    async def _release(self, returned: list[_Adjustment], members: list[tuple[str, str]]) -> None:
        p = self._prefix
        keys = [p + a.counter for a in returned] + [p + slot for slot, _ in members]
        args: list[Any] = [len(returned)]
        for adjustment in returned:
            args += [adjustment.delta, _ms(adjustment.expires)]
        args += [member for _, member in members]
        try:
            await self._run("finish", keys, args)
        except CountersUnavailable:  # leases expire in Redis after LEASE_SECONDS, counters with their window
            return

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        p = self._prefix
        keys = [p + c for c in counters] + [p + s for s in slots]
        return tuple(await self._run("peek", keys, [len(counters), _ms(now)]))

    async def close(self) -> None:
        if self._trim is not None:
            self._trim.cancel()
            self._trim = None
        spares = [(held.slot, s.member) for held in self._leases.values() for s in held.idle]
        credits = [_Adjustment(k, -c.units, c.expires) for k, c in self._credit.items() if c.units > 0]
        for held in self._leases.values():  # (bound plans keep their caps' holders: none draws a lease given back)
            held.idle.clear()
        self._credit = {}
        if spares or credits:
            await self._release(credits, spares)
        if self._releasing:
            await asyncio.gather(*self._releasing, return_exceptions=True)
        await self._scripts.close()
        await self._redis.aclose()


class PermitBound:
    """A plan's counters for one window on Redis (`RedisCounters.bind`, with permits): a call the permits this
    process holds cover is admitted, and settled, from them, with no script call and no coroutine; one they do not
    cover is ASK_STORE, for `acquire` (which asks Redis for more as it counts it). Its caps' leases are held here
    (`_Leases`), found by name once, as its takes keep their credits."""

    __slots__ = ("_counters", "_leases", "_takes", "_token_takes", "_values")

    def __init__(self, counters: RedisCounters, takes: list[Take], leases: list[_Leases]) -> None:
        self._counters, self._takes, self._leases = counters, takes, leases
        self._token_takes = [t for t in takes if t.tokens]
        self._values: list[int] = []

    def count(self, reserve: int, with_slots: bool, now: float) -> int:
        values = self._counters._draw(self._takes, reserve, self._leases if with_slots else [], now)
        if values is None:
            return ASK_STORE
        self._values = values
        return ADMITTED

    def values(self) -> list[int]:
        return self._values

    def settle(self, delta: int, with_slots: bool) -> bool:
        takes = self._token_takes if delta else []
        leases = self._leases if with_slots else []
        if not takes and not leases:
            return True
        return self._counters._settle_held(takes, delta, leases)

    def token_values(self) -> list[int]:
        """The token counts after the last `settle` (read only then: most calls need none): what Redis showed when
        the permits were taken, less what this process has used since."""
        return [take.credit.seen - take.credit.units for take in self._token_takes]
