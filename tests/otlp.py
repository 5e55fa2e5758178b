"""A real OTLP/HTTP trace receiver on loopback, as a collector is: it decodes each POST /v1/traces as the protobuf
ExportTraceServiceRequest (opentelemetry-proto, gzip or not) and answers ExportTraceServiceResponse. It keeps each
export's body as sent, uncompressed (for a scan of everything the servers traced), and the spans it held."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from aiohttp import web
from aiohttp.test_utils import TestServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class Span:
    service: str
    name: str
    attributes: dict[str, object]


@dataclass
class Receiver:
    endpoint: str
    raw: list[bytes] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)

    async def wait_for(self, name: str) -> Span:
        for _ in range(200):  # the exporter batches; bounded wait, not a timing assertion
            for span in self.spans:
                if name in span.name:
                    return span
            await asyncio.sleep(0.1)
        raise AssertionError(f"no span named like {name!r} among {[s.name for s in self.spans]}")


def _value(any_value: object) -> object:
    kind = any_value.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(any_value, kind) if kind else None


@contextlib.asynccontextmanager
async def otlp_receiver() -> AsyncIterator[Receiver]:
    found = Receiver("")

    async def export(request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        assert request.content_type == "application/x-protobuf"
        found.raw.append(body)
        message = ExportTraceServiceRequest.FromString(body)
        for resource_spans in message.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    found.spans.append(Span(str(resource.get("service.name")), span.name, attributes))
        answer = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=answer, content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", export)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    found.endpoint = str(server.make_url("")).rstrip("/")
    try:
        yield found
    finally:
        await server.close()


def otlp_env(receiver: Receiver) -> dict[str, str]:
    """The servers' environment for exporting their spans to `receiver`."""
    # OTEL_BSP_SCHEDULE_DELAY is the SDK's own batching knob: export every 100 ms rather than every 5 s.
    return {
        "SWITCHBOARD_OTEL_EXPORTER": "otlp",
        "SWITCHBOARD_OTEL_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
