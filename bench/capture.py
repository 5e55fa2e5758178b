"""Content capture cost (issue 26).

The same chat completion (non-streaming, then streaming) at concurrency 32 through one gateway worker, with a key
of a tenant where capture is off and with a key of a tenant where it is on (every call's request and response
sealed and written with its usage row). Rounds are interleaved; the ratio is on / off throughput of the same
gateway, goal >= 0.90 (capture costs <= 10 %). The gateway worker's CPU per request is printed beside it (the
sealing and writing happen in that process, off the request path).

On a busy shared machine throughput and CPU time move by more than capture costs, so the Python function calls per
request (cProfile, as `bench gateway_calls` counts them: the gateway served in this process, the meter's sealing
and writing included) are counted too, off and on: a count does not move with the machine's load.

Off: a request costs one cached lookup of its tenant's capture policies. That lookup is timed here on its own (the
cached path, the one every request takes between invalidations) and set against the gateway's CPU per request.
After the run, the captured rows are counted: every captured call must have its exchange and its usage row.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import aiohttp
from sqlalchemy import func, select

from bench import gateway_calls
from bench.common import gateway_env, running_server
from bench.gateway import _PLAIN, _STREAMED, MODEL, Case, Served, _api_key, _asyncio_case, _calls, _process, _ready
from gateway.capture import CapturePolicies
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.settings import Settings, load_settings
from server.store.db import Database
from server.store.models import CapturedExchangeRow, UsageEventRow
from server.tokens import PLATFORM_ROLES, mint_token

ROUNDS = 3
REQUESTS = 3000
STREAMS = 1500
LOOKUPS = 100_000


async def _captured_key(base_url: str, settings: Settings) -> tuple[str, str]:
    """(tenant id, secret) of a service-account key of a new tenant whose capture is on (tenant-wide)."""
    token = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as http:

        async def call(method: str, body: dict[str, Any]) -> dict[str, Any]:
            async with http.post(f"{base_url}/{method}", json=body) as resp:
                payload: dict[str, Any] = await resp.json()
                assert resp.status == 200, payload
                return payload

        tenants = "platform.tenants.v1"
        tenant = (await call(f"{tenants}.TenantService/CreateTenant", {"name": "bench-captured"}))["tenant"]["id"]
        account = await call(f"{tenants}.ServiceAccountService/CreateServiceAccount", {"tenantId": tenant, "name": "b"})
        key = await call(
            f"{tenants}.ApiKeyService/CreateApiKey",
            {
                "tenantId": tenant,
                "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
                "name": "bench",
                "serviceAccountId": account["serviceAccount"]["id"],
                "grants": [{"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "bench-chat"}],
            },
        )
        policy = {"tenantId": tenant, "scope": {"kind": "CAPTURE_SCOPE_KIND_TENANT"}, "enabled": True}
        await call("switchboard.capture.v1.CaptureService/SetCapturePolicy", policy)
        return tenant, str(key["secret"])


async def _case(http: aiohttp.ClientSession, served: Served, key: str, streamed: bool) -> Case:
    non_stream, stream = _calls(http, f"{served.url}/v1/chat/completions", {"Authorization": f"Bearer {key}"})
    if streamed:
        return await _asyncio_case(stream, STREAMS, 32, served)
    return await _asyncio_case(non_stream, REQUESTS, 32, served)


async def _lookup_us(settings: Settings) -> float:
    """The cached policy lookup a request makes when capture is off for its tenant, in µs."""
    db = Database(settings.database_url)
    try:
        policies = CapturePolicies(db, ttl=3600, limit=settings.capture_max_body_bytes)
        key = ApiKeyIdentity("key_bench", "ten_off", ApiKeyType.SERVICE_ACCOUNT, None, "sa_bench")
        principal = Principal(user_id=None, scoped_tenant_id="ten_off", api_key=key)
        assert await policies.exchange_for(principal) is None  # loads once
        start = time.perf_counter()
        for _ in range(LOOKUPS):
            await policies.exchange_for(principal)
        return (time.perf_counter() - start) / LOOKUPS * 1e6
    finally:
        await db.close()


async def _counts(settings: Settings, tenant: str) -> tuple[int, int, int]:
    """(usage rows, exchanges, usage rows linked to an exchange) of the captured tenant."""
    db = Database(settings.database_url)
    try:
        async with db.read() as session:
            exchanges = await session.scalar(
                select(func.count()).select_from(CapturedExchangeRow).where(CapturedExchangeRow.tenant_id == tenant)
            )
            linked = await session.scalar(
                select(func.count())
                .select_from(UsageEventRow)
                .join(CapturedExchangeRow, CapturedExchangeRow.id == UsageEventRow.capture_id)
                .where(UsageEventRow.tenant_id == tenant)
            )
            usage = await session.scalar(
                select(func.count()).select_from(UsageEventRow).where(UsageEventRow.tenant_id == tenant)
            )
            return int(usage or 0), int(exchanges or 0), int(linked or 0)
    finally:
        await db.close()


async def _call_counts(settings: Settings, off: str, on: str) -> None:
    from gateway.app import make_app  # imported here: only this part serves the gateway in this process

    env = gateway_env(settings)
    requests, in_flight = gateway_calls.REQUESTS, gateway_calls.CONCURRENCY
    print(f"-- Python function calls per request, {requests} requests, {in_flight} in flight")
    print(f"{'case':<14} {'off':>6} {'on':>6} {'added':>7}")
    for name, body in (("non-streaming", _PLAIN), ("streaming", _STREAMED)):
        counts = [
            await gateway_calls._calls_per_request(make_app(load_settings(env)), {"Authorization": f"Bearer {k}"}, body)
            for k in (off, on)
        ]
        print(f"{name:<14} {counts[0]:>6.0f} {counts[1]:>6.0f} {counts[1] / counts[0] - 1:>6.1%}")


async def main() -> None:
    async with running_server() as (base_url, _port, settings):
        with _process("upstream") as upstream:
            off = await _api_key(base_url, settings, upstream.url)
            tenant, on = await _captured_key(base_url, settings)
            print(f"-- c=32, {ROUNDS} interleaved rounds, one gateway worker, the asyncio generator")
            print(
                f"{'case':<14} {'off req/s':>10} {'on req/s':>9} {'ratio':>7}  goal"
                f"{'':>13} {'CPU us/req off':>15} {'on':>6} {'added':>7}"
            )
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as http:
                with _process("gateway", gateway_env(settings)) as gateway:
                    for key in (off, on):
                        await _ready(http, f"{gateway.url}/v1/chat/completions", {"Authorization": f"Bearer {key}"})
                    cpu_off = 0.0
                    for streamed in (False, True):
                        runs: dict[str, list[Case]] = {"off": [], "on": []}
                        for _ in range(ROUNDS):
                            runs["off"].append(await _case(http, gateway, off, streamed))
                            runs["on"].append(await _case(http, gateway, on, streamed))
                        f, o = (statistics.median(c.rps for c in runs[k]) for k in ("off", "on"))
                        c_f, c_o = (statistics.median(c.cpu_us for c in runs[k]) for k in ("off", "on"))
                        cpu_off = cpu_off or c_f
                        verdict = "ok" if o / f >= 0.90 else "MISSED"
                        name = "streaming" if streamed else "non-streaming"
                        print(
                            f"{name:<14} {f:>10.0f} {o:>9.0f} {o / f:>6.3f}x  >= 0.90x {verdict:<6}"
                            f"{c_f:>15.0f} {c_o:>6.0f} {c_o / c_f - 1:>6.1%}"
                        )
                # The gateway has stopped: its meter drained everything it had queued.
                calls = (1 + ROUNDS * (REQUESTS + 50)) + ROUNDS * (STREAMS + 50)  # _ready's call, warm-ups, runs
                usage, exchanges, linked = await _counts(settings, tenant)
                verdict = "ok" if usage == exchanges == linked >= calls else "MISSED"
                print(
                    f"captured calls: {usage} usage rows (>= {calls} sent), {exchanges} exchanges, {linked} linked to "
                    f"their usage row {verdict}"
                )
            await _call_counts(settings, off, on)
            lookup = await _lookup_us(settings)
            share = lookup / cpu_off if cpu_off else 0.0
            print(
                f"capture off: the cached policy lookup takes {lookup:.2f} us, {share:.2%} of the gateway's "
                f"{cpu_off:.0f} us CPU per request"
            )
            print(f"(model {MODEL}; bodies as bench gateway: a short prompt and a short answer)")
