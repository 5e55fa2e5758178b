"""grpc.health.v1.Health: SERVING while the replica is ready (server.readiness: not draining, database answering).
Unauthenticated on purpose (probes carry no token)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from connectrpc.request import RequestContext
from google.protobuf.descriptor import ServiceDescriptor

from gen.grpc.health.v1.health_connect import Health, HealthASGIApplication
from gen.grpc.health.v1.health_pb2 import DESCRIPTOR, HealthCheckRequest, HealthCheckResponse
from server.readiness import Readiness

__all__ = ["HealthHandler"]

log = logging.getLogger("switchboard.health")
Status = HealthCheckResponse.ServingStatus
_WATCH_INTERVAL_SECONDS = 5.0
_CACHE_SECONDS = 1.0


class HealthHandler(Health):
    """Probes may call Check often; the database is asked at most once per second."""

    def __init__(self, readiness: Readiness) -> None:
        self._readiness = readiness
        self._cached: tuple[float, HealthCheckResponse.ServingStatus] | None = None

    async def _status(self) -> HealthCheckResponse.ServingStatus:
        now = time.monotonic()
        if self._cached is not None and now - self._cached[0] < _CACHE_SECONDS:
            return self._cached[1]
        status = await self._probe()
        self._cached = (now, status)
        return status

    async def _probe(self) -> HealthCheckResponse.ServingStatus:
        return Status.SERVING if await self._readiness.unready_reason() is None else Status.NOT_SERVING

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

    def apps(self, **options: Any) -> list[HealthASGIApplication]:
        return [HealthASGIApplication(self, **options)]

    def descriptors(self) -> list[ServiceDescriptor]:
        return [DESCRIPTOR.services_by_name["Health"]]
