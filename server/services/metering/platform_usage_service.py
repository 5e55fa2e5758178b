"""/platform.metering.v1.PlatformUsageService/* — aggregation and the can_manage_tenants gate in
server.domain.usage."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from connectrpc.request import RequestContext
from google.protobuf.duration_pb2 import Duration

from gen.platform.metering.v1 import platform_usage_service_pb2 as pb
from gen.platform.metering.v1 import usage_pb2
from gen.platform.metering.v1.platform_usage_service_connect import PlatformUsageService
from server.domain import usage
from server.errors import InvalidArgument
from server.services import Deps
from server.services.context import current_principal
from server.services.tenants.convert import timestamp

__all__ = ["PlatformUsageServiceHandler"]

Ctx = RequestContext[Any, Any]
# google.protobuf.Duration's range (about 10,000 years): the JSON codec refuses a longer one, binary decoding does not.
_DURATION_MAX_SECONDS = 315_576_000_000


def _window(value: usage_pb2.TimeWindow) -> usage.Window:
    try:
        start = value.start_time.ToDatetime(tzinfo=UTC) if value.HasField("start_time") else None
        end = value.end_time.ToDatetime(tzinfo=UTC) if value.HasField("end_time") else None
        return usage.Window.of(start, end)
    except (OverflowError, OSError, ValueError):  # binary Timestamps are not range-checked on decode
        raise InvalidArgument("window is out of range", field="window") from None


def _time_window(start: Any, end: Any) -> usage_pb2.TimeWindow:
    return usage_pb2.TimeWindow(start_time=timestamp(start), end_time=timestamp(end))


def _step(value: Duration, given: bool) -> timedelta | None:
    if not given:
        return None
    if abs(value.seconds) > _DURATION_MAX_SECONDS:  # past it, ToTimedelta may overflow
        raise InvalidArgument("step is out of range", field="step")
    return value.ToTimedelta()


def _filters(tenant_ids: Any, model_ids: Any, user_ids: Any) -> usage.Filters:
    return usage.Filters(tuple(tenant_ids), tuple(model_ids), tuple(user_ids))


def _token_fields(totals: usage.TokenTotals) -> dict[str, int]:
    return {
        "prompt_tokens": totals.prompt_tokens,
        "completion_tokens": totals.completion_tokens,
        "embedding_tokens": totals.embedding_tokens,
        "rerank_tokens": totals.rerank_tokens,
        "total_tokens": totals.total_tokens,
    }


class PlatformUsageServiceHandler(PlatformUsageService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def get_platform_token_usage_series(
        self, request: pb.GetPlatformTokenUsageSeriesRequest, ctx: Ctx
    ) -> pb.GetPlatformTokenUsageSeriesResponse:
        query = usage.UsageQuery(
            window=_window(request.window),
            step=_step(request.step, request.HasField("step")),
            filters=_filters(request.tenant_ids, request.model_ids, request.user_ids),
            group_by=int(request.group_by),
        )
        async with self._db.read() as s:
            _, series = await usage.token_series(s, current_principal(), query)
        return pb.GetPlatformTokenUsageSeriesResponse(
            series=[
                usage_pb2.TokenUsageSeries(
                    tenant_id=one.tenant_id,
                    model_id=one.model_id,
                    points=[
                        usage_pb2.TokenUsagePoint(window=_time_window(b.start, b.end), **_token_fields(totals))
                        for b, totals in one.points
                    ],
                )
                for one in series
            ]
        )

    async def get_platform_call_count_series(
        self, request: pb.GetPlatformCallCountSeriesRequest, ctx: Ctx
    ) -> pb.GetPlatformCallCountSeriesResponse:
        query = usage.UsageQuery(
            window=_window(request.window),
            step=_step(request.step, request.HasField("step")),
            filters=_filters(request.tenant_ids, request.resource_ids, request.user_ids),
            group_by=int(request.group_by),
            kind=int(request.kind),
        )
        async with self._db.read() as s:
            _, series = await usage.call_count_series(s, current_principal(), query)
        return pb.GetPlatformCallCountSeriesResponse(
            series=[
                usage_pb2.CallCountSeries(
                    tenant_id=one.tenant_id,
                    resource_id=one.model_id,
                    kind=request.kind,
                    points=[
                        usage_pb2.CallCountPoint(window=_time_window(b.start, b.end), count=counts.count)
                        for b, counts in one.points
                    ],
                )
                for one in series
            ]
        )

    async def list_platform_token_usage(
        self, request: pb.ListPlatformTokenUsageRequest, ctx: Ctx
    ) -> pb.ListPlatformTokenUsageResponse:
        window = _window(request.window)
        query = usage.UsageQuery(
            window=window,
            filters=_filters(request.tenant_ids, request.model_ids, request.user_ids),
            group_by=int(request.group_by),
            limit=request.limit,
        )
        async with self._db.read() as s:
            rows = await usage.token_totals(s, current_principal(), query)
        return pb.ListPlatformTokenUsageResponse(
            window=_time_window(window.start, window.end),
            groups=[
                usage_pb2.TokenUsageGroup(tenant_id=tenant, model_id=model, **_token_fields(totals))
                for tenant, model, totals in rows
            ],
        )

    async def get_platform_api_traffic_series(
        self, request: pb.GetPlatformApiTrafficSeriesRequest, ctx: Ctx
    ) -> pb.GetPlatformApiTrafficSeriesResponse:
        query = usage.UsageQuery(
            window=_window(request.window), step=_step(request.step, request.HasField("step")), service=request.service
        )
        async with self._db.read() as s:
            _, series, services = await usage.traffic_series(s, current_principal(), query)
        return pb.GetPlatformApiTrafficSeriesResponse(
            series=[
                usage_pb2.ApiTrafficSeries(
                    service=one.service,
                    points=[
                        usage_pb2.ApiTrafficPoint(
                            window=_time_window(b.start, b.end),
                            request_count=t.request_count,
                            error_count=t.error_count,
                            request_bytes=t.request_bytes,
                            response_bytes=t.response_bytes,
                        )
                        for b, t in one.points
                    ],
                )
                for one in series
            ],
            services=services,
        )
