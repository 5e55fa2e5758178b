"""/switchboard.usage.v1.UsageService/* — who may read what: server.permissions.usage; the sums:
server.domain.usage_rollups."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

from connectrpc.request import RequestContext
from google.protobuf.timestamp_pb2 import Timestamp
from sqlalchemy.ext.asyncio import AsyncSession

from gen.switchboard.usage.v1 import usage_service_pb2 as pb
from gen.switchboard.usage.v1.usage_service_connect import UsageService
from server import permissions
from server.domain import usage_rollups as rollups
from server.errors import InvalidArgument
from server.permissions import UsageReach
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants.convert import timestamp

__all__ = ["UsageServiceHandler"]

Ctx = RequestContext[Any, Any]
_A = TypeVar("_A")
_Read = Callable[[AsyncSession, UsageReach, rollups.UsageRequest], Awaitable[_A]]

_GRAINS = {pb.BUCKET_UNSPECIFIED: rollups.HOUR, pb.BUCKET_HOUR: rollups.HOUR, pb.BUCKET_DAY: rollups.DAY}
_BUCKETS = {rollups.HOUR: pb.BUCKET_HOUR, rollups.DAY: pb.BUCKET_DAY}


def _time(request: Any, field: str, wire: str) -> datetime:
    if not request.HasField(wire):
        raise InvalidArgument(f"{field} is required", field=field)
    value: Timestamp = getattr(request, wire)
    try:
        return value.ToDatetime(tzinfo=UTC)
    except (OverflowError, OSError, ValueError):  # binary Timestamps are not range-checked on decode
        raise InvalidArgument(f"{field} is out of range", field=field) from None


def _filter(value: pb.UsageFilter) -> rollups.UsageFilter:
    kinds = tuple(int(k) for k in value.call_kinds)
    return rollups.UsageFilter(tuple(value.model_ids), tuple(value.api_key_ids), kinds)


def _totals(value: rollups.Totals) -> pb.UsageTotals:
    return pb.UsageTotals(
        requests=value.requests,
        errors=value.errors,
        input_tokens=value.input_tokens,
        output_tokens=value.output_tokens,
        total_tokens=value.total_tokens,
    )


def _group(value: rollups.Group) -> pb.UsageGroup:
    return pb.UsageGroup(id=value.id, display_name=value.display_name, other=value.other, tenant_id=value.tenant_id)


def _series(value: rollups.Series) -> pb.UsageSeries:
    requests, errors, input_tokens, output_tokens, total_tokens = value.columns
    return pb.UsageSeries(
        group=_group(value.group),
        totals=_totals(value.totals),
        requests=requests,
        errors=errors,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        total_tokens=total_tokens,
    )


def _wanted(request: pb.GetUsageSeriesRequest | pb.ListTopUsageRequest, grain: int) -> rollups.UsageRequest:
    return rollups.UsageRequest(
        start=_time(request, "startTime", "start_time"),
        end=_time(request, "endTime", "end_time"),
        grain=grain,
        group_by=int(request.group_by),
        limit=request.limit,
        filter=_filter(request.filter),
    )


class UsageServiceHandler(UsageService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def _answer(self, tenant_id: str, read: _Read[_A], wanted: rollups.UsageRequest) -> _A:
        async with self._db.read() as s:
            reach = await permissions.usage_reach(s, current_principal(), tenant_id)
            return await read(s, reach, wanted)

    async def get_usage_series(self, request: pb.GetUsageSeriesRequest, ctx: Ctx) -> pb.GetUsageSeriesResponse:
        # An unknown bucket becomes no width, which the domain refuses naming the field.
        wanted = _wanted(request, _GRAINS.get(request.bucket, 0))
        answer = await self._answer(request.tenant_id, rollups.usage_series, wanted)
        return pb.GetUsageSeriesResponse(
            start_time=timestamp(answer.start),
            end_time=timestamp(answer.end),
            bucket=_BUCKETS[answer.grain],
            bucket_starts=[timestamp(t) for t in answer.bucket_starts],
            series=[_series(one) for one in answer.series],
            totals=_totals(answer.totals),
        )

    async def list_top_usage(self, request: pb.ListTopUsageRequest, ctx: Ctx) -> pb.ListTopUsageResponse:
        answer = await self._answer(request.tenant_id, rollups.top_usage, _wanted(request, rollups.HOUR))
        return pb.ListTopUsageResponse(
            start_time=timestamp(answer.start),
            end_time=timestamp(answer.end),
            ranks=[pb.UsageRank(group=_group(r.group), totals=_totals(r.totals)) for r in answer.ranks],
            totals=_totals(answer.totals),
        )
