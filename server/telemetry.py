"""OpenTelemetry setup: one span per RPC (connectrpc-otel) or gateway request; the exporter is configurable and off
by default: `console`, or `otlp` (OTLP/HTTP protobuf to SWITCHBOARD_OTEL_ENDPOINT + /v1/traces, batched).

Spans carry method names, routes, codes, model ids, token counts and timings only; no request or response bodies,
so no secrets or model content. The collector is operator infrastructure (like the database), not a destination a
tenant registers, so the exporter's connection is not an egress-guard matter.
"""

from __future__ import annotations

import logging

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
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


def _exporter(settings: Settings) -> SpanExporter | None:
    if settings.otel_exporter == "console":
        return ConsoleSpanExporter()
    if settings.otel_exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = f"{settings.otel_endpoint}/v1/traces" if settings.otel_endpoint else None
        return OTLPSpanExporter(endpoint=endpoint)
    return None


def configure_tracing(settings: Settings, service: str = "switchboard") -> None:
    """Install the tracer provider once per process; `service` names this server in the spans' resource."""
    global _configured  # noqa: PLW0603 - the global tracer provider can be set once per process
    if _configured or settings.otel_exporter == "none":
        return
    exporter = _exporter(settings)
    if exporter is None:
        return
    provider = TracerProvider(resource=Resource.create({SERVICE_NAME: service}))
    # The console exporter is for people watching a terminal: show each span as it ends.
    processor = SimpleSpanProcessor(exporter) if settings.otel_exporter == "console" else BatchSpanProcessor(exporter)
    provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    _configured = True


def tracing_enabled() -> bool:
    """Whether spans go anywhere: a tracer provider was installed (here or by the deployment's own OpenTelemetry
    setup). Without one, every span is a no-op, and the per-RPC interceptor that makes them is skipped."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
