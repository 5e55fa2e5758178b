"""Rate-limit counters shared by the worker processes of one gateway, in memory the parent maps before forking them.

Without Redis each gateway worker used to count on its own, so N workers admitted N times a limit. `SharedCounters`
keeps one table for all of them, with the same contract and the same fixed-window semantics as `MemoryCounters`
(a counter's value counts while its expiry is ahead; a take needs room for `max(amount, 1)`; nothing is counted for
a refused call; a settlement after its window's expiry leaves nothing behind). Across replicas (other hosts, other
gateway processes) it shares nothing: that is what Redis is for. A gateway worker counts through permits it holds of
the table (server.store.shared_permits), which come here only every few hundred calls.

**Layout.** One anonymous shared file (memfd), mapped MAP_SHARED, of `slots` fixed-size slots of int64 words:
`[key1, key2, value, expires_ms, leases, lease count of worker 0 … worker W-1]`. A counter's key is 128 bits of
BLAKE2b of its name (a collision of two live counters is as likely as guessing a random 128-bit number). The table
is split into `stripes` regions; a counter lives in the region its **tenant** (the name's first `|` segment) hashes
to, so one call's counters (all of one tenant) sit under one lock, and at a slot within `PROBES` of its home slot
(linear probing, wrapping inside the region).

**Atomicity.** Each region has a lock: a process-shared POSIX semaphore (multiprocessing's Lock, made before the fork),
which costs no system call when nobody else holds it (an fcntl record lock costs two per operation, about 2.5 us here:
most of what counting in shared memory added). An operation locks the regions of its counters in ascending order (so two
operations never wait on each other in a cycle), reads, checks and writes with no await in between, and unlocks. The
limiter counts through `bind`: a plan's counters are found by name once per window (`TableBound`), and each call is then
one such locked pass over them. While it holds a region's lock, a worker's column number is in that region's `holder`
word. The kernel does not release a semaphore whose holder dies, so the parent does, when it reaps the worker
(`release_worker`): a region whose holder was the dead worker is taken over at once; one held for `STRANDED_SECONDS`
with no holder named (it died between taking the lock and naming itself, or between the two on the way out) is taken
over then. A worker killed mid-operation (the watchdog's SIGKILL, the OOM killer) therefore leaves no region locked for
longer than that, and at most that one operation half written (a count or a lease off by one). Until its parent reaps
it, the other workers wait for the region, as they would wait for a live holder.

**Slots.** A slot is live while its expiry is ahead or it holds leases; a dead slot is reused by whichever counter
probes it first. Slots are never emptied again once used, which is what lets a lookup stop at the first empty slot
(an insert takes the first dead or empty slot of its probe run, so a key is never stored beyond an empty slot). When
all `PROBES` slots from a counter's home are live the table is full there: the operation raises
`CountersUnavailable`, and the limiter fails open or closed as configured.

**Leases** (concurrent requests) are counted per worker: each worker owns one column (its index among the gateway's
workers) and the slot keeps their sum. When a worker dies, its parent zeroes its column everywhere (`release_worker`)
before a replacement takes that index, so the dead worker's calls in flight free their slots at once.
"""

from __future__ import annotations

import hashlib
import mmap
import multiprocessing
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from server.store.limit_counters import ADMITTED, ASK_STORE, CountersUnavailable, Outcome, Slot, Take

__all__ = ["PROBES", "STRANDED_SECONDS", "SharedCounters"]

