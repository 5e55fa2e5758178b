"""OpenTelemetry setup: one span per RPC (connectrpc-otel); the exporter is configurable and off by default.

Spans carry method names, codes and timings only; no request or response bodies, so no secrets or model content.
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)

from server.settings import Settings

__all__ = ["configure_tracing", "tracing_enabled"]

log = logging.getLogger("switchboard.telemetry")
_configured = False


def _exporter(name: str) -> SpanExporter | None:
    if name == "console":
        return ConsoleSpanExporter()
    if name == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            log.error("SWITCHBOARD_OTEL_EXPORTER=otlp needs opentelemetry-exporter-otlp-proto-http installed")
            return None
        return OTLPSpanExporter()  # type: ignore[no-any-return]
    return None


def configure_tracing(settings: Settings) -> None:
    global _configured  # noqa: PLW0603 - the global tracer provider can be set once per process
    if _configured or settings.otel_exporter == "none":
        return
    exporter = _exporter(settings.otel_exporter)
    if exporter is None:
        return
    provider = TracerProvider()
    # The console exporter is for people watching a terminal: show each span as it ends.
    processor = SimpleSpanProcessor(exporter) if settings.otel_exporter == "console" else BatchSpanProcessor(exporter)
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    _configured = True


def tracing_enabled() -> bool:
    """Whether spans go anywhere: a tracer provider was installed (here or by the deployment's own OpenTelemetry
    setup). Without one, every span is a no-op, and the per-RPC interceptor that makes them is skipped."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
