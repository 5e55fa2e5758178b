"""One captured call as the gateway records it, and which capture policies cover a caller.

The gateway keeps a call's request body (its first `limit` bytes) and the bytes of its answer as they are written,
streamed events joined in order, up to the same bound; what goes past it is counted but not kept, and the exchange
says it was cut. Nothing here is logged: the bodies leave this object only sealed (`server.capture.store`).
"""

from __future__ import annotations

import random
from datetime import datetime
from enum import IntEnum

from server.domain.principal import Principal

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


class _Body:
    __slots__ = ("chunks", "kept", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.kept = 0
        self.size = 0

    def add(self, data: bytes, limit: int) -> None:
        self.size += len(data)
        room = limit - self.kept
        if room > 0 and data:
            piece = data if len(data) <= room else data[:room]
            self.chunks.append(bytes(piece))
            self.kept += len(piece)

    def joined(self) -> bytes:
        return b"".join(self.chunks)

    @property
    def truncated(self) -> bool:
        return self.size > self.kept


class Exchange:
    """A call being captured. `closed` once handed to the meter: later writes (a body aiohttp sends after the
    handler returned) are not added to what is being sealed. `usage` is set when the call was metered (only
    metered calls are stored): (tenant, key, service account, user, model, call kind, status), what the exchange
    row repeats of its usage row to be filtered without a join."""

    __slots__ = ("_request", "_response", "closed", "id", "limit", "occurred_at", "usage")

    def __init__(self, limit: int) -> None:
        # Not a secret: the process's PRNG (reseeded in each forked worker) costs no system call, unlike secrets;
        # who may read an exchange is decided by the capability, never by knowing its id.
        self.id = f"cap_{random.getrandbits(64):016x}"
        self.limit = limit
        self._request = _Body()
        self._response = _Body()
        self.usage: tuple[str, str, str, str, str, int, int] | None = None
        self.occurred_at: datetime | None = None
        self.closed = False

    def request(self, body: bytes) -> None:
        if not self.closed:
            self._request.add(body, self.limit)

    def response(self, data: bytes) -> None:
        if not self.closed:
            self._response.add(data, self.limit)

    @property
    def request_body(self) -> bytes:
        return self._request.joined()

    @property
    def response_body(self) -> bytes:
        return self._response.joined()

    @property
    def request_size(self) -> int:
        return self._request.size

    @property
    def response_size(self) -> int:
        return self._response.size

    @property
    def request_truncated(self) -> bool:
        return self._request.truncated

    @property
    def response_truncated(self) -> bool:
        return self._response.truncated

    def __repr__(self) -> str:  # never the bodies
        return f"Exchange({self.id})"
