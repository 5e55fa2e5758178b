"""SWITCHBOARD_OTEL_EXPORTER=otlp: both servers export their spans over OTLP/HTTP to SWITCHBOARD_OTEL_ENDPOINT.

The receiver (tests/otlp.py) is a real OTLP/HTTP endpoint on loopback, decoding each export as a collector does."""

from __future__ import annotations

import asyncio
import secrets
import signal
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import openai
import pytest_asyncio

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, server_env, start_server
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld
from tests.otlp import Receiver, otlp_env, otlp_receiver


@pytest_asyncio.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with otlp_receiver() as found:
        yield found


async def test_management_spans_reach_an_otlp_receiver(database: Database, receiver: Receiver) -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-otlp-"))
    env = server_env(database, var_dir, **otlp_env(receiver))
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
    env = {**gateway_env(database, gateway.settings.var_dir, fakes), **otlp_env(receiver)}
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
