"""Content capture cost (issue 26).

The same chat completion (non-streaming, then streaming) at concurrency 32 through one gateway worker, with a key
of a tenant where capture is off and with a key of a tenant where it is on (every call's request and response
sealed and written with its usage row). Rounds are interleaved (off, on, off, on, ...); each prints beside the
throughput ratio (on / off, goal >= 0.90: capture costs <= 10 %) the gateway process's CPU time per request, off and
on (goal: on <= 1.10x off). CPU time is the figure that survives a busy machine: it counts what the gateway process
spent (all its threads, /proc schedstat), not how long it waited for a core. Each case's CPU is read once the meter
has written the case's last batch (it lingers half a second for more), so the sealing and writing of an "on" round
is counted in that round, not in the next "off" one.

On a shared machine those rounds still move by 10-30 % from one to the next (the neighbours' load changes between
them), more than the cost they measure. So the same two cases are measured a second way: off and on at the same
time, through two gateway workers (16 in flight each), which swap keys from one phase to the next. Both sides of each
ratio met the same machine at the same moment, and a round (two phases) cancels what sets one worker apart from the
other; two identical workers measured this way agree within 1-2 %. The pair also serves a third case: non-streaming
calls whose prompts (about 1 KB of words) differ from one call to the next. The other cases' bodies are the same on
every call, which a group of sealed bodies compresses to almost nothing; these pay the compressor's price per
byte, as real traffic does.

Python function calls per request (cProfile, as `bench gateway_calls` counts them: the gateway served in this
process, the meter's sealing and writing included) are counted too, off and on: a count does not move with the
machine's load. So are the machine instructions per request of the gateway process, off and on (bench.instructions:
callgrind, when valgrind is installed).

Off: a request costs one cached lookup of its tenant's capture policies, and three look-ups of the request's capture
slot (none there). Both are counted in function calls (the cached path, the one every request takes between
invalidations) and set against the gateway's function calls per request: what a build without capture would not
make. After the run, the captured rows are counted: every captured call must have its exchange and its usage row.
"""

from __future__ import annotations

import asyncio
import cProfile
import dataclasses
import itertools
import math
import os
import pstats
import random
import statistics
import string
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from aiohttp.test_utils import make_mocked_request
from sqlalchemy import func, select

from bench import gateway_calls
from bench.common import gateway_env, running_server
from bench.gateway import (
    _PLAIN,
    _STREAMED,
    MODEL,
    Case,
    Served,
    _api_key,
    _asyncio_case,
    _calls,
    _process,
    _ready,
)
from bench.instructions import instructions
from gateway.capture import CAPTURE, CapturePolicies
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.settings import Settings, load_settings
from server.store.db import Database
from server.store.models import CapturedBodiesRow, CapturedExchangeRow, UsageEventRow
from server.tokens import PLATFORM_ROLES, mint_token

ROUNDS = 3
REQUESTS = 3000
STREAMS = 1500
LOOKUPS = 10_000
SETTLE_SECONDS = 1.5  # the meter writes a case's last calls (it lingers 0.5 s for more) before its CPU is read
PAIRED_ROUNDS = 5
PAIRED_SECONDS = 3.0
PAIRED_CONCURRENCY = 16  # per gateway worker: 32 in flight in all
DISTINCT = "distinct 1 KB prompts"  # non-streaming, each call's prompt its own (`_prompts`)
PAIRED_CASES = ("non-streaming", "streaming", DISTINCT)
PROMPTS = 2000


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
    requests = STREAMS if streamed else REQUESTS
    cpu = served.cpu_seconds()
    case = await _asyncio_case(stream if streamed else non_stream, requests, 32, served)
    await asyncio.sleep(SETTLE_SECONDS)
    served_calls = requests + min(50, requests)  # measure() warms up first; its CPU counts too
    return dataclasses.replace(case, cpu_us=(served.cpu_seconds() - cpu) / served_calls * 1e6)


def _calls_of(profile: cProfile.Profile, times: int) -> float:
    return sum(entry[1] for entry in pstats.Stats(profile).stats.values()) / times  # type: ignore[attr-defined]


async def _off_calls(settings: Settings) -> float:
    """The function calls capture makes in a request it does not cover: the cached policy lookup of the request's
    tenant (gateway.middleware), and the three look-ups of its capture slot, empty (reading the body, metering the
    call, preparing the answer), on a real aiohttp request."""
    db = Database(settings.database_url)
    try:
        policies = CapturePolicies(db, ttl=3600, limit=settings.capture_max_body_bytes)
        key = ApiKeyIdentity("key_bench", "ten_off", ApiKeyType.SERVICE_ACCOUNT, None, "sa_bench")
        principal = Principal(user_id=None, scoped_tenant_id="ten_off", api_key=key)
        assert await policies.exchange_for(principal) is None  # loads once
        request = make_mocked_request("POST", "/v1/chat/completions")
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(LOOKUPS):
            await policies.exchange_for(principal)
            request.get(CAPTURE)
            request.get(CAPTURE)
            request.get(CAPTURE)
        profile.disable()
        return _calls_of(profile, LOOKUPS)
    finally:
        await db.close()


