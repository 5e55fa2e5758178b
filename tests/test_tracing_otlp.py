"""SWITCHBOARD_OTEL_EXPORTER=otlp: both servers export their spans over OTLP/HTTP to SWITCHBOARD_OTEL_ENDPOINT.

The receiver is a real OTLP/HTTP endpoint on loopback: it decodes each POST /v1/traces as the protobuf
ExportTraceServiceRequest (opentelemetry-proto) and answers ExportTraceServiceResponse, as a collector does."""

from __future__ import annotations

import asyncio
import gzip
import secrets
import signal
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import openai
import pytest_asyncio
from aiohttp import web
from aiohttp.test_utils import TestServer
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, server_env, start_server
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld


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


@pytest_asyncio.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found: list[Span] = []
    raw: list[bytes] = []

    async def export(request: web.Request) -> web.Response:
        body = await request.read()
        if request.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        assert request.content_type == "application/x-protobuf"
        raw.append(body)
        message = ExportTraceServiceRequest.FromString(body)
        for resource_spans in message.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    attributes = {a.key: _value(a.value) for a in span.attributes}
                    found.append(Span(str(resource.get("service.name")), span.name, attributes))
        answer = ExportTraceServiceResponse().SerializeToString()
        return web.Response(body=answer, content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", export)
    server = TestServer(app, host="127.0.0.1")
    await server.start_server()
    try:
        yield Receiver(str(server.make_url("")).rstrip("/"), raw, found)
    finally:
        await server.close()


def _otlp_env(receiver: Receiver) -> dict[str, str]:
    # OTEL_BSP_SCHEDULE_DELAY is the SDK's own batching knob: export every 100 ms rather than every 5 s.
    return {
        "SWITCHBOARD_OTEL_EXPORTER": "otlp",
        "SWITCHBOARD_OTEL_ENDPOINT": receiver.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


async def test_management_spans_reach_an_otlp_receiver(database: Database, receiver: Receiver) -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-otlp-"))
    env = server_env(database, var_dir, **_otlp_env(receiver))
    proc = await start_server(env)
    tenant = f"otlp-secret-{secrets.token_hex(4)}"
    try:
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        token = mint_token(settings, user_id="otlp-tracer", roles=PLATFORM_ROLES)
        connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
        created = await connect.call("platform.tenants.v1.TenantService/CreateTenant", {"name": tenant}, token=token)
        assert created.ok, created
        span = await receiver.wait_for("TenantService/CreateTenant")
    finally:
        await proc.stop()
    assert span.service == "switchboard-management"
    sent = b"".join(receiver.raw)
    assert token.encode() not in sent  # no credentials
    assert tenant.encode() not in sent  # no request bodies


async def test_gateway_spans_reach_an_otlp_receiver(
    database: Database, gateway: Gateway, fakes: Fakes, gw_world: GatewayWorld, receiver: Receiver
) -> None:
    env = {**gateway_env(database, gateway.settings.var_dir, fakes), **_otlp_env(receiver)}
    gw = await start_gateway_process(env, workers=1)
    marker = "PROMPT-MARKER-otlp"
    try:
        sdk = openai.AsyncOpenAI(base_url=gw.base_url, api_key=gw_world.keys["all"], max_retries=0)
        result = await sdk.chat.completions.create(
            model=gw_world.model("chat"), messages=[{"role": "user", "content": marker}]
        )
        assert result.choices[0].message.content
        span = await receiver.wait_for("POST /v1/chat/completions")
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gw.proc.wait(), 60)
    assert span.service == "switchboard-gateway"
    assert span.attributes["http.route"] == "/v1/chat/completions"
    assert span.attributes["gen_ai.request.model"] == gw_world.model("chat")
    sent = b"".join(receiver.raw)
    assert marker.encode() not in sent and b"Hello from" not in sent  # no input, no output
    assert gw_world.keys["all"].encode() not in sent  # no credentials
