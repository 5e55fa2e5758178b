"""MetricsTimeRange / MetricsStep / MetricPoint <-> the usage domain's windows, steps and buckets.

Times on these messages are Unix seconds. An unset end means now and an unset start means one hour before the end,
so a bare request answers "the last hour".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from gen.platform.modelmanager.v1 import external_model_pb2, metrics_pb2, model_deployment_observability_pb2
from server.domain import usage
from server.errors import InvalidArgument
from server.services.tenants.convert import enum

__all__ = ["deployment_metrics", "step_of", "time_range", "token_metrics", "window_of"]

_STEP_SECONDS = dict(zip(range(1, 10), usage.STEPS, strict=True))  # METRICS_STEP_1M = 1 … METRICS_STEP_1D = 9
_STEP_ENUM = {seconds: number for number, seconds in _STEP_SECONDS.items()}
_DEFAULT_SPAN = timedelta(hours=1)


def _time(seconds: int, field: str) -> datetime:
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise InvalidArgument(f"{field} is out of range", field=field) from None


def window_of(start_time: int, end_time: int) -> usage.Window:
    end = _time(end_time, "end_time") if end_time else datetime.now(UTC)
    start = _time(start_time, "start_time") if start_time else end - _DEFAULT_SPAN
    return usage.Window.of(start, end, "start_time")


def step_of(step: int) -> timedelta | None:
    seconds = _STEP_SECONDS.get(int(step))
    return timedelta(seconds=seconds) if seconds else None


def time_range(window: usage.Window, seconds: int) -> metrics_pb2.MetricsTimeRange:
    return metrics_pb2.MetricsTimeRange(
        start=int(window.start.timestamp()),
        end=int(window.end.timestamp()),
        step=enum(metrics_pb2.MetricsStep, _STEP_ENUM[seconds]),
    )


def token_metrics(points: list[tuple[usage.Bucket, usage.TokenTotals]]) -> external_model_pb2.ExternalModelMetrics:
    def series(field: str) -> list[metrics_pb2.MetricPoint]:
        return [
            metrics_pb2.MetricPoint(timestamp=int(bucket.start.timestamp()), value=float(getattr(totals, field)))
            for bucket, totals in points
        ]

    return external_model_pb2.ExternalModelMetrics(
        total_prompt_tokens=series("prompt_tokens"),
        total_completion_tokens=series("completion_tokens"),
        total_embedding_tokens=series("embedding_tokens"),
        total_rerank_tokens=series("rerank_tokens"),
        total_tokens=series("total_tokens"),
    )


def deployment_metrics(
    points: list[tuple[usage.Bucket, usage.CallStats]],
) -> model_deployment_observability_pb2.ModelDeploymentMetrics:
    """Counts and tokens have a point per step (0 without calls); latency percentiles only for steps with calls."""

    def series(value: Callable[[usage.CallStats], float | None]) -> list[metrics_pb2.MetricPoint]:
        return [
            metrics_pb2.MetricPoint(timestamp=int(bucket.start.timestamp()), value=float(v))
            for bucket, stats in points
            if (v := value(stats)) is not None
        ]

    def latency(p: float) -> Callable[[usage.CallStats], float | None]:
        return lambda stats: stats.latency_ms.get(p)

    return model_deployment_observability_pb2.ModelDeploymentMetrics(
        total_requests=series(lambda s: s.requests),
        total_4xx_errors=series(lambda s: s.errors_4xx),
        total_5xx_errors=series(lambda s: s.errors_5xx),
        p50_latency=series(latency(0.5)),
        p90_latency=series(latency(0.9)),
        p99_latency=series(latency(0.99)),
        total_prompt_tokens=series(lambda s: s.tokens.prompt_tokens),
        total_completion_tokens=series(lambda s: s.tokens.completion_tokens),
        total_embedding_tokens=series(lambda s: s.tokens.embedding_tokens),
        total_tokens=series(lambda s: s.tokens.total_tokens),
        total_rerank_tokens=series(lambda s: s.tokens.rerank_tokens),
    )
