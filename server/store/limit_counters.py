"""Counter stores for rate limits: the protocol every store implements (`Counters`, `Bound`), the records they take
and answer, and the in-process store (one node, the embedded default). The other stores implement the same protocol in
their own modules: Redis, shared by replicas (server.store.redis_counters), and the table a gateway's workers share
(server.store.shared_counters).

Two operations per call, each atomic and each one round trip on Redis (a Lua script, batched with the other calls of
the same event-loop turn):
- `acquire(takes, reserve, slots, lease)`: for every take (a windowed counter with a limit, counting one request, or
  for a `tokens` take the `reserve` tokens the call reserves) check that its amount still fits, and for every slot
  (concurrent requests) that a lease is free; only if all fit, add every amount and hold a lease in every slot.
  Nothing is counted for a refused call.
- `finish(counters, delta, slots, lease)`: settle a call's reservations to what it used (`delta`, may be negative,
  added to each of its token counters) and give the leases back.
A call's Takes and Slots are the same for every call of its plan in a window (the limiter makes them once), so the
hot path allocates none.
Windowed counters carry an expiry (their window's end plus a margin), after which the store forgets them. The
in-process store loses everything on restart (counts restart at zero), which is what "single node, embedded" can
promise (leases in Redis expire instead: server.store.redis_counters).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from server.store.permits import NO_CREDIT, Credit

__all__ = [
    "ADMITTED",
    "ASK_STORE",
    "Bound",
    "Cell",
    "CellBound",
    "Counters",
    "CountersUnavailable",
    "MemoryCounters",
    "Outcome",
    "Slot",
    "Take",
]

# What `Bound.count` answers besides the index (into takes, then slots) of the limit that refused the call. (Final
# constants are folded into compiled code; a plain module global is looked up by name at every use.)
ADMITTED: Final = -1
ASK_STORE: Final = -2  # not counted here: count it in the store (`Counters.acquire`)


class CountersUnavailable(Exception):
    """The shared store cannot be reached (the caller fails open or closed, as configured)."""


# Plain slotted records (a frozen dataclass costs ~4x as much to create). Treated as values: nothing changes one
# after it is made, except a Take's `credit`.
@dataclass(slots=True)
class Take:
    counter: str
    limit: int
    tokens: bool  # counts the call's reservation (else one request)
    expires: float  # epoch seconds
    # RedisCounters' permits of this counter, kept on the Take once found: a plan makes its Takes once per window,
    # so each call of the window finds them without a lookup by name (RedisCounters._credit stays their holder).
    credit: Credit = NO_CREDIT


@dataclass(slots=True)
class Slot:
    counter: str
    limit: int


class Outcome:
    """One `acquire`'s answer: `refused` is the index into takes + slots of the first limit that refused (-1 when
    admitted); `values` each take's count after it when admitted, else the counts found up to the refusal. (A plain
    class, one per call: compiled, a dataclass keeps the interpreted `__init__` that `dataclasses` writes.)"""

    __slots__ = ("admitted", "refused", "values")

    def __init__(self, admitted: bool, refused: int, values: tuple[int, ...]) -> None:
        self.admitted, self.refused, self.values = admitted, refused, values


class Counters(Protocol):
    def bind(self, takes: Sequence[Take], slots: Sequence[Slot], now: float) -> Bound | None:
        """A plan's counters for one window, counted on directly (`Bound.count`, `Bound.settle`) by a store that
        counts in this host's memory (this process's, or the table a gateway's workers share); None from a store that
        counts elsewhere (every call then goes through `acquire`)."""
        ...

    async def acquire(
        self, takes: Sequence[Take], reserve: int, slots: Sequence[Slot], lease: str, now: float
    ) -> Outcome: ...

    async def finish(self, takes: Sequence[Take], delta: int, slots: Sequence[str], lease: str) -> tuple[int, ...]:
        """Add `delta` to the counter of each of `takes` (the call's token takes: their limits are not checked, a
        counter past its expiry is left alone) and give back the leases of `slots`; the new counts."""
        ...

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]: ...

    async def close(self) -> None: ...


class Cell:
    """One counter in process: its value, and its expiry (epoch seconds) after which it counts as zero."""

    __slots__ = ("expires", "value")

    def __init__(self, value: int, expires: float) -> None:
        self.value, self.expires = value, expires


class Bound(Protocol):
    """A plan's counters for one window (`Counters.bind`), counted on directly: no lookup by name, no coroutine per
    call. `count` counts one call if every take and (`with_slots`) every slot has room, else nothing, and answers
    ADMITTED, the index (into takes, then slots) of the limit that refused it, or ASK_STORE when what this process
    holds cannot tell (the call then goes through `Counters.acquire`); `values` are the takes' counts after it (up to
    the refusal). `settle` gives a call's leases back and adds its token delta, after which `token_values` are the
    token counts; False when the delta could not be settled here (it then goes through `Counters.finish`)."""

    def count(self, reserve: int, with_slots: bool, now: float) -> int: ...

    def values(self) -> list[int]: ...

    def settle(self, delta: int, with_slots: bool) -> bool: ...

    def token_values(self) -> list[int]: ...


class CellBound:
    """A plan's counters in process for one window (`MemoryCounters.bind`), found by name once: each call of the
    window counts on them directly. In the gateway a request's CPU grows with every Python step it takes, far more
    than a hot loop shows (the limiter's ~50 calls per request cost ~20 us there against ~6 us alone), so the
    per-call path does no lookup, allocation or expiry check that can be done once per window: counters of requests
    and of tokens are held apart (each adds one amount, unpacked without a flag); `values` reads the counts in the
    takes' order."""

    __slots__ = ("cells", "request_cells", "requests", "slot_cells", "slots", "takes", "token_cells", "tokens")

    def __init__(self, takes: list[tuple[Cell, int, bool]], slots: list[tuple[Cell, int]]) -> None:
        self.takes = takes  # (counter, limit, counts the reservation rather than one request), in the takes' order
        self.slots = slots  # (leases held, limit)
        self.cells = [cell for cell, _, _ in takes]
        self.requests = [(cell, limit) for cell, limit, tokens in takes if not tokens]
        self.tokens = [(cell, limit) for cell, limit, tokens in takes if tokens]
        self.request_cells = [cell for cell, _ in self.requests]
        self.token_cells = [cell for cell, _ in self.tokens]
        self.slot_cells = [cell for cell, _ in slots]

    def values(self) -> list[int]:
        return [cell.value for cell in self.cells]

    def token_values(self) -> list[int]:
        return [cell.value for cell in self.token_cells]

    def count(self, reserve: int, with_slots: bool, now: float) -> int:
        """Each counter is checked and counted in one pass; a refusal takes back what the pass counted. (`now` goes
        unused: the cells are the window's.)"""
        for cell, limit in self.requests:
            if cell.value >= limit:
                return self._take_back(reserve, cell, with_slots)
            cell.value += 1
        need = reserve or 1  # a zero reservation still needs room: none at the limit
        for cell, limit in self.tokens:
            if cell.value + need > limit:
                return self._take_back(reserve, cell, with_slots)
            cell.value += reserve
        if with_slots:
            for cell, limit in self.slots:
                if cell.value >= limit:
                    return self._take_back(reserve, cell, with_slots)
                cell.value += 1
        return ADMITTED

    def _take_back(self, reserve: int, refused: Cell, with_slots: bool) -> int:
        """Undo what `count` counted before it reached the counter without room; the index of the limit that
        refused, for `count` to answer."""
        counted = [(cell, 1) for cell in self.request_cells] + [(cell, reserve) for cell in self.token_cells]
        for cell, amount in counted + [(cell, 1) for cell in self.slot_cells]:
            if cell is refused:
                break
            cell.value -= amount
        return self._refused(reserve, with_slots)

    def _refused(self, reserve: int, with_slots: bool) -> int:
        """The index (into takes, then slots) of the first limit without room for the call."""
        need = reserve or 1
        index = 0
        for cell, limit, tokens in self.takes:
            if cell.value + (need if tokens else 1) > limit:
                return index
            index += 1
        if with_slots:
            for cell, limit in self.slots:
                if cell.value >= limit:
                    return index
                index += 1
        return -1

    def settle(self, delta: int, with_slots: bool) -> bool:
        """Add `delta` to the token counters and give back a lease of each slot."""
        if delta:
            for cell in self.token_cells:
                cell.value += delta
        if with_slots:
            for cell in self.slot_cells:
                if cell.value > 0:
                    cell.value -= 1
        return True


class MemoryCounters:
    """This process's counters. Every method runs without awaiting, so each is atomic on the event loop. A
    concurrency cap is a count of leases held (no lease names: nothing outlives the process to expire them)."""

    _SWEEP_SECONDS = 60.0

    def __init__(self) -> None:
        self._counts: dict[str, Cell] = {}  # windowed counters, and slots (which never expire)
        self._next_sweep = 0.0

    def _sweep(self, now: float) -> None:
        self._next_sweep = now + self._SWEEP_SECONDS
        self._counts = {k: v for k, v in self._counts.items() if v.expires > now}

    def _value(self, counter: str, now: float) -> int:
        entry = self._counts.get(counter)
        return entry.value if entry is not None and entry.expires > now else 0

    def bind(self, takes: Sequence[Take], slots: Sequence[Slot], now: float) -> CellBound:
        """The counters of `takes` (made, or restarted if their window ended) and `slots`, for `count`."""
        if now >= self._next_sweep:
            self._sweep(now)
        counts = self._counts
        bound_takes: list[tuple[Cell, int, bool]] = []
        for take in takes:
            entry = counts.get(take.counter)
            if entry is None:
                entry = counts[take.counter] = Cell(0, take.expires)
            elif entry.expires <= now:
                entry.value, entry.expires = 0, take.expires
            else:
                entry.expires = max(entry.expires, take.expires)
            bound_takes.append((entry, take.limit, take.tokens))
        bound_slots: list[tuple[Cell, int]] = []
        for slot in slots:
            entry = counts.get(slot.counter)
            if entry is None:
                entry = counts[slot.counter] = Cell(0, math.inf)
            bound_slots.append((entry, slot.limit))
        return CellBound(bound_takes, bound_slots)

    async def acquire(
        self, takes: Sequence[Take], reserve: int, slots: Sequence[Slot], lease: str, now: float
    ) -> Outcome:
        bound = self.bind(takes, slots, now)
        refused = bound.count(reserve, bool(slots), now)
        if refused == ADMITTED:
            return Outcome(True, -1, tuple(bound.values()))
        return Outcome(False, refused, tuple(bound.values()[: refused + 1]))  # the counts found up to the refusal

    async def finish(self, takes: Sequence[Take], delta: int, slots: Sequence[str], lease: str) -> tuple[int, ...]:
        now = time.time()
        values = []
        counts = self._counts
        for take in takes:
            name, expires = take.counter, take.expires
            entry = counts.get(name)
            value = (entry.value if entry is not None and entry.expires > now else 0) + delta
            if expires > now:
                if entry is None:
                    counts[name] = Cell(value, expires)
                else:
                    entry.value, entry.expires = value, expires
            values.append(value)
        for counter in slots:
            held = counts.get(counter)
            if held is not None and held.value > 0:
                held.value -= 1
        return tuple(values)

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        return tuple(self._value(c, now) for c in (*counters, *slots))

    async def close(self) -> None:
        return None
