"""grpc.health.v1.Health: SERVING while the replica is ready (server.readiness: not draining, database answering).
Unauthenticated on purpose (probes carry no token).

A service name is checked as the gRPC health protocol says: "" is the whole server, a service this server serves
(every service of the contract, and Health itself) has the server's status, and any other is NOT_FOUND (Check) or
SERVICE_UNKNOWN (Watch), so a probe configured with a mistyped name fails instead of reporting healthy.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from connectrpc.request import RequestContext
from google.protobuf.descriptor import ServiceDescriptor

from gen.grpc.health.v1.health_connect import Health, HealthASGIApplication
from gen.grpc.health.v1.health_pb2 import DESCRIPTOR, HealthCheckRequest, HealthCheckResponse
from server.errors import NotFound
from server.interceptors import ErrorInterceptor
from server.readiness import Readiness

__all__ = ["HealthHandler"]

log = logging.getLogger("switchboard.health")
Status = HealthCheckResponse.ServingStatus
_WATCH_INTERVAL_SECONDS = 5.0
_CACHE_SECONDS = 1.0
_WHOLE_SERVER = ""
_SHOWN = 100  # at most this much of a probe's service name is quoted back


@functools.cache
def _served() -> frozenset[str]:
    """The names a probe may ask about: every service server.app mounts (imported here, not at the top, because
    server.app builds this handler)."""
    from server.app import generated_services

    names = {service.full_name for service in generated_services()}
    return frozenset({_WHOLE_SERVER, DESCRIPTOR.services_by_name["Health"].full_name, *names})


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
        if request.service not in _served():
            raise NotFound(f"this server does not serve {request.service[:_SHOWN]!r}")
        return HealthCheckResponse(status=await self._status())

    async def watch(  # type: ignore[override]
        self, request: HealthCheckRequest, ctx: RequestContext[Any, Any]
    ) -> AsyncIterator[HealthCheckResponse]:
        last = None
        known = request.service in _served()
        while True:  # an unknown service stays unknown: said once, and the call is held open, as the protocol says
            status = await self._status() if known else Status.SERVICE_UNKNOWN
            if status != last:
                last = status
                yield HealthCheckResponse(status=status)
            await asyncio.sleep(_WATCH_INTERVAL_SECONDS)

    def apps(self, **options: Any) -> list[HealthASGIApplication]:
        # Only the error mapping: probes carry no credentials, and a refusal is mapped like every other service's.
        return [HealthASGIApplication(self, interceptors=[ErrorInterceptor()], **options)]

    def descriptors(self) -> list[ServiceDescriptor]:
        return [DESCRIPTOR.services_by_name["Health"]]
