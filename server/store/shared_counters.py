"""Rate-limit counters shared by the worker processes of one gateway, in memory the parent maps before forking them.

Without Redis each gateway worker used to count on its own, so N workers admitted N times a limit. `SharedCounters`
keeps one table for all of them, with the same contract and the same fixed-window semantics as `MemoryCounters`
(a counter's value counts while its expiry is ahead; a take needs room for `max(amount, 1)`; nothing is counted for
a refused call; a settlement after its window's expiry leaves nothing behind). Across replicas (other hosts, other
gateway processes) it shares nothing: that is what Redis is for.

**Layout.** One anonymous shared file (memfd), mapped MAP_SHARED, of `slots` fixed-size slots of int64 words:
`[key1, key2, value, expires_ms, leases, lease count of worker 0 … worker W-1]`. A counter's key is 128 bits of
BLAKE2b of its name (a collision of two live counters is as likely as guessing a random 128-bit number). The table
is split into `stripes` regions; a counter lives in the region its **tenant** (the name's first `|` segment) hashes
to, so one call's counters (all of one tenant) sit under one lock, and at a slot within `PROBES` of its home slot
(linear probing, wrapping inside the region).

**Atomicity.** Each region has a lock: a process-shared POSIX semaphore (multiprocessing's Lock, made before the
fork), which costs no system call when nobody else holds it (an fcntl record lock costs two per operation, about
2.5 us here: most of what counting in shared memory added). An operation locks the regions of its counters in
ascending order (so two operations never wait on each other in a cycle), reads, checks and writes with no await in
between, and unlocks. While it holds a region's lock, a worker's column number is in that region's `holder` word.
The kernel does not release a semaphore whose holder dies, so the parent does, when it reaps the worker
(`release_worker`): a region whose holder was the dead worker is taken over at once; one held for
`STRANDED_SECONDS` with no holder named (it died between taking the lock and naming itself, or between the two on
the way out) is taken over then. A worker killed mid-operation (the watchdog's SIGKILL, the OOM killer) therefore
leaves no region locked for longer than that, and at most that one operation half written (a count or a lease off
by one). Until its parent reaps it, the other workers wait for the region, as they would wait for a live holder.

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

from server.store.limit_counters import CountersUnavailable, Outcome, Slot, Take

__all__ = ["PROBES", "STRANDED_SECONDS", "SharedCounters"]

PROBES = 32  # how far from its home slot a counter may live
_KEY1, _KEY2, _VALUE, _EXPIRES, _LEASES, _COLUMNS = range(6)
_MAX_NAMES = 100_000  # names whose slot coordinates are remembered (cleared when reached)
# Concurrency slots are a namespace of their own, as in MemoryCounters; a suffix keeps them in their tenant's region.
_LEASE_SUFFIX = "|\x00lease"
# How long a region's lock may be held with no holder named before the parent, reaping a dead worker, takes it over.
# An operation holds a lock for microseconds; this is far beyond any live holder's, even descheduled on a busy host.
STRANDED_SECONDS = 2.0
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


def _signed(data: bytes) -> int:
    return int.from_bytes(data, "little", signed=True)


class _Place:
    """Where a counter lives: its region, home slot and key, and the slot it was last found in (a hint, checked)."""

    __slots__ = ("at", "home", "key1", "key2", "stripe")

    def __init__(self, stripe: int, home: int, key1: int, key2: int) -> None:
        self.stripe, self.home, self.key1, self.key2 = stripe, home, key1, key2
        self.at = -1


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

    def _at(self, place: _Place, now_ms: int, claim: bool) -> int:
        """`_find`, its first check inline: where the counter was last seen is nearly always where it still is. That
        check reads only the first 64 bits of the key (each word read here costs ~0.1 us): another counter would have
        to take over that very slot with the same first 64 bits to be mistaken for it."""
        at = place.at
        if at >= 0 and self._words[at] == place.key1:
            return at
        return self._find(place, now_ms, claim)

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
            raise CountersUnavailable("the shared rate-limit counter table is full")
        words[free + _VALUE] = 0
        words[free + _EXPIRES] = now_ms + 1  # live for the rest of this operation: no other counter of it takes it
        words[free + _LEASES] = 0
        for column in range(_COLUMNS, stride):
            words[free + column] = 0
        words[free] = key1
        words[free + _KEY2] = key2
        place.at = free
        return free

    def _lock(self, places: Sequence[_Place]) -> list[int]:
        """Lock the regions of `places` in ascending order; the regions locked (for `_unlock`)."""
        stripe = places[0].stripe
        stripes = [stripe]
        for place in places:
            if place.stripe != stripe:  # rare: counters of more than one tenant
                stripes = sorted({p.stripe for p in places})
                break
        locks, holders, me = self._locks, self._holders, self._me
        for locking in stripes:
            locks[locking].acquire()  # no system call unless another process holds it
            holders[locking] = me
        return stripes

    def _unlock(self, stripes: list[int]) -> None:
        locks, holders = self._locks, self._holders
        for stripe in reversed(stripes):
            holders[stripe] = 0
            locks[stripe].release()

    # -- the Counters contract --------------------------------------------------------------------------------------

    def bind(self, takes: Sequence[Take], slots: Sequence[Slot], now: float) -> None:
        return None  # counted under the table's locks: each call goes through `acquire`

    async def acquire(
        self, takes: Sequence[Take], reserve: int, slots: Sequence[Slot], lease: str, now: float
    ) -> Outcome:
        names, where, lease_names = self._names, self._where, self._lease_names
        everything = [names.get(t.counter) or where(t.counter) for t in takes]
        if slots:
            everything += [lease_names.get(s.counter) or self._lease_where(s.counter) for s in slots]
        if not everything:
            return Outcome(True, -1, ())
        now_ms = int(now * 1000)
        words, at_of = self._words, self._at
        count = len(takes)
        locked = self._lock(everything)
        try:
            offsets = [at_of(place, now_ms, True) for place in everything]
            values: list[int] = []
            expiries: list[int] = []
            for index in range(count):
                at, take = offsets[index], takes[index]
                expires_ms = words[at + _EXPIRES]
                value = words[at + _VALUE] if expires_ms > now_ms else 0
                values.append(value)
                expiries.append(expires_ms)
                # A zero reservation still needs room: none at the limit.
                if value + ((reserve or 1) if take.tokens else 1) > take.limit:
                    return Outcome(False, index, tuple(values))
            for index in range(count, len(offsets)):
                if words[offsets[index] + _LEASES] >= slots[index - count].limit:
                    return Outcome(False, index, tuple(values))
            for index in range(count):
                at, take = offsets[index], takes[index]
                values[index] += reserve if take.tokens else 1
                words[at + _VALUE] = values[index]
                expires_ms = int(take.expires * 1000)
                if expiries[index] != expires_ms:  # a write costs more than the read that spares it
                    words[at + _EXPIRES] = expires_ms
            column = _COLUMNS + self._column
            for index in range(count, len(offsets)):
                at = offsets[index]
                words[at + _LEASES] += 1
                words[at + column] += 1
        finally:
            self._unlock(locked)
        self._hold(slots, lease)
        return Outcome(True, -1, tuple(values))

    def _hold(self, slots: Sequence[Slot], lease: str) -> None:
        held = self._held
        for slot in slots:
            leases = held.get(slot.counter)
            if leases is None:
                held[slot.counter] = {lease}
            else:
                leases.add(lease)

    async def finish(
        self, counters: Sequence[tuple[str, float]], delta: int, slots: Sequence[str], lease: str
    ) -> tuple[int, ...]:
        names, where = self._names, self._where
        everything = [names.get(name) or where(name) for name, _ in counters]
        for counter in slots:
            held = self._held.get(counter)
            if held is not None and lease in held:
                held.discard(lease)
                if not held:
                    del self._held[counter]
                everything.append(self._lease_names.get(counter) or self._lease_where(counter))
        if not everything:
            return ()
        now_ms = int(time.time() * 1000)
        words, at_of = self._words, self._at
        values = []
        count = len(counters)
        locked = self._lock(everything)
        try:
            for index in range(count):
                expires_ms = int(counters[index][1] * 1000)
                live = expires_ms > now_ms
                at = at_of(everything[index], now_ms, live)
                found = words[at + _EXPIRES] if at >= 0 else 0
                value = (words[at + _VALUE] if found > now_ms else 0) + delta
                if at >= 0 and live:
                    words[at + _VALUE] = value
                    if found != expires_ms:
                        words[at + _EXPIRES] = expires_ms
                values.append(value)
            column = _COLUMNS + self._column
            for index in range(count, len(everything)):
                at = at_of(everything[index], now_ms, False)
                if at >= 0 and words[at + column] > 0:
                    words[at + column] -= 1
                    words[at + _LEASES] -= 1
        finally:
            self._unlock(locked)
        return tuple(values)

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        wheres = [self._where(c) for c in counters] + [self._lease_where(s) for s in slots]
        if not wheres:
            return ()
        now_ms = int(now * 1000)
        words = self._words
        values = []
        locked = self._lock(wheres)
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

    async def close(self) -> None:
        """This process's use ends; the mapping stays for the others (it goes with the last process)."""
        return None
