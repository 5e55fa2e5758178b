"""Worker-local permits on the shared counter table: most calls of a busy worker take no lock and touch no shared word.

Counting a call in the table (server.store.shared_counters) locks its tenant's region and reads and writes a few words
per limit: ~40 words a call, each a Python int made and freed, which cost a gateway worker ~8 % of its CPU per request
(in process the same limits cost 2.7 %). So, as each replica does on Redis (RedisCounters(permits=True)), a worker
takes a few more calls' worth of each counter, and a few spare leases of each concurrency cap, into the table with a
call it counts there, and admits its next calls from them in its own memory, where counting costs what it does in
process. The rules are Redis's (server.store.permits): only limits of at least PERMIT_MIN_LIMIT grant permits, and
only when every limit of a call does; a grant is at most what a top-up fills to (`Credit`) and at most 1/8 of the
room left, so a limit's last eighth is counted call by call; permits idle for `idle_seconds` go back to the table.

Permits are counted in the table when taken, so the workers together never admit more than a limit; a worker holding
permits another worker could use delays that worker's calls by at most `idle_seconds`. Usage reads see the table, the
permits included, until they go back. A worker that dies holding permits of a counter leaves them counted until the
counter's window ends (as a replica that dies does on Redis); its spare leases go back when its parent reaps it
(`SharedCounters.release_worker`), as the leases of its calls in flight do.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from server.store.limit_counters import ADMITTED, CountersUnavailable, Outcome, Slot, Take
from server.store.permits import IDLE_SECONDS, PERMIT_CALLS, PERMIT_LEASES, Credit, grants_permits
from server.store.shared_counters import SharedCounters, TableBound

__all__ = ["SharedPermits"]

_SWEEP_SECONDS = 60.0


class _Spares:
    """Leases of one concurrency cap this worker holds for no call: counted in the table, in its column."""

    __slots__ = ("count", "used")

    def __init__(self) -> None:
        self.count = 0
        self.used = 0.0  # when a call last took one or gave one back


class PermitTableBound:
    """A plan's counters for one window, with this worker's permits of them (`SharedPermits.bind`): a call they cover
    is counted in this process's memory; one they do not is counted in the table (`TableBound`), which tops them up in
    the same turn. `count` never answers ASK_STORE, and `settle` always settles (the limiter's Bound protocol)."""

    __slots__ = (
        "_credits",
        "_exact",
        "_permits",
        "_request_credits",
        "_settled",
        "_spares",
        "_token_credits",
        "_values",
    )

    def __init__(
        self,
        permits: SharedPermits,
        exact: TableBound,
        credits: list[Credit],
        takes: Sequence[Take],
        spares: list[_Spares],
    ) -> None:
        self._permits, self._exact = permits, exact
        self._credits = credits  # in the takes' order
        self._request_credits = [c for c, t in zip(credits, takes, strict=True) if not t.tokens]
        self._token_credits = [c for c, t in zip(credits, takes, strict=True) if t.tokens]
        self._spares = spares  # in the slots' order
        self._values: list[int] = []
        self._settled: list[int] = []

    def count(self, reserve: int, with_slots: bool, now: float) -> int:
        need = reserve or 1
        for credit in self._request_credits:
            if credit.units < 1:
                return self._count_in_table(reserve, with_slots, now)
        for credit in self._token_credits:
            if credit.units < need:
                return self._count_in_table(reserve, with_slots, now)
        if with_slots:
            for spares in self._spares:
                if spares.count < 1:
                    return self._count_in_table(reserve, with_slots, now)
            for spares in self._spares:
                spares.count -= 1
                spares.used = now
        low = False
        for credit in self._request_credits:
            credit.units -= 1
            credit.used = now
            low = low or credit.units < credit.low
        for credit in self._token_credits:
            credit.units -= reserve
            credit.used = now
            low = low or credit.units < credit.low
        self._values = [credit.seen - credit.units for credit in self._credits]
        if low:  # top up before they run out: one locked pass every few hundred calls
            self._top_up(reserve, now)
        return ADMITTED

    def _count_in_table(self, reserve: int, with_slots: bool, now: float) -> int:
        """Count the call in the table, and when it is admitted top this worker's permits up (the rare path)."""
        exact = self._exact
        refused = exact.count(reserve, with_slots, now)
        values = exact.values()
        if refused != ADMITTED:
            self._values = values
            return refused
        for index, credit in enumerate(self._credits):
            credit.seen = values[index]
            values[index] -= credit.units  # what this worker does not hold for itself
        self._values = values
        self._top_up(reserve, now)
        return ADMITTED

    def values(self) -> list[int]:
        return self._values

    def settle(self, delta: int, with_slots: bool) -> bool:
        """Give the call's leases back to this worker's spares (to the table above PERMIT_LEASES) and settle `delta`
        into the token permits (in the table what they cannot cover, or what takes them over their cap)."""
        now = time.time()
        if with_slots:
            over = False
            for spares in self._spares:  # every cap's lease back first: a return must not skip the caps after it
                spares.count += 1
                spares.used = now
                over = over or spares.count > PERMIT_LEASES
            if over:
                self._return_spares(now)
        if delta:
            for credit in self._token_credits:
                if credit.units < delta or credit.units - delta > credit.cap:
                    self._settle_in_table(delta, now)
                    break
            else:
                for credit in self._token_credits:
                    credit.units -= delta
                    credit.used = now
        self._permits._schedule_trim()
        self._settled = [credit.seen - credit.units for credit in self._token_credits]
        return True

    def _top_up(self, reserve: int, now: float) -> None:
        """Take what the permits lack into the table, in one locked pass: up to each credit's target, at most 1/8 of
        the room left; spare leases up to PERMIT_LEASES. Only on an event loop, whose timer gives idle permits
        back."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        for credit in self._token_credits:
            credit.size(max(credit.cap, PERMIT_CALLS * (reserve or 1)), True)
        for credit in self._request_credits:
            credit.size(PERMIT_CALLS, False)
        asks = [max(0, credit.target - credit.units) for credit in self._credits]
        lease_asks = [max(0, PERMIT_LEASES - spares.count) for spares in self._spares]
        try:
            grants, counts, lease_grants = self._exact.grant(asks, lease_asks, now)
        except CountersUnavailable:  # no room in the table for a cap's slot: the call itself was counted
            return
        for credit, grant, seen, ask in zip(self._credits, grants, counts, asks, strict=True):
            credit.hold(grant, ask)  # (a grant the room bounded: no locked pass on every call after it)
            if grant:
                credit.seen = seen
                credit.used = now
        for spares, grant in zip(self._spares, lease_grants, strict=True):
            spares.count += grant
            spares.used = now
        if any(grants) or any(lease_grants):
            self._permits._schedule_trim()

    def _settle_in_table(self, delta: int, now: float) -> None:
        """Settle `delta` in the table for every token counter, giving back what the permits hold above their target
        (a refund the permits cannot keep, or a shortfall they cannot pay)."""
        returned = []
        for credit in self._token_credits:
            surplus = credit.units - credit.target if credit.units > credit.target else 0
            credit.units -= surplus
            credit.seen += delta - surplus
            credit.used = now
            returned.append(delta - surplus)
        self._exact.adjust(returned, now)

    def _return_spares(self, now: float) -> None:
        """Give back the spare leases above what a worker keeps (PERMIT_LEASES)."""
        surplus = [max(0, spares.count - PERMIT_LEASES) for spares in self._spares]
        for spares, extra in zip(self._spares, surplus, strict=True):
            spares.count -= extra
        self._exact.return_leases(surplus, now)

    def token_values(self) -> list[int]:
        return self._settled


class SharedPermits:
    """A worker's counters: the shared table (`table`, attached to this worker) with worker-local permits. The
    Counters contract's own calls (`acquire`, `finish`, `peek`) go to the table as they are; the limiter's per-call
    path goes through `bind`."""

    def __init__(self, table: SharedCounters, *, idle_seconds: float = IDLE_SECONDS) -> None:
        self.table = table
        self._idle = idle_seconds
        self._credit: dict[str, Credit] = {}  # counter -> the units of it this worker holds
        self._spares: dict[str, _Spares] = {}  # concurrency slot -> spare leases
        self._trim: asyncio.TimerHandle | None = None
        self._next_sweep = 0.0

    def bind(self, takes: Sequence[Take], slots: Sequence[Slot], now: float) -> TableBound | PermitTableBound:
        exact = self.table.bind(takes, slots, now)
        # Permits serve only calls they can admit whole: under a limit too small to grant any, every call is counted
        # in the table, and permits of the call's other limits would sit idle, holding room other workers could use.
        if not all(grants_permits(t.limit) for t in takes) or not all(grants_permits(s.limit) for s in slots):
            return exact
        if now >= self._next_sweep:
            self._next_sweep = now + _SWEEP_SECONDS
            self._credit = {k: c for k, c in self._credit.items() if c.expires > now}
        credits = []
        for take in takes:
            credit = self._credit.get(take.counter)
            if credit is None:
                credit = self._credit[take.counter] = Credit(take.expires)
            credits.append(credit)
        spares = [self._spares.get(s.counter) or self._spares.setdefault(s.counter, _Spares()) for s in slots]
        return PermitTableBound(self, exact, credits, takes, spares)

    def _schedule_trim(self) -> None:
        if self._trim is None:
            try:
                self._trim = asyncio.get_running_loop().call_later(self._idle, self._trim_idle)
            except RuntimeError:
                return

    def _trim_idle(self) -> None:
        """Give back the permits unused for `idle_seconds`: another worker may need them, and usage reads (which read
        the table) should show what calls used, not what a worker holds."""
        self._trim = None
        self._give_back(time.time() - self._idle)
        if any(c.units > 0 for c in self._credit.values()) or any(s.count > 0 for s in self._spares.values()):
            self._schedule_trim()

    def _give_back(self, cutoff: float) -> None:
        """Give back the permits unused since `cutoff` (all of them: `math.inf`)."""
        now = time.time()
        counters: list[tuple[str, int]] = []
        for name, credit in self._credit.items():
            if credit.units > 0 and credit.used <= cutoff:
                if credit.expires > now:  # a window that has ended took its permits with it
                    counters.append((name, credit.units))
                credit.seen -= credit.units
                credit.units = 0
        leases: list[tuple[str, int]] = []
        for name, spares in self._spares.items():
            if spares.count > 0 and spares.used <= cutoff:
                leases.append((name, spares.count))
                spares.count = 0
        if counters or leases:
            self.table.give_back(counters, leases, now)

    # -- the Counters contract, in the table ------------------------------------------------------------------------

    async def acquire(
        self, takes: Sequence[Take], reserve: int, slots: Sequence[Slot], lease: str, now: float
    ) -> Outcome:
        return await self.table.acquire(takes, reserve, slots, lease, now)

    async def finish(self, takes: Sequence[Take], delta: int, slots: Sequence[str], lease: str) -> tuple[int, ...]:
        return await self.table.finish(takes, delta, slots, lease)

    async def peek(self, counters: Sequence[str], slots: Sequence[str], now: float) -> tuple[int, ...]:
        return await self.table.peek(counters, slots, now)

    async def close(self) -> None:
        if self._trim is not None:
            self._trim.cancel()
            self._trim = None
        self._give_back(float("inf"))
        await self.table.close()
