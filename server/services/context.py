"""Per-RPC state handed from the auth interceptor to handlers.

The metadata interceptor authenticates before the body is read and runs in the same task as the handler, so a
ContextVar carries the principal without threading it through connectrpc's context object.
"""

from __future__ import annotations

from contextvars import ContextVar

from server.domain.principal import Principal
from server.errors import Unauthenticated

__all__ = ["current_principal", "set_principal"]

_principal: ContextVar[Principal | None] = ContextVar("switchboard_principal", default=None)


def set_principal(principal: Principal | None) -> None:
    _principal.set(principal)


def current_principal() -> Principal:
    principal = _principal.get()
    if principal is None:  # the auth interceptor refuses such calls; this is a guard, not a path
        raise Unauthenticated("authentication required")
    return principal