PROBES = 32  # how far from its home slot a counter may live
# A slot's words. Final: compiled code folds them in (a plain module global is looked up by name at every use).
_KEY1: Final = 0
_KEY2: Final = 1
_VALUE: Final = 2
_EXPIRES: Final = 3
_LEASES: Final = 4
_COLUMNS: Final = 5
_MAX_NAMES = 100_000  # names whose slot coordinates are remembered (cleared when reached)
# Concurrency slots are a namespace of their own, as in MemoryCounters; a suffix keeps them in their tenant's region.
_LEASE_SUFFIX = "|\x00lease"
# How long a region's lock may be held with no holder named before the parent, reaping a dead worker, takes it over.
# An operation holds a lock for microseconds; this is far beyond any live holder's, even descheduled on a busy host.
STRANDED_SECONDS = 2.0
_FULL = "the shared rate-limit counter table is full"
_PARENT = -1  # the holder word of a lock the parent (a process that counts as no worker) holds


def _anonymous_file(size: int) -> int:
    """A file descriptor of `size` zero bytes in memory (memfd: never written back to a disk)."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("switchboard-limits", os.MFD_CLOEXEC)
    else:  # pragma: no cover - non-Linux
        with tempfile.TemporaryFile() as handle:
            fd = os.dup(handle.fileno())
    os.ftruncate(fd, size)
    return fd


def _drop_leases(words: memoryview, at: int, column: int, count: int) -> None:
    """Give back up to `count` of the leases a worker's `column` holds in the slot at `at`."""
    count = min(count, words[at + column])
    if count > 0:
        words[at + column] -= count
        words[at + _LEASES] -= count


def _signed(data: bytes) -> int:
    return int.from_bytes(data, "little", signed=True)


class _Place:
    """Where a counter lives: its region, home slot and key, and the slot it was last found in (a hint, checked)."""

    __slots__ = ("at", "home", "key1", "key2", "stripe")

    def __init__(self, stripe: int, home: int, key1: int, key2: int) -> None:
        self.stripe, self.home, self.key1, self.key2 = stripe, home, key1, key2
        self.at = -1


@dataclass(slots=True)
class _Counter:
    """A windowed counter as a bound plan counts on it: its place, its limit, whether it counts the call's reservation
    (else one request), and its window's expiry in ms."""

    place: _Place
    limit: int
    tokens: bool
    expires_ms: int


