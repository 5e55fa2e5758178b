"""Domain errors and THE mapping table to wire codes.

    SwitchboardError
    ├── InvalidArgument(field)     invalid_argument     400 invalid_request_error
    ├── NotFound                   not_found            404 invalid_request_error
    ├── AlreadyExists              already_exists       409
    ├── Unauthenticated            unauthenticated      401 (invalid_api_key)
    ├── PermissionDenied           permission_denied    403
    ├── FailedPrecondition         failed_precondition  400
    ├── Conflict                   aborted              409
    ├── QuotaExceeded              resource_exhausted   429
    ├── PayloadTooLarge            resource_exhausted   413 invalid_request_error
    ├── UpstreamFailed             unavailable          502 server_error (friendly text only)
    └── Unavailable                unavailable          503 server_error (retryable)

Domain code raises these; the Connect interceptor (`server.interceptors`) and the gateway middleware both translate
through `MAPPING` below, and nowhere else. Anything that is not a `SwitchboardError` is an unexpected failure: it is
logged with a correlation id and the client sees only "internal error" plus that id, unless it is the database
being unavailable (`unavailable`: the connection pool exhausted, PostgreSQL refusing or dropping connections, SQLite
busy), which is no bug of the request's: that is `Unavailable`, a 503 the client may retry (on another replica).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import psycopg
from connectrpc.code import Code
from sqlalchemy import exc as sa_exc

__all__ = [
    "MAPPING",
    "AlreadyExists",
    "Conflict",
    "FailedPrecondition",
    "InvalidArgument",
    "NotFound",
    "PayloadTooLarge",
    "PermissionDenied",
    "QuotaExceeded",
    "SwitchboardError",
    "Unauthenticated",
    "Unavailable",
    "UpstreamFailed",
    "WireError",
    "unavailable",
]


MAX_MESSAGE = 1000  # characters: a message quoting a client's 20,000-character id passed gRPC's header limit


class SwitchboardError(Exception):
    """A refusal the client may see verbatim: `message` must never carry secrets or internal detail. It is clipped to
    MAX_MESSAGE characters, since it may quote what the client sent (over gRPC it travels in a header, and a longer
    one reached a default client as RESOURCE_EXHAUSTED instead of its code)."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 1] + "…"
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidArgument(SwitchboardError):
    pass


class NotFound(SwitchboardError):
    pass


class AlreadyExists(SwitchboardError):
    pass


class Unauthenticated(SwitchboardError):
    pass


class PermissionDenied(SwitchboardError):
    pass


class FailedPrecondition(SwitchboardError):
    pass


class Conflict(SwitchboardError):
    pass


class QuotaExceeded(SwitchboardError):
    pass


class PayloadTooLarge(SwitchboardError):
    """A request body over a size limit, refused before it is buffered."""


class UpstreamFailed(SwitchboardError):
    """A backend (model provider, MCP server) failed; `retryable` decides the gateway's x-should-retry."""

    def __init__(self, message: str, *, retryable: bool = False, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.retryable = retryable


class Unavailable(SwitchboardError):
    """This replica cannot serve the request now for want of a dependency (its database): retrying, here or on
    another replica, may succeed."""


DATABASE_UNAVAILABLE = "the database is unavailable right now; retry the request"
_SQLITE_BUSY, _SQLITE_LOCKED = 5, 6


def _database_unavailable(error: BaseException) -> bool:
    if isinstance(error, sa_exc.TimeoutError):  # no pooled connection free within SWITCHBOARD_DB_POOL_TIMEOUT_SECONDS
        return True
    if isinstance(error, sa_exc.DBAPIError):
        # The connection was lost mid-statement. Otherwise the driver's error (`orig`), which SQLAlchemy raises this
        # from, is judged next as the __cause__ unavailable() walks to.
        return error.connection_invalidated
    # psycopg's OperationalError: a connection refused ("too many clients", a connection limit, the server starting
    # up or shutting down) or lost, and the server's resource and operator-intervention errors. Raised bare by the
    # lone reads, which use the driver's connections directly.
    if isinstance(error, psycopg.OperationalError):
        return True
    if isinstance(error, sqlite3.OperationalError):
        return getattr(error, "sqlite_errorcode", 0) & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return False


def unavailable(error: BaseException) -> Unavailable | None:
    """The refusal to answer for an unexpected failure that is the database being unavailable, else None (a bug:
    answered "internal error")."""
    seen: BaseException | None = error
    for _ in range(4):  # the error, or what it was raised from
        if seen is None:
            break
        if _database_unavailable(seen):
            return Unavailable(DATABASE_UNAVAILABLE)
        seen = seen.__cause__
    return None


@dataclass(frozen=True)
class WireError:
    connect_code: Code
    http_status: int
    openai_type: str


MAPPING: dict[type[SwitchboardError], WireError] = {
    InvalidArgument: WireError(Code.INVALID_ARGUMENT, 400, "invalid_request_error"),
    NotFound: WireError(Code.NOT_FOUND, 404, "invalid_request_error"),
    AlreadyExists: WireError(Code.ALREADY_EXISTS, 409, "invalid_request_error"),
    Unauthenticated: WireError(Code.UNAUTHENTICATED, 401, "authentication_error"),
    PermissionDenied: WireError(Code.PERMISSION_DENIED, 403, "permission_error"),
    FailedPrecondition: WireError(Code.FAILED_PRECONDITION, 400, "invalid_request_error"),
    Conflict: WireError(Code.ABORTED, 409, "invalid_request_error"),
    QuotaExceeded: WireError(Code.RESOURCE_EXHAUSTED, 429, "rate_limit_error"),
    PayloadTooLarge: WireError(Code.RESOURCE_EXHAUSTED, 413, "invalid_request_error"),
    UpstreamFailed: WireError(Code.UNAVAILABLE, 502, "server_error"),
    Unavailable: WireError(Code.UNAVAILABLE, 503, "server_error"),
}

INTERNAL = WireError(Code.INTERNAL, 500, "server_error")


def wire_error_for(error: BaseException) -> WireError:
    for cls in type(error).__mro__:
        mapped = MAPPING.get(cls)  # type: ignore[call-overload]
        if mapped is not None:
            return mapped
    return INTERNAL