async def _counts(settings: Settings, tenant: str) -> tuple[int, int, int, int]:
    """(usage rows, exchanges, usage rows linked to an exchange, groups of sealed bodies) of the captured tenant."""
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
            groups = await session.scalar(
                select(func.count()).select_from(CapturedBodiesRow).where(CapturedBodiesRow.tenant_id == tenant)
            )
            return int(usage or 0), int(exchanges or 0), int(linked or 0), int(groups or 0)
    finally:
        await db.close()


async def _call_counts(settings: Settings, off: str, on: str) -> float:
    """Prints the function calls per request off and on; returns the non-streaming request's off."""
    from gateway.app import make_app  # imported here: only this part serves the gateway in this process

    env = gateway_env(settings)
    requests, in_flight = gateway_calls.REQUESTS, gateway_calls.CONCURRENCY
    print(f"-- Python function calls per request, {requests} requests, {in_flight} in flight")
    print(f"{'case':<14} {'off':>6} {'on':>6} {'added':>7}")
    plain_off = 0.0
    for name, body in (("non-streaming", _PLAIN), ("streaming", _STREAMED)):
        counts = [
            await gateway_calls._calls_per_request(make_app(load_settings(env)), {"Authorization": f"Bearer {k}"}, body)
            for k in (off, on)
        ]
        plain_off = plain_off or counts[0]
        print(f"{name:<14} {counts[0]:>6.0f} {counts[1]:>6.0f} {counts[1] / counts[0] - 1:>6.1%}")
    return plain_off


async def _driven(call: Any, seconds: float, concurrency: int) -> int:
    """Calls made with `concurrency` in flight for `seconds`."""
    done = 0
    stop = time.monotonic() + seconds

    async def worker() -> None:
        nonlocal done
        while time.monotonic() < stop:
            await call()
            done += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done


Call = Callable[[], Awaitable[float]]


