"""grpc.health.v1.Health: SERVING while the database answers. Unauthenticated on purpose (probes carry no token)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

from connectrpc.request import RequestContext
from protobuf import DescService
from sqlalchemy import text

from gen.grpc.health.v1.health_connect import Health, HealthASGIApplication
from gen.grpc.health.v1.health_pb import HealthCheckRequest, HealthCheckResponse
from server.store.db import Database

__all__ = ["HealthHandler"]

log = logging.getLogger("switchboard.health")
Status = HealthCheckResponse.ServingStatus
_WATCH_INTERVAL_SECONDS = 5.0


class HealthHandler(Health):
    def __init__(self, db: Database) -> None:
        self._db = db

    async def _status(self) -> HealthCheckResponse.ServingStatus:
        try:
            async with self._db.read() as session:
                await session.execute(text("SELECT 1"))
        except Exception:
            log.warning("health check: database unreachable", exc_info=True)
            return Status.NOT_SERVING
        return Status.SERVING

    async def check(self, request: HealthCheckRequest, ctx: RequestContext[Any, Any]) -> HealthCheckResponse:
        return HealthCheckResponse(status=await self._status())

    async def watch(  # type: ignore[override]
        self, request: HealthCheckRequest, ctx: RequestContext[Any, Any]
    ) -> AsyncIterator[HealthCheckResponse]:
        last = None
        while True:
            status = await self._status()
            if status != last:
                last = status
                yield HealthCheckResponse(status=status)
            await asyncio.sleep(_WATCH_INTERVAL_SECONDS)

    def apps(self) -> list[HealthASGIApplication]:
        return [HealthASGIApplication(self)]

    def descriptors(self) -> list[DescService]:
        return [Health.desc()]
