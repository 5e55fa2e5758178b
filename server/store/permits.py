"""Permits: what one process holds of a shared counter store (Redis for replicas, the table a gateway's workers
share), so that most of its calls are admitted and settled in its own memory. An admission that goes to the store may
also take a few more calls' worth of a counter (units, `Credit`) and a few spare leases of a concurrency cap, counted
in the store at once; the next calls are admitted from them without asking it, and what goes unused goes back once
idle. Both stores grant by these rules (server.store.redis_counters, server.store.shared_permits): at most
PERMIT_CALLS calls' worth of a counter and PERMIT_LEASES spare leases, each at most 1/8 of the room left, and only
where every limit of the call is at least PERMIT_MIN_LIMIT: smaller ones (and every limit's last eighth) are counted
call by call, exactly.
"""

from __future__ import annotations

import math
from typing import Final

__all__ = [
    "IDLE_SECONDS",
    "NO_CREDIT",
    "PERMIT_CALLS",
    "PERMIT_LEASES",
    "PERMIT_MIN_LIMIT",
    "Credit",
    "fill_target",
    "grants_permits",
]

PERMIT_MIN_LIMIT: Final = 1000
PERMIT_CALLS: Final = 1024
PERMIT_LEASES: Final = 32
IDLE_SECONDS = 0.2  # permits (units of a counter, spare leases) unused this long go back to the store (by default)


def grants_permits(limit: int) -> bool:
    return limit >= PERMIT_MIN_LIMIT


class Credit:
    """Units of one counter this process holds: counted in the shared store, not yet used by a call here."""

    __slots__ = ("cap", "expires", "low", "seen", "target", "units", "used")

    def __init__(self, expires: float) -> None:
        self.units = 0
        self.used = 0.0  # when a call last drew on it or refunded to it
        self.seen = 0  # the counter's value in Redis when last read (our units included)
        self.expires = expires
        self.cap = 0  # what it may hold: a refund above this goes back to Redis
        self.low = 0  # below this it is topped up
        self.target = 0  # what a top-up fills to, and a surplus is given back down to

    def size(self, cap: int, tokens: bool) -> None:
        """A count of requests is topped up below half its cap, to the cap. A token counter is topped up below a
        quarter, to half, and gives back above the cap, down to half: the gap from half to the cap takes the
        refunds of the calls in flight (a reservation is mostly refunded when its call ends). With the top-up
        at half and the refill to the cap, the refunds of 8 calls in flight pushed the units over the cap, back
        down to half, under it with the next call, and up again: two round trips every few calls
        (tests/test_limits_counters.py counts them)."""
        self.cap = cap
        self.low = cap // 4 if tokens else cap // 2
        self.target = fill_target(cap, tokens)

    def hold(self, grant: int, asked: int) -> None:
        """Hold `grant` more units, of `asked`. When the room left bounded the grant, maybe below the top-up mark,
        the next top-up waits until half of what is held is spent: else every call would ask for one."""
        self.units += grant
        if grant < asked:
            self.low = min(self.low, self.units // 2)


def fill_target(cap: int, tokens: bool) -> int:
    """What a counter's permits are filled to, by a top-up or by the grant an admission asks for (see size)."""
    return cap // 2 if tokens else cap


NO_CREDIT = Credit(-math.inf)  # expired from the start: never drawn on