def _prompts() -> list[bytes]:
    """Request bodies with a prompt of about 1 KB of words each, no two alike (a fixed seed: every run sends the same
    ones), for calls whose captured bodies are not the same from one call to the next."""
    draw = random.Random(26)
    vocabulary = ["".join(draw.choices(string.ascii_lowercase, k=draw.randint(2, 9))) for _ in range(5000)]
    bodies = []
    for _ in range(PROMPTS):
        prompt = " ".join(draw.choices(vocabulary, k=170))
        bodies.append(orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": prompt}]}))
    return bodies


def _caller(http: aiohttp.ClientSession, case: str) -> Callable[[str, str], Call]:
    """The calls of `case` (see `PAIRED_CASES`) to a gateway's URL with a key."""
    prompts = itertools.cycle(_prompts()) if case == DISTINCT else None

    def make(url: str, key: str) -> Call:
        headers = {"Authorization": f"Bearer {key}"}
        non_stream, stream = _calls(http, f"{url}/v1/chat/completions", headers)
        if prompts is None:
            return stream if case == "streaming" else non_stream
        headers["Content-Type"] = "application/json"

        async def distinct() -> float:
            start = time.perf_counter()
            async with http.post(f"{url}/v1/chat/completions", data=next(prompts), headers=headers) as resp:
                await resp.read()
                assert resp.status == 200
            return time.perf_counter() - start

        return distinct

    return make


async def _paired(
    http: aiohttp.ClientSession, gateways: tuple[Served, Served], off: str, on: str, case: str
) -> tuple[str, int]:
    """Off and on served at the same time by two gateway workers, which swap keys from one phase to the next; a round
    is two phases, each worker once off and once on. A round's ratio is the geometric mean of its two phases' (on /
    off), which cancels what sets one worker apart from the other; both sides of a ratio met the same machine at the
    same moment. Returns the table's row and the captured calls made."""
    cpu: list[float] = []
    served: list[float] = []
    captured = 0
    make = _caller(http, case)
    for phase in range(2 * PAIRED_ROUNDS):
        keys = (off, on) if phase % 2 == 0 else (on, off)
        calls = [make(gateway.url, key) for gateway, key in zip(gateways, keys, strict=True)]
        before = [g.cpu_seconds() for g in gateways]
        counts = await asyncio.gather(*(_driven(call, PAIRED_SECONDS, PAIRED_CONCURRENCY) for call in calls))
        await asyncio.sleep(SETTLE_SECONDS)
        per_request = [(g.cpu_seconds() - b) / n for g, b, n in zip(gateways, before, counts, strict=True)]
        o, f = (1, 0) if phase % 2 == 0 else (0, 1)
        cpu.append(per_request[o] / per_request[f])
        served.append(counts[o] / counts[f])
        captured += counts[o]
    rounds = [math.sqrt(a * b) for a, b in zip(cpu[::2], cpu[1::2], strict=True)]
    throughput = [math.sqrt(a * b) for a, b in zip(served[::2], served[1::2], strict=True)]
    c, t = statistics.median(rounds), statistics.median(throughput)
    rps_ok, cpu_ok = ("ok" if good else "MISSED" for good in (t >= 0.90, c <= 1.10))
    row = (
        f"{case:<21} {t:>6.3f}x {rps_ok:<6} {min(throughput):.2f}-{max(throughput):.2f}x   "
        f"{c:>6.3f}x {cpu_ok:<6} {min(rounds):.2f}-{max(rounds):.2f}x"
    )
    return row, captured


def _load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _row(name: str, runs: dict[str, list[Case]]) -> str:
    """Medians of the rounds; the CPU ratio's range over the rounds' pairs (an on round against the off one before
    it) says how far the machine moved it."""
    f, o = (statistics.median(c.rps for c in runs[k]) for k in ("off", "on"))
    c_f, c_o = (statistics.median(c.cpu_us for c in runs[k]) for k in ("off", "on"))
    pairs = [b.cpu_us / a.cpu_us for a, b in zip(runs["off"], runs["on"], strict=True)]
    rps_ok, cpu_ok = ("ok" if good else "MISSED" for good in (o / f >= 0.90, c_o / c_f <= 1.10))
    return (
        f"{name:<14} {f:>9.0f} {o:>8.0f} {o / f:>6.3f}x {rps_ok:<6} {c_f:>8.0f} {c_o:>6.0f} {c_o / c_f:>6.3f}x "
        f"{cpu_ok:<6} {min(pairs):.2f}-{max(pairs):.2f}x"
    )


async def main() -> None:
    async with running_server() as (base_url, _port, settings):
        with _process("upstream") as upstream:
            off = await _api_key(base_url, settings, upstream.url)
            tenant, on = await _captured_key(base_url, settings)
            print(f"-- c=32, {ROUNDS} interleaved rounds, one gateway worker, the asyncio generator")
            print(f"load average at the start: {_load_average()}")
            print("goals: throughput on/off >= 0.90x; gateway CPU per request on/off <= 1.10x")
            print(
                f"{'case':<14} {'req/s off':>9} {'on':>8} {'ratio':>7} {'':<6} {'CPU us off':>10} {'on':>6} "
                f"{'ratio':>7} {'':<6} rounds"
            )
            connector = aiohttp.TCPConnector(limit=0)
            async with aiohttp.ClientSession(connector=connector) as http:
                with _process("gateway", gateway_env(settings)) as gateway:
                    for key in (off, on):
                        await _ready(http, f"{gateway.url}/v1/chat/completions", {"Authorization": f"Bearer {key}"})
                    for streamed in (False, True):
                        runs: dict[str, list[Case]] = {"off": [], "on": []}
                        for _ in range(ROUNDS):
                            runs["off"].append(await _case(http, gateway, off, streamed))
                            runs["on"].append(await _case(http, gateway, on, streamed))
                        print(_row("streaming" if streamed else "non-streaming", runs))
                    print(f"load average: {_load_average()}")
                    print(
                        f"-- off and on at the same time, two gateway workers swapping keys, c={PAIRED_CONCURRENCY} "
                        f"each, {PAIRED_ROUNDS} rounds of 2 x {PAIRED_SECONDS:.0f} s (medians, the rounds' range)"
                    )
                    print(f"{'case':<21} {'throughput on/off':<27} CPU per request on/off")
                    paired_calls = 1  # the second worker's _ready call
                    with _process("gateway", gateway_env(settings)) as second:
                        for key in (off, on):
                            await _ready(http, f"{second.url}/v1/chat/completions", {"Authorization": f"Bearer {key}"})
                        for case in PAIRED_CASES:
                            row, captured = await _paired(http, (gateway, second), off, on, case)
                            paired_calls += captured
                            print(row)
                print(f"load average at the end: {_load_average()}")
                # The gateways have stopped: their meters drained everything they had queued.
                calls = (1 + ROUNDS * (REQUESTS + 50)) + ROUNDS * (STREAMS + 50)  # _ready's call, warm-ups, runs
                calls += paired_calls
                usage, exchanges, linked, groups = await _counts(settings, tenant)
                verdict = "ok" if usage == exchanges == linked >= calls else "MISSED"
                print(
                    f"captured calls: {usage} usage rows (>= {calls} sent), {exchanges} exchanges (their bodies in "
                    f"{groups} sealed groups), {linked} linked to their usage row {verdict}"
                )
            per_request = await _call_counts(settings, off, on)
            added = await _off_calls(settings)
            print(
                f"capture off: {added:.0f} function calls per request (the cached policy lookup, three empty look-ups "
                f"of the capture slot), {added / per_request:.1%} of the gateway's {per_request:.0f}"
            )
            await instructions(gateway_env(settings), {"off": off, "on": on})
            print(f"(model {MODEL}; bodies as bench gateway: a short prompt and a short answer)")
