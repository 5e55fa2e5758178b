"""/metrics on both servers: Prometheus text from prometheus-client, summed over the gateway's worker processes,
with bounded labels (route templates, contract methods, registered model ids) and never keys, paths or content."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
from pathlib import Path

import aiohttp
import openai
import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Database, Server
from tests.fakes.upstream import COMPLETION_TOKENS, PROMPT_TOKENS
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld
from tests.metrics_scrape import scrape
from tests.world import make_world, must

pytestmark = ONE_BACKEND  # what /metrics counts does not depend on the database

REQUESTS = "switchboard_gateway_request_duration_seconds_count"
MARKER = "PROMPT-MARKER-never-in-metrics"


def _children(pid: int) -> set[int]:
    return {int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()}


async def _chat(base_url: str, key: str, model: str, *, stream: bool) -> None:
    # A client per call: a new connection each time, so the kernel spreads the calls over the workers.
    sdk = openai.AsyncOpenAI(base_url=base_url, api_key=key, max_retries=0)
    try:
        if stream:
            chunks = await sdk.chat.completions.create(
                model=model,
                messages=[{"role": "user", "content": MARKER}],
                stream=True,
                stream_options={"include_usage": True},
            )
            async for _ in chunks:
                pass
        else:
            await sdk.chat.completions.create(model=model, messages=[{"role": "user", "content": MARKER}])
    finally:
        await sdk.close()


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
async def test_gateway_metrics_sum_every_worker_and_survive_a_dead_one(
    database: Database, gateway: Gateway, fakes: Fakes, gw_world: GatewayWorld
) -> None:
    env = gateway_env(database, gateway.settings.var_dir, fakes)
    gw = await start_gateway_process(env, workers=2)
    base = gw.base_url.removesuffix("/v1")
    key, model = gw_world.keys["all"], gw_world.model("chat")
    try:
        await asyncio.gather(*(_chat(gw.base_url, key, model, stream=i % 2 == 0) for i in range(12)))
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{gw.base_url}/no-such-SECRETPATH-42", headers={"Authorization": f"Bearer {key}"}) as r,
        ):
            assert r.status == 404
        # Each worker folds its figures into the shared files every second: bounded wait until both have.
        chat = {"method": "POST", "route": "/v1/chat/completions", "status": "200"}
        for _ in range(50):
            if (await scrape(base)).value(REQUESTS, **chat) == 12:
                break
            await asyncio.sleep(0.1)
        # From then on, whichever worker answers a scrape reports the calls of both.
        for _ in range(4):
            seen = await scrape(base)
            assert seen.value(REQUESTS, **chat) == 12
            assert seen.value(REQUESTS, route="unmatched", status="404") == 1
        tokens = "switchboard_gateway_tokens_total"
        assert seen.value(tokens, model=model, kind="prompt") == 12 * PROMPT_TOKENS
        assert seen.value(tokens, model=model, kind="completion") == 12 * COMPLETION_TOKENS
        assert seen.value("switchboard_gateway_upstream_latency_seconds_count", model=model) == 12
        assert seen.value("switchboard_gateway_time_to_first_token_seconds_count", model=model) == 6
        assert seen.value("switchboard_cache_lookups_total", cache="api_keys") >= 12
        assert seen.value("switchboard_db_connection_checkouts_total", pool="main") >= 1
        # Bounded labels only: no raw path, no key, no key id, no content.
        assert "SECRETPATH" not in seen.text
        assert key not in seen.text and gw_world.key_ids["all"] not in seen.text
        assert MARKER not in seen.text and "Hello from" not in seen.text
        assert seen.label_values(REQUESTS, "route") <= {"/v1/chat/completions", "unmatched", "/metrics", "/readyz"}

        # Both workers wrote samples (multiprocess files under the gateway's own directory).
        workers = _children(gw.proc.pid)
        directory = gateway.settings.var_dir / "metrics" / f"gateway-{gw.proc.pid}"
        writers = {int(p.stem.rsplit("_", 1)[1]) for p in directory.glob("*.db")}
        assert workers <= writers

        # A worker killed: its counts stay (counters never go back), its live gauges go.
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        for _ in range(100):  # bounded wait for the replacement (not a timing assertion)
            if (now := _children(gw.proc.pid)) and len(now) == 2 and victim not in now:
                break
            await asyncio.sleep(0.1)
        after = await scrape(base)
        assert after.value(REQUESTS, **chat) == 12
        assert not list(directory.glob(f"gauge_live*_{victim}.db"))
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gw.proc.wait(), 60)


async def test_management_metrics_label_contract_methods_only(server: Server) -> None:
    connect = ConnectJsonCaller(server.base_url)
    tenant = f"metrics-secret-{secrets.token_hex(4)}"
    created = await connect.call(
        "platform.tenants.v1.TenantService/CreateTenant", {"name": tenant}, token=server.admin_token
    )
    assert created.ok, created
    async with aiohttp.ClientSession() as http, http.get(f"{server.base_url}/no/such/SECRETPATH") as r:
        assert r.status == 404
    seen = await scrape(server.base_url)
    name = "switchboard_management_request_duration_seconds_count"
    assert seen.value(name, method="/platform.tenants.v1.TenantService/CreateTenant", status="200") >= 1
    assert seen.value(name, method="other", status="404") >= 1
    assert seen.value("switchboard_db_connection_checkouts_total", pool="main") >= 1
    assert "SECRETPATH" not in seen.text and tenant not in seen.text
    assert server.admin_token not in seen.text
    methods = seen.label_values(name, "method")
    assert all(
        m == "other" or m.startswith(("/platform.", "/switchboard.", "/grpc.")) or m.endswith("z")
        for m in methods - {"/metrics"}
    )


async def test_gateway_metrics_do_not_expose_a_tenants_private_model_to_anyone(
    server: Server, gateway: Gateway, fakes: Fakes
) -> None:
    """/metrics (unauthenticated by default) labelled series with a tenant's own model's publicModelId: anyone learnt
    its private model names and token volumes. A tenant's models are labelled `tenant-owned` together."""
    connect = ConnectJsonCaller(server.base_url)
    world = await make_world(server, connect)
    secret_id = f"acme-secret-project-{secrets.token_hex(4)}"
    body = {
        "tenantId": world.tenant_id,
        "externalModel": {
            "name": f"ext-{secrets.token_hex(4)}",
            "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
            "providerModelId": "fake-chat",
            "apiKey": "sk-provider-x",
            "baseUrl": fakes.openai_url,
            "publicModelId": secret_id,
        },
    }
    must(
        await connect.call(
            "platform.modelmanager.v1.ExternalModelService/CreateTenantExternalModel",
            body,
            token=world.tokens["editor"],
        )
    )
    key = must(
        await connect.call(
            "platform.tenants.v1.ApiKeyService/CreateApiKey",
            {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "laptop"},
            token=world.tokens["editor"],
        )
    )["secret"]
    sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=key, max_retries=0)
    try:
        await sdk.chat.completions.create(model=secret_id, messages=[{"role": "user", "content": "hi"}])
    finally:
        await sdk.close()
    base = gateway.base_url.removesuffix("/v1")
    for _ in range(30):  # each worker folds its figures in once a second (bounded wait, not a timing check)
        async with aiohttp.ClientSession() as http, http.get(f"{base}/metrics") as resp:  # no credentials at all
            assert resp.status == 200
            text = await resp.text()
        if 'model="tenant-owned"' in text:
            break
        await asyncio.sleep(0.1)
    assert 'model="tenant-owned"' in text and secret_id not in text
