"""A bound on the client connections a gateway worker holds open (`Settings.max_connections`).

Past it a new connection is closed as it is accepted, before aiohttp sees it: the worker keeps file descriptors for its
database, its upstreams and the connections it already serves, instead of failing those when the process runs out.
The management server gets the same bound from Envoy's overload manager (server.launch). A connection counts from the
moment its protocol is made until it is lost, so a burst accepted at once cannot pass the bound.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from gateway import metrics

__all__ = ["ConnectionCap", "Counted"]

log = logging.getLogger("switchboard.gateway")

_WARN_EVERY_SECONDS = 60.0


class _Closing(asyncio.Protocol):
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        transport.close()  # nothing read or written: the client sees its connection closed


class ConnectionCap:
    """Counts a worker's open client connections; `protocols` makes the listener's protocol factory."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open = 0
        self.refused = 0
        self._warned_at = -_WARN_EVERY_SECONDS

    def protocols(self, make: Callable[[], Counted]) -> Callable[[], asyncio.BaseProtocol]:
        """A factory of `make()`'s protocols (made with this cap) while under the limit, and of ones that close the
        connection at once past it."""

        def protocol() -> asyncio.BaseProtocol:
            if self.open >= self.limit:
                self._refuse()
                return _Closing()
            self.open += 1
            return make()

        return protocol

    def _refuse(self) -> None:
        self.refused += 1
        metrics.connection_refused()
        now = time.monotonic()
        if now - self._warned_at >= _WARN_EVERY_SECONDS:
            self._warned_at = now
            log.warning(
                "%d client connections open, the limit (SWITCHBOARD_MAX_CONNECTIONS): new ones are closed (%d so far)",
                self.open,
                self.refused,
            )


class Counted(web.RequestHandler):
    """aiohttp's request handler, counted by `ConnectionCap.protocols`: its lost connection gives its place back."""

    def __init__(self, *args: Any, connections: ConnectionCap, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._connections = connections

    def connection_lost(self, exc: BaseException | None) -> None:
        self._connections.open -= 1
        super().connection_lost(exc)
