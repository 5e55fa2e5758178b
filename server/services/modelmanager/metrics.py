"""MetricsTimeRange / MetricsStep / MetricPoint <-> the usage domain's windows, steps and buckets.

Times on these messages are Unix seconds. An unset end means now and an unset start means one hour before the end,
so a bare request answers "the last hour".
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gen.platform.modelmanager.v1 import external_model_pb, metrics_pb
from server.domain import usage

__all__ = ["step_of", "time_range", "token_metrics", "window_of"]

_STEP_SECONDS = dict(zip(range(1, 10), usage.STEPS, strict=True))  # METRICS_STEP_1M = 1 … METRICS_STEP_1D = 9
_STEP_ENUM = {seconds: number for number, seconds in _STEP_SECONDS.items()}
_DEFAULT_SPAN = timedelta(hours=1)


def window_of(start_time: int, end_time: int) -> usage.Window:
    end = datetime.fromtimestamp(end_time, UTC) if end_time else datetime.now(UTC)
    start = datetime.fromtimestamp(start_time, UTC) if start_time else end - _DEFAULT_SPAN
    return usage.Window.of(start, end, "start_time")


def step_of(step: int) -> timedelta | None:
    seconds = _STEP_SECONDS.get(int(step))
    return timedelta(seconds=seconds) if seconds else None


def time_range(window: usage.Window, seconds: int) -> metrics_pb.MetricsTimeRange:
    return metrics_pb.MetricsTimeRange(
        start=int(window.start.timestamp()),
        end=int(window.end.timestamp()),
        step=metrics_pb.MetricsStep(_STEP_ENUM[seconds]),
    )


def token_metrics(points: list[tuple[usage.Bucket, usage.TokenTotals]]) -> external_model_pb.ExternalModelMetrics:
    def series(field: str) -> list[metrics_pb.MetricPoint]:
        return [
            metrics_pb.MetricPoint(timestamp=int(bucket.start.timestamp()), value=float(getattr(totals, field)))
            for bucket, totals in points
        ]

    return external_model_pb.ExternalModelMetrics(
        total_prompt_tokens=series("prompt_tokens"),
        total_completion_tokens=series("completion_tokens"),
        total_embedding_tokens=series("embedding_tokens"),
        total_rerank_tokens=series("rerank_tokens"),
        total_tokens=series("total_tokens"),
    )
