"""Counter stores for rate limits: in process (one node, the embedded default) or Redis (shared by replicas).

Two operations per call, each atomic and each one round trip on Redis (a Lua script, batched with the other calls of
the same event-loop turn):
- `acquire(takes, slots, lease)`: for every take (a windowed counter with a limit and an amount: 1 request, or the
  tokens a call reserves) check that the amount still fits, and for every slot (concurrent requests) that a lease is
  free; only if all fit, add every amount and hold a lease in every slot. Nothing is counted for a refused call.
- `finish(adjustments, slots, lease)`: settle reservations to what was used (a delta per counter, may be negative)
  and give the leases back.
Windowed counters carry an expiry (their window's end plus a margin), after which the store forgets them. Leases in
Redis expire after `LEASE_SECONDS`, so a replica that dies with calls in flight frees its slots by then; the in-process
store loses everything on restart (counts restart at zero), which is what "single node, embedded" can promise.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from server.store.redis_scripts import ScriptBatcher, ScriptFailed

__all__ = [
    "LEASE_SECONDS",
    "Adjustment",
    "Counters",
    "CountersUnavailable",
    "MemoryCounters",
    "Outcome",
    "RedisCounters",
    "Slot",
    "Take",
]

LEASE_SECONDS = 900.0


class CountersUnavailable(Exception):
    """The shared store cannot be reached (the caller fails open or closed, as configured)."""


@dataclass(frozen=True, slots=True)
class Take:
    counter: str
    limit: int
    amount: int
    expires: float  # epoch seconds


@dataclass(frozen=True, slots=True)
class Slot:
    counter: str
    limit: int


@dataclass(frozen=True, slots=True)
class Adjustment:
    counter: str
    delta: int
    expires: float


@dataclass(frozen=True, slots=True)
class Outcome:
    admitted: bool
    refused: int  # index into takes + slots of the first limit that refused; -1 when admitted
    values: tuple[int, ...]  # admitted: each take's count after it; refused: the counts found up to the refusal


class Counters(Protocol):
    async def acquire(self, takes: Sequence[Take], slots: Sequence[Slot], lease: str, now: float) -> Outcome: ...

    async def finish(self, adjustments: Sequence[Adjustment], slots: Sequence[str], lease: str) -> tuple[int, ...]: ...

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]: ...

    async def close(self) -> None: ...


class MemoryCounters:
    """This process's counters. Every method runs without awaiting, so each is atomic on the event loop."""

    _SWEEP_SECONDS = 60.0

    def __init__(self) -> None:
        self._counts: dict[str, list[float]] = {}  # counter -> [value, expires]
        self._slots: dict[str, set[str]] = {}
        self._next_sweep = 0.0

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + self._SWEEP_SECONDS
        self._counts = {k: v for k, v in self._counts.items() if v[1] > now}

    def _value(self, counter: str, now: float) -> int:
        entry = self._counts.get(counter)
        return int(entry[0]) if entry is not None and entry[1] > now else 0

    async def acquire(self, takes: Sequence[Take], slots: Sequence[Slot], lease: str, now: float) -> Outcome:
        self._sweep(now)
        counts = self._counts
        entries: list[list[float]] = []
        for take in takes:
            entry = counts.get(take.counter)
            if entry is None or entry[1] <= now:
                entry = [0, take.expires]
            entries.append(entry)
            if entry[0] + (take.amount or 1) > take.limit:  # a zero amount still needs room: none at the limit
                return Outcome(False, len(entries) - 1, tuple(int(e[0]) for e in entries))
        for index, slot in enumerate(slots):
            held = self._slots.get(slot.counter)
            if held is not None and len(held) >= slot.limit:
                return Outcome(False, len(takes) + index, tuple(int(e[0]) for e in entries))
        for take, entry in zip(takes, entries, strict=True):
            entry[0] += take.amount
            entry[1] = take.expires
            counts[take.counter] = entry
        for slot in slots:
            self._slots.setdefault(slot.counter, set()).add(lease)
        return Outcome(True, -1, tuple(int(e[0]) for e in entries))

    async def finish(self, adjustments: Sequence[Adjustment], slots: Sequence[str], lease: str) -> tuple[int, ...]:
        now = time.time()
        values = []
        for adjustment in adjustments:
            value = self._value(adjustment.counter, now) + adjustment.delta
            if adjustment.expires > now:
                self._counts[adjustment.counter] = [value, adjustment.expires]
            values.append(value)
        for counter in slots:
            held = self._slots.get(counter)
            if held is not None:
                held.discard(lease)
                if not held:
                    del self._slots[counter]
        return tuple(values)

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        return (*(self._value(c, now) for c in counters), *(len(self._slots.get(s, ())) for s in slots))

    async def close(self) -> None:
        return None


