"""Gateway throughput as deployed (tests/fleet.py: `switchboard serve --role gateway` replicas on PostgreSQL, Envoy
in front): non-streamed chat completions at concurrency 32 against the stand-in model.

Two fleets, one after the other:
- three gateway replicas of one worker each: one replica straight, and all three through Envoy;
- one gateway replica of two workers: straight, and through Envoy.
Printed ratios (the issue's goals): 2 workers vs 1 (straight); 3 replicas behind Envoy vs 1 straight; and the load
balancer's own cost, the same replica through Envoy vs straight (goal: Envoy costs <= 10 % at c=32). On a 2-core
machine the replicas, Envoy, PostgreSQL, the stand-in model and the load generator share both cores, so more replicas
or workers cannot add cores; the ratios say what the extra processes and the extra hop cost, not how a fleet scales.
Throughput on a shared machine moves with its other load, so the load balancer's cost is also measured as CPU time,
which other processes do not inflate much: Envoy's CPU seconds per request through it, against the gateway replica's
(all its processes) per request, over the Envoy rounds. Envoy's share of the CPU a request costs in all is the
throughput it takes where both share the same cores, and none where Envoy runs on cores of its own.
The load comes from wrk (one thread, C) when installed, else from an asyncio loop; targets run in interleaved rounds
so a noisy neighbour hits each alike, and each figure is the median of its rounds.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable

import aiohttp

from bench.common import cpu_seconds, measure
from tests.fleet import MODEL, Fleet, pg_unreachable, redis_unreachable, running_fleet

CONCURRENCY = 32
ROUNDS = 3
SECONDS = 5
_BODY = b'{"model":"%s","messages":[{"role":"user","content":"hi"}]}' % MODEL.encode()
_WRK_SCRIPT = """
wrk.method = "POST"
wrk.body = '%s'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer %s"
"""


async def _wrk(url: str, secret: str) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(_WRK_SCRIPT % (_BODY.decode(), secret))
    try:
        proc = await asyncio.create_subprocess_exec(
            *("wrk", "-t1", f"-c{CONCURRENCY}", f"-d{SECONDS}s", "-s", script.name, url),
            stdout=asyncio.subprocess.PIPE,
        )
        out = (await asyncio.wait_for(proc.communicate(), SECONDS + 60))[0].decode()
    finally:
        os.unlink(script.name)
    assert "Non-2xx" not in out and "Socket errors" not in out, out
    match = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert match, out
    return float(match[1])


_REQUESTS = 2000  # per asyncio round


async def _asyncio_load(url: str, secret: str) -> float:
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:

        async def call() -> None:
            async with http.post(url, data=_BODY, headers=headers) as resp:
                await resp.read()
                assert resp.status == 200, resp.status

        return (await measure(url, call, requests=_REQUESTS, concurrency=CONCURRENCY)).rps


async def _rps(
    targets: dict[str, str], secret: str, cpu: tuple[Fleet, str] | None = None
) -> tuple[dict[str, float], tuple[float, float]]:
    """Median requests/s of each target (name -> base URL) over interleaved rounds; with `cpu` (the fleet, and the
    name of its target through Envoy): Envoy's and the gateway's CPU seconds per request over that target's rounds."""
    load: Callable[[str, str], Awaitable[float]] = _wrk if shutil.which("wrk") else _asyncio_load
    runs: dict[str, list[float]] = {name: [] for name in targets}
    envoy_cpu = gateway_cpu = served = 0.0
    for _ in range(ROUNDS):
        for name, base in targets.items():
            counted = cpu is not None and name == cpu[1]
            if counted:
                assert cpu is not None
                envoy, gateway = cpu[0].envoy_pid, cpu[0].gateways[0].proc.pid  # type: ignore[union-attr]
                before = (cpu_seconds(pid=envoy), cpu_seconds(group=gateway), time.monotonic())
            rps = await load(f"{base}/v1/chat/completions", secret)
            runs[name].append(rps)
            if counted:
                envoy_cpu += cpu_seconds(pid=envoy) - before[0]
                gateway_cpu += cpu_seconds(group=gateway) - before[1]
                served += rps * (time.monotonic() - before[2])
    per_request = (envoy_cpu / served, gateway_cpu / served) if served else (0.0, 0.0)
    return {name: statistics.median(values) for name, values in runs.items()}, per_request


async def main() -> None:
    if reason := pg_unreachable() or redis_unreachable():
        print(f"skipped: {reason}")
        return
    async with running_fleet(gateways=3, managements=1, gateway_workers=1) as fleet:
        one_worker, _ = await _rps(
            {"1 replica, 1 worker, straight": fleet.gateways[0].url, "3 replicas through Envoy": fleet.gateway_url},
            fleet.keys[0][1],
        )
    async with running_fleet(gateways=1, managements=1, gateway_workers=2) as fleet:
        through = "1 replica, 2 workers, Envoy"
        two_workers, (envoy_cpu, gateway_cpu) = await _rps(
            {"1 replica, 2 workers, straight": fleet.gateways[0].url, through: fleet.gateway_url},
            fleet.keys[0][1],
            cpu=(fleet, through),
        )
    figures = {**one_worker, **two_workers}
    print(f"load: {'wrk' if shutil.which('wrk') else 'asyncio'}, c={CONCURRENCY}, median of {ROUNDS} x {SECONDS} s")
    print(f"{'case':<36} {'req/s':>9}")
    for name, rps in figures.items():
        print(f"{name:<36} {rps:>9.0f}")
    ratios = {
        "2 workers vs 1 (straight)": figures["1 replica, 2 workers, straight"]
        / figures["1 replica, 1 worker, straight"],
        "3 replicas via Envoy vs 1 straight": figures["3 replicas through Envoy"]
        / figures["1 replica, 1 worker, straight"],
        "Envoy vs straight, same replica (goal >= 0.90)": figures["1 replica, 2 workers, Envoy"]
        / figures["1 replica, 2 workers, straight"],
    }
    for name, ratio in ratios.items():
        print(f"{name:<48} {ratio:>5.2f}x")
    if envoy_cpu and gateway_cpu:
        print(f"CPU per request through Envoy: Envoy {envoy_cpu * 1e6:.0f} us, gateway {gateway_cpu * 1e6:.0f} us")
        share = envoy_cpu / (envoy_cpu + gateway_cpu)
        print(f"{'Envoy share of a request CPU (goal <= 0.10)':<48} {share:>5.2f}")
