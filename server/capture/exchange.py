"""One captured call as the gateway records it, and which capture policies cover a caller.

The gateway keeps a call's request body (its first `limit` bytes) and the bytes of its answer as they are written,
streamed events joined in order, up to the same bound; what goes past it is counted but not kept, and the exchange
says it was cut. Nothing here is logged: the bodies leave this object only sealed (`server.capture.store`).
"""

from __future__ import annotations

import random
import time
from datetime import datetime
from enum import IntEnum
from typing import TYPE_CHECKING

from server.domain.principal import Principal

if TYPE_CHECKING:
    from server.metering import UsageEvent

__all__ = ["Covered", "Exchange", "ScopeKind", "covers"]


class ScopeKind(IntEnum):
    """Numbers match switchboard.capture.v1.CaptureScopeKind."""

    TENANT = 1
    SERVICE_ACCOUNT = 2
    API_KEY = 3


# The scopes of one tenant whose capture is on: (kind, id), the tenant's own scope with its tenant id.
Covered = frozenset[tuple[int, str]]


def covers(on: Covered, principal: Principal) -> bool:
    """Whether a call of `principal` is captured: on for its tenant, its key's service account or its key."""
    key = principal.api_key
    if key is None:
        return (ScopeKind.TENANT, principal.scoped_tenant_id or "") in on
    return (
        (ScopeKind.TENANT, key.tenant_id) in on
        or (ScopeKind.API_KEY, key.key_id) in on
        or (key.service_account_id is not None and (ScopeKind.SERVICE_ACCOUNT, key.service_account_id) in on)
    )


class Exchange:
    """A call being captured: its request body (the first `limit` bytes) and its answer's chunks (up to `limit`
    bytes in all), with the full sizes. `closed` once handed to the meter: later writes (a body aiohttp sends after
    the handler returned) are not added to what is being sealed. `usage` is set when the call was metered (only
    metered calls are stored): (tenant, key, service account, user, model, call kind, status), what the exchange
    row repeats of its usage row to be filtered without a join. Plain fields, no helpers: every captured call
    pays for each Python call made here."""

    __slots__ = (
        "closed",
        "event",
        "id",
        "kept",
        "limit",
        "occurred_at",
        "request_body",
        "request_size",
        "response_chunks",
        "response_size",
        "usage",
    )

    def __init__(self, limit: int) -> None:
        # Not a secret: the process's PRNG (reseeded in each forked worker) costs no system call, unlike secrets;
        # who may read an exchange is decided by the capability, never by knowing its id. The time (milliseconds)
        # first: ids in creation order land together at the end of the primary key's and the usage row's
        # capture_id index, where random ids land on a random page of each, more and more of them outside the
        # database's page cache as the table grows (SQLite, a captured call's two rows: 28 us written this way at any
        # size up to 200,000 rows; with random ids 46 us at 50,000 rows and 68 us at 200,000).
        self.id = f"cap_{time.time_ns() // 1_000_000:012x}{random.getrandbits(64):016x}"
        self.limit = limit
        self.request_body = b""
        self.request_size = 0
        self.response_chunks: list[bytes] = []
        self.kept = 0  # bytes of the response kept
        self.response_size = 0
        self.usage: tuple[str, str, str, str, str, int, int] | None = None
        self.occurred_at: datetime | None = None
        self.event: UsageEvent | None = None  # the metered call's usage event, written with the exchange
        self.closed = False

    def request(self, body: bytes) -> None:
        if not self.closed:
            self.request_size = len(body)
            self.request_body = body[: self.limit]

    def response(self, data: bytes) -> None:
        if self.closed:
            return
        self.response_size += len(data)
        room = self.limit - self.kept
        if room > 0:
            piece = data[:room]
            self.response_chunks.append(piece)
            self.kept += len(piece)

    @property
    def response_body(self) -> bytes:
        return b"".join(self.response_chunks)

    def __repr__(self) -> str:  # never the bodies
        return f"Exchange({self.id})"