class TableBound:
    """A plan's counters in the shared table for one window (`SharedCounters.bind`): their places, limits and expiries
    found once, so each call locks their regions, checks and counts them and unlocks, with no lookup by name, no
    expiry to convert and no coroutine. What a call counted (`values`, and after `settle` the token counts) is kept
    until the next call: the limiter reads it at once, with nothing awaited in between."""

    __slots__ = (
        "_counters",
        "_leases",
        "_limits",
        "_places",
        "_settled",
        "_stripes",
        "_table",
        "_token_places",
        "_tokens",
        "_values",
    )

    def __init__(self, table: SharedCounters, counters: list[_Counter], slots: list[tuple[_Place, int]]) -> None:
        self._table, self._counters = table, counters
        self._places = [c.place for c in counters]
        self._leases = [place for place, _ in slots]
        self._limits = [limit for _, limit in slots]
        self._tokens = [c for c in counters if c.tokens]
        self._token_places = [c.place for c in self._tokens]
        everything = self._places + self._leases
        self._stripes = table._stripes_of(everything) if everything else []
        self._values: list[int] = []
        self._settled: list[int] = []

    def count(self, reserve: int, with_slots: bool, now: float) -> int:
        table, counters = self._table, self._counters
        words = table._words
        now_ms = int(now * 1000)
        need = reserve or 1  # a zero reservation still needs room: none at the limit
        values: list[int] = []
        self._values = values
        table._lock(self._stripes)
        try:
            offsets = table._offsets(self._places, now_ms, True)
            expiries = []
            for index, counter in enumerate(counters):
                at = offsets[index]
                expires_ms = words[at + _EXPIRES]
                value = words[at + _VALUE] if expires_ms > now_ms else 0
                values.append(value)
                expiries.append(expires_ms)
                if value + (need if counter.tokens else 1) > counter.limit:
                    return index
            leases = table._offsets(self._leases, now_ms, True) if with_slots else []
            for index, at in enumerate(leases):
                if words[at + _LEASES] >= self._limits[index]:
                    return len(counters) + index
            for index, counter in enumerate(counters):
                at = offsets[index]
                value = values[index] = values[index] + (reserve if counter.tokens else 1)
                words[at + _VALUE] = value
                if expiries[index] != counter.expires_ms:  # a write costs more than the read that spares it
                    words[at + _EXPIRES] = counter.expires_ms
            column = _COLUMNS + table._column
            for at in leases:
                words[at + _LEASES] += 1
                words[at + column] += 1
        except CountersUnavailable:
            return ASK_STORE  # no slot free for a counter: `acquire` says so (the limiter fails open or closed)
        finally:
            table._unlock(self._stripes)
        return ADMITTED

    def values(self) -> list[int]:
        return self._values

    def settle(self, delta: int, with_slots: bool) -> bool:
        """Add `delta` to the token counters whose window has not ended (a settlement after it leaves nothing
        behind; `token_values` are their counts after it) and give back one of this worker's leases of each slot
        (`with_slots`)."""
        counters = self._tokens
        if not counters and not with_slots:
            return True
        table = self._table
        now_ms = int(time.time() * 1000)
        table._lock(self._stripes)
        try:
            self._settled = self._add_tokens([delta] * len(counters), now_ms) if counters else []
            if with_slots:
                self._give_back_leases([1] * len(self._leases), now_ms)
        finally:
            table._unlock(self._stripes)
        return True

    def _add_tokens(self, deltas: list[int], now_ms: int) -> list[int]:
        """Add each of `deltas` to its token counter (in the takes' order) unless its window has ended; the counts
        after. The caller holds the lock."""
        table = self._table
        words = table._words
        values: list[int] = []
        offsets = table._offsets(self._token_places, now_ms, False)
        for index, counter in enumerate(self._tokens):
            expires_ms = counter.expires_ms
            live = expires_ms > now_ms
            at = offsets[index]
            if at < 0 and live:  # settled before it was ever counted (the store's contract allows it)
                at = table._find(counter.place, now_ms, True)
            found = words[at + _EXPIRES] if at >= 0 else 0
            value = (words[at + _VALUE] if found > now_ms else 0) + deltas[index]
            if at >= 0 and live:
                words[at + _VALUE] = value
                if found != expires_ms:
                    words[at + _EXPIRES] = expires_ms
            values.append(value)
        return values

    def _give_back_leases(self, counts: list[int], now_ms: int) -> None:
        """Give back up to `counts` of this worker's leases of each slot. The caller holds the lock."""
        table = self._table
        words = table._words
        column = _COLUMNS + table._column
        for index, at in enumerate(table._offsets(self._leases, now_ms, False)):
            if at >= 0:
                _drop_leases(words, at, column, counts[index])

    # Worker-local permits (server.store.shared_permits): units of a counter, and spare leases of a slot, counted in
    # the table and held by this worker for calls it has yet to admit.

    def grant(self, asks: list[int], lease_asks: list[int], now: float) -> tuple[list[int], list[int], list[int]]:
        """Count up to `asks` more of each counter (in the takes' order) and hold up to `lease_asks` more leases of
        each slot, in one locked pass, each at most 1/8 of the room left: the grants, the counts after them, and
        the leases granted."""
        table = self._table
        words = table._words
        now_ms = int(now * 1000)
        grants: list[int] = []
        counts: list[int] = []
        lease_grants: list[int] = []
        table._lock(self._stripes)
        try:
            offsets = table._offsets(self._places, now_ms, True)
            for index, counter in enumerate(self._counters):
                at = offsets[index]
                found = words[at + _EXPIRES]
                value = words[at + _VALUE] if found > now_ms else 0
                grant = max(0, min(asks[index], (counter.limit - value) // 8))
                if grant:
                    value += grant
                    words[at + _VALUE] = value
                    if found != counter.expires_ms:
                        words[at + _EXPIRES] = counter.expires_ms
                grants.append(grant)
                counts.append(value)
            column = _COLUMNS + table._column
            for index, at in enumerate(table._offsets(self._leases, now_ms, True)):
                grant = max(0, min(lease_asks[index], (self._limits[index] - words[at + _LEASES]) // 8))
                if grant:
                    words[at + _LEASES] += grant
                    words[at + column] += grant
                lease_grants.append(grant)
        finally:
            table._unlock(self._stripes)
        return grants, counts, lease_grants

    def adjust(self, deltas: list[int], now: float) -> None:
        """Add each of `deltas` to its token counter (settlements, and permits given back)."""
        self._table._lock(self._stripes)
        try:
            self._add_tokens(deltas, int(now * 1000))
        finally:
            self._table._unlock(self._stripes)

    def return_leases(self, counts: list[int], now: float) -> None:
        """Give back `counts` of this worker's leases of each slot (spares above what it keeps)."""
        self._table._lock(self._stripes)
        try:
            self._give_back_leases(counts, int(now * 1000))
        finally:
            self._table._unlock(self._stripes)

    def token_values(self) -> list[int]:
        return self._settled


class SharedCounters:
    """The counter table, created by the gateway's parent before it forks the workers (each calls `attach`)."""

    def __init__(self, *, slots: int, workers: int, stripes: int = 16) -> None:
        if workers < 1 or stripes < 1:
            raise ValueError("workers and stripes must be at least 1")
        self._region = max(PROBES, -(-slots // stripes))  # slots per stripe
        self._stripes = stripes
        self._workers = workers
        self._stride = _COLUMNS + workers
        self._fd = _anonymous_file(self._region * stripes * self._stride * 8)
        self._map = mmap.mmap(self._fd, self._region * stripes * self._stride * 8)
        self._words = memoryview(self._map).cast("q")
        context = multiprocessing.get_context("fork")  # the workers are forked: they inherit the semaphores
        self._locks = [context.Lock() for _ in range(stripes)]
        self._holders_map = mmap.mmap(-1, stripes * 8)  # anonymous and shared with the forked workers
        self._holders = memoryview(self._holders_map).cast("q")  # per region: its lock's holder's column + 1, or 0
        self._column = 0
        self._me = _PARENT
        self._names: dict[str, _Place] = {}
        self._lease_names: dict[str, _Place] = {}  # a concurrency slot's name -> its place (no suffix added per call)
        self._held: dict[str, set[str]] = {}  # this process's leases: slot name -> leases

    @property
    def workers(self) -> int:
        return self._workers

    def attach(self, worker: int) -> None:
        """Count as worker `worker` (0 ≤ worker < workers) from now on, in a process just forked from the creator."""
        if not 0 <= worker < self._workers:
            raise ValueError(f"worker index {worker} is outside 0..{self._workers - 1}")
        self._column = worker
        self._me = worker + 1
        self._held = {}
        self.release_worker(worker)

    def release_worker(self, worker: int) -> None:
        """Give back every lease worker `worker` holds (it died, or a new process takes its index)."""
        words, stride, column = self._words, self._stride, _COLUMNS + worker
        for stripe in range(self._stripes):
            self._take_over(stripe, worker + 1)
            try:
                start = stripe * self._region
                for slot in range(start, start + self._region):
                    at = slot * stride
                    held = words[at + column]
                    if held:
                        words[at + _LEASES] -= held
                        words[at + column] = 0
            finally:
                self._unlock([stripe])

    def _take_over(self, stripe: int, dead: int) -> None:
        """Lock region `stripe`, taking its lock over from the worker numbered `dead` (column + 1) should it have died
        holding it (module docstring)."""
        holders, lock = self._holders, self._locks[stripe]
        while True:
            if holders[stripe] == dead or lock.acquire(True, STRANDED_SECONDS):
                break
            if holders[stripe] == 0:  # held this long by no one named: the dead worker, between two steps
                break
        holders[stripe] = self._me

    # -- locating ---------------------------------------------------------------------------------------------------

    def _where(self, name: str) -> _Place:
        found = self._names.get(name)
        if found is None:
            if len(self._names) >= _MAX_NAMES:
                self._names.clear()
            digest = hashlib.blake2b(name.encode(), digest_size=16).digest()
            key1, key2 = _signed(digest[:8]), _signed(digest[8:])
            if key1 == 0 and key2 == 0:  # all-zero marks an empty slot
                key2 = 1
            tenant = name.partition("|")[0].encode()
            stripe = _signed(hashlib.blake2b(tenant, digest_size=8).digest()) % self._stripes
            found = self._names[name] = _Place(stripe, (key1 & 0x7FFFFFFF) % self._region, key1, key2)
        return found

    def _lease_where(self, slot: str) -> _Place:
        found = self._lease_names.get(slot)
        if found is None:
            if len(self._lease_names) >= _MAX_NAMES:
                self._lease_names.clear()
            found = self._lease_names[slot] = self._where(slot + _LEASE_SUFFIX)
        return found

    def _offsets(self, places: Sequence[_Place], now_ms: int, claim: bool) -> list[int]:
        """The slots of `places` (-1 for one without, unless `claim`), by `_find`; its first check inline: where a
        counter was last seen is nearly always where it still is. That check reads only the first 64 bits of the key
        (each word read here costs ~0.1 us): another counter would have to take over that very slot with the same
        first 64 bits to be mistaken for it."""
        words, find = self._words, self._find
        offsets = []
        for place in places:
            at = place.at
            if at < 0 or words[at] != place.key1:
                at = find(place, now_ms, claim)
            offsets.append(at)
        return offsets

    def _find(self, place: _Place, now_ms: int, claim: bool) -> int:
        """The word offset of the counter's slot; -1 when it has none (and `claim` is false). With `claim`, a counter
        without a slot takes the first dead or empty one of its probe run (zeroed), or the table is full there."""
        words = self._words
        at = place.at
        # Where it was last seen: while the slot still holds its key it is its only slot (keys are never stored twice).
        if at >= 0 and words[at] == place.key1 and words[at + _KEY2] == place.key2:
            return at
        key1, key2 = place.key1, place.key2
        stride, region = self._stride, self._region
        start = place.stripe * region
        home = place.home
        free = -1
        for step in range(PROBES):
            at = (start + (home + step) % region) * stride
            first = words[at]
            if first == key1 and words[at + _KEY2] == key2:
                place.at = at
                return at
            if first == 0 and words[at + _KEY2] == 0:  # empty: the key is not stored further on
                if free < 0:
                    free = at
                break
            if free < 0 and words[at + _EXPIRES] <= now_ms and words[at + _LEASES] == 0:
                free = at
        if not claim:
            return -1
        if free < 0:
            raise CountersUnavailable(_FULL)
        words[free + _VALUE] = 0
        words[free + _EXPIRES] = now_ms + 1  # live for the rest of this operation: no other counter of it takes it
        words[free + _LEASES] = 0
        for column in range(_COLUMNS, stride):
            words[free + column] = 0
        words[free] = key1
        words[free + _KEY2] = key2
        place.at = free
        return free

    @staticmethod
    def _stripes_of(places: Sequence[_Place]) -> list[int]:
        """The regions of `places`, ascending: the order `_lock` takes them in (so two operations never wait on each
        other in a cycle)."""
        stripe = places[0].stripe
        for place in places:
            if place.stripe != stripe:  # rare: counters of more than one tenant
                return sorted({p.stripe for p in places})
        return [stripe]

    def _lock(self, stripes: list[int]) -> None:
        locks, holders, me = self._locks, self._holders, self._me
        for locking in stripes:
            locks[locking].acquire()  # no system call unless another process holds it
            holders[locking] = me

    def _unlock(self, stripes: list[int]) -> None:
        locks, holders = self._locks, self._holders
        for stripe in reversed(stripes):
            holders[stripe] = 0
            locks[stripe].release()

    # -- the Counters contract --------------------------------------------------------------------------------------

    def bind(self, takes: Sequence[Take], slots: Sequence[Slot], now: float) -> TableBound:
        """A plan's counters for one window, their places in the table found once (no lock taken: the slots are
        found, or claimed, by each call under its lock)."""
        names, where, lease_names = self._names, self._where, self._lease_names
        return TableBound(
            self,
            [
                _Counter(names.get(t.counter) or where(t.counter), t.limit, t.tokens, int(t.expires * 1000))
                for t in takes
            ],
            [(lease_names.get(s.counter) or self._lease_where(s.counter), s.limit) for s in slots],
        )

    async def acquire(
        self, takes: Sequence[Take], reserve: int, slots: Sequence[Slot], lease: str, now: float
    ) -> Outcome:
        bound = self.bind(takes, slots, now)
        refused = bound.count(reserve, bool(slots), now)
        if refused == ASK_STORE:
            raise CountersUnavailable(_FULL)
        if refused != ADMITTED:
            return Outcome(False, refused, tuple(bound.values()))
        held = self._held
        for slot in slots:
            leases = held.get(slot.counter)
            if leases is None:
                held[slot.counter] = {lease}
            else:
                leases.add(lease)
        return Outcome(True, -1, tuple(bound.values()))

    async def finish(self, takes: Sequence[Take], delta: int, slots: Sequence[str], lease: str) -> tuple[int, ...]:
        held = [Slot(counter, 0) for counter in slots if self._release(counter, lease)]
        bound = self.bind(takes, held, 0.0)  # the call's token takes (`tokens` set), which `settle` settles
        bound.settle(delta, bool(held))
        return tuple(bound.token_values())

    def _release(self, slot: str, lease: str) -> bool:
        """Forget `lease` in `slot` if this process holds it there (its count in the table is then given back)."""
        held = self._held.get(slot)
        if held is None or lease not in held:
            return False
        held.discard(lease)
        if not held:
            del self._held[slot]
        return True

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        wheres = [self._where(c) for c in counters] + [self._lease_where(s) for s in slots]
        if not wheres:
            return ()
        now_ms = int(now * 1000)
        words = self._words
        values = []
        locked = self._stripes_of(wheres)
        self._lock(locked)
        try:
            for index, place in enumerate(wheres):
                at = self._find(place, now_ms, False)
                if at < 0:
                    values.append(0)
                elif index < len(counters):
                    values.append(words[at + _VALUE] if words[at + _EXPIRES] > now_ms else 0)
                else:
                    values.append(words[at + _LEASES])
        finally:
            self._unlock(locked)
        return tuple(values)

    def give_back(self, counters: list[tuple[str, int]], slots: list[tuple[str, int]], now: float) -> None:
        """Take each `(name, units)` off its counter, if its window has not ended, and give back each `(name, count)`
        of this worker's leases of a slot: the permits a worker held idle (server.store.shared_permits)."""
        now_ms = int(now * 1000)
        words = self._words
        column = _COLUMNS + self._column
        places = [(self._where(name), units, False) for name, units in counters]
        places += [(self._lease_where(name), count, True) for name, count in slots]
        for place, amount, lease in places:
            self._lock([place.stripe])
            try:
                at = self._find(place, now_ms, False)
                if at >= 0 and lease:
                    _drop_leases(words, at, column, amount)
                elif at >= 0 and words[at + _EXPIRES] > now_ms:
                    words[at + _VALUE] -= amount
            finally:
                self._unlock([place.stripe])

    async def close(self) -> None:
        """This process's use ends; the mapping stays for the others (it goes with the last process)."""
        return None