# KEYS: the takes' counters, then the slots'. ARGV: lease, now (ms), lease end (ms), number of takes, then per take
# its limit, amount and expiry (ms since the epoch), then per slot its limit. Returns {admitted, refused index
# (1-based, 0 when admitted), counts...}.
_ACQUIRE = """
local lease, now, lease_end, n = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local values = {}
for i = 1, n do
  local a = 5 + 3 * (i - 1)
  local current = tonumber(redis.call('GET', KEYS[i]) or '0')
  values[i] = current
  if current + math.max(tonumber(ARGV[a + 1]), 1) > tonumber(ARGV[a]) then
    return {0, i, unpack(values)}
  end
end
local base = 5 + 3 * n
for j = 1, #KEYS - n do
  local key = KEYS[n + j]
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  if redis.call('ZCARD', key) >= tonumber(ARGV[base + j - 1]) then
    return {0, n + j, unpack(values)}
  end
end
for i = 1, n do
  local a = 5 + 3 * (i - 1)
  values[i] = redis.call('INCRBY', KEYS[i], ARGV[a + 1])
  redis.call('PEXPIREAT', KEYS[i], ARGV[a + 2])
end
for j = 1, #KEYS - n do
  redis.call('ZADD', KEYS[n + j], lease_end, lease)
  redis.call('PEXPIREAT', KEYS[n + j], lease_end)
end
return {1, 0, unpack(values)}
"""

# KEYS: the counters to adjust, then the slots. ARGV: lease, number of counters, then per counter its delta and
# expiry (ms; a counter whose window already ended is dropped by the expiry in the past). Returns the new counts.
_FINISH = """
local n = tonumber(ARGV[2])
local values = {}
for i = 1, n do
  local a = 3 + 2 * (i - 1)
  values[i] = redis.call('INCRBY', KEYS[i], ARGV[a])
  redis.call('PEXPIREAT', KEYS[i], ARGV[a + 1])
end
for j = n + 1, #KEYS do
  redis.call('ZREM', KEYS[j], ARGV[1])
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


class RedisCounters:
    """Counters shared by every replica, in Redis under `prefix`. Each method is one script call (EVALSHA), batched
    with the calls of the same event-loop turn into one round trip (server.store.redis_scripts)."""

    def __init__(self, url: str, *, prefix: str = "switchboard:limits:", timeout: float = 2.0) -> None:
        import redis.asyncio as redis

        # No per-read socket timeout: each batch has one deadline of `timeout` (server.store.redis_scripts).
        self._redis: Any = redis.Redis.from_url(url, socket_timeout=None, socket_connect_timeout=timeout)
        self._prefix = prefix
        scripts = {"acquire": _ACQUIRE, "finish": _FINISH, "peek": _PEEK}
        self._scripts = ScriptBatcher(self._redis, scripts, timeout=timeout)

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> list[int]:
        try:
            return [int(v) for v in await self._scripts.call(script, keys, args)]
        except ScriptFailed as exc:
            raise CountersUnavailable(str(exc)) from None

    async def acquire(self, takes: Sequence[Take], slots: Sequence[Slot], lease: str, now: float) -> Outcome:
        p = self._prefix
        keys = [p + t.counter for t in takes] + [p + s.counter for s in slots]
        args: list[Any] = [lease, _ms(now), _ms(now + LEASE_SECONDS), len(takes)]
        for take in takes:
            args += [take.limit, take.amount, _ms(take.expires)]
        args += [slot.limit for slot in slots]
        reply = await self._run("acquire", keys, args)
        return Outcome(reply[0] == 1, reply[1] - 1, tuple(reply[2:]))

    async def finish(self, adjustments: Sequence[Adjustment], slots: Sequence[str], lease: str) -> tuple[int, ...]:
        p = self._prefix
        keys = [p + a.counter for a in adjustments] + [p + s for s in slots]
        args: list[Any] = [lease, len(adjustments)]
        for adjustment in adjustments:
            args += [adjustment.delta, _ms(adjustment.expires)]
        return tuple(await self._run("finish", keys, args))

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        p = self._prefix
        keys = [p + c for c in counters] + [p + s for s in slots]
        return tuple(await self._run("peek", keys, [len(counters), _ms(now)]))

    async def close(self) -> None:
        await self._scripts.close()
        await self._redis.aclose()
