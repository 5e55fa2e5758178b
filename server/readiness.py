"""Readiness: whether this replica should receive traffic (both servers' /readyz and gRPC health).

Liveness (/livez, /healthz) is only "the loop answers": a replica whose database is down must not be restarted for
it. Readiness is "send me traffic": false while the replica drains (`Readiness.drain`, on shutdown; for the
management server, whose app runs inside Envoy and gets no signal of its own, also while `switchboard serve` keeps
its drain marker file) or while the database does not answer `SELECT 1` within a bound. The reasons given are fixed
words, never exception text.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from sqlalchemy import text

from server.store.db import Database

__all__ = ["DRAINING", "UNREACHABLE", "Readiness"]

log = logging.getLogger("switchboard.health")

# A database that does not answer within this is as good as down for a probe (whose own timeout is usually 1-5 s).
_PROBE_TIMEOUT_SECONDS = 2.0
DRAINING = "draining"
UNREACHABLE = "database unreachable"


class Readiness:
    """Whether this replica should receive traffic; one per process, shared by /readyz and gRPC health."""

    def __init__(self, db: Database, timeout: float = _PROBE_TIMEOUT_SECONDS, marker: Path | None = None) -> None:
        self._db = db
        self._timeout = timeout
        self._marker = marker  # draining while this file exists (server.launch.drain_management)
        self.draining = False

    def drain(self) -> None:
        """From now on not ready (the load balancer stops sending new requests while in-flight ones finish)."""
        self.draining = True

    async def unready_reason(self) -> str | None:
        """None when ready, else why not (DRAINING or UNREACHABLE)."""
        if self.draining or (self._marker is not None and self._marker.exists()):
            return DRAINING
        try:
            async with asyncio.timeout(self._timeout):
                async with self._db.read() as session:
                    await session.execute(text("SELECT 1"))
        except Exception as exc:
            # The type only: a driver's message may name the host, user or database.
            log.warning("readiness: the database did not answer (%s)", type(exc).__name__)
            return UNREACHABLE
        return None
