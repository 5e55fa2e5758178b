"""What /metrics costs the gateway: the same non-streaming chat completion at concurrency 32 through two gateways
(one worker each, served as `python -m gateway` serves a worker), one with metrics on (the default: prometheus-client
in multiprocess mode, every request observed) and one with SWITCHBOARD_METRICS_ENABLED=false, measured in
interleaved rounds (wrk when installed, else the asyncio load generator). Goal: throughput with metrics >= 0.97x
without; the CPU the gateway spends per request is printed too.

On a busy shared machine rounds vary by more than the effect (each round's req/s is printed), so when `py-spy` is on
PATH (`pip install py-spy`; not a project dependency) the metrics-on gateway is also sampled under the same load,
and the share of its samples inside the metric recorders (gateway/metrics.py, server/metrics.py,
server/metric_batch.py) is printed: the direct measure of what recording costs, whatever the neighbours do.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import tempfile

import aiohttp

from bench.common import gateway_env, running_server
from bench.gateway import (
    _PLAIN,
    C32_REQUESTS,
    Case,
    Served,
    _api_key,
    _asyncio_case,
    _calls,
    _process,
    _ready,
    _wrk_case,
)
from server.settings import Settings

# py-spy names a frame `function (path:line)`, the path relative to the working directory when it is below it.
_RECORDERS = tuple(
    f"{start}{path}:"
    for path in ("gateway/metrics.py", "server/metrics.py", "server/metric_batch.py")
    for start in ("(", "/")
)
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "5"))  # more rounds: steadier medians on a busy machine


async def main() -> None:
    async with running_server() as (base_url, _port, settings):
        await _run_cases(base_url, settings)


async def _run_cases(base_url: str, settings: Settings) -> None:
    env = gateway_env(settings)
    wrk = shutil.which("wrk") is not None
    runs: dict[str, list[Case]] = {"metrics on": [], "metrics off": []}
    share: float | None = None
    with _process("upstream") as upstream:
        key = await _api_key(base_url, settings, upstream.url)
        headers = {"Authorization": f"Bearer {key}"}
        with (
            _process("gateway", env) as on,
            _process("gateway", {**env, "SWITCHBOARD_METRICS_ENABLED": "false"}) as off,
        ):
            targets = {"metrics on": on, "metrics off": off}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
                for served in targets.values():
                    await _ready(http, f"{served.url}/v1/chat/completions", headers)
                for _ in range(ROUNDS):  # interleaved, so a noisy neighbour hits both alike
                    for target, served in targets.items():
                        url = f"{served.url}/v1/chat/completions"
                        if wrk:
                            case = await _wrk_case(url, headers, _PLAIN, 32, served)
                        else:
                            case = await _asyncio_case(_calls(http, url, headers)[0], C32_REQUESTS, 32, served)
                        runs[target].append(case)
                share = await _sampled_share(on, headers) if wrk and shutil.which("py-spy") else None
    generator = "wrk" if wrk else "the asyncio load generator"
    print(f"-- non-stream c=32, median of {ROUNDS} interleaved rounds ({generator})")
    print(f"{'target':<12} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'CPU us/req':>11}")
    med = {
        t: {f: statistics.median(getattr(c, f) for c in cases) for f in Case.__annotations__}
        for t, cases in runs.items()
    }
    for target, m in med.items():
        rounds = " ".join(f"{c.rps:.0f}" for c in runs[target])  # the spread shows how noisy the machine was
        print(f"{target:<12} {m['rps']:>8.0f} {m['p50_ms']:>8.2f} {m['p99_ms']:>8.2f} {m['cpu_us']:>11.0f}  [{rounds}]")
    ratio = med["metrics on"]["rps"] / med["metrics off"]["rps"]
    cpu = med["metrics on"]["cpu_us"] / med["metrics off"]["cpu_us"]
    verdict = "ok" if ratio >= 0.97 else "MISSED"
    print(f"throughput with metrics / without: {ratio:.3f}x  goal >= 0.97x {verdict}")
    print(f"gateway CPU per request with metrics / without: {cpu:.3f}x")
    if share is not None:
        verdict = "ok" if share <= 0.03 else "MISSED"
        print(
            f"share of the metrics-on gateway's sampled CPU in metric recording (py-spy): {share:.2%}  <= 3% {verdict}"
        )


async def _sampled_share(served: Served, headers: dict[str, str]) -> float:
    """py-spy samples the gateway while wrk loads it; the share of samples with a metric recorder on the stack."""
    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/samples.txt"
        spy = await asyncio.create_subprocess_exec(
            "py-spy",
            "record",
            "-r",
            "200",
            "-d",
            "8",
            "-p",
            str(served.pid),
            "-f",
            "raw",
            "-o",
            out,
            "--nonblocking",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await _wrk_case(f"{served.url}/v1/chat/completions", headers, _PLAIN, 32, served)
        await _wrk_case(f"{served.url}/v1/chat/completions", headers, _PLAIN, 32, served)
        await spy.wait()
        return _recording_share(out)


def _recording_share(raw: str) -> float:
    """From py-spy's raw output (one `frame;frame;... count` line per stack)."""
    total = recording = 0
    with open(raw) as samples:
        for line in samples:
            stack, _, count = line.rstrip().rpartition(" ")
            if not stack:
                continue
            total += int(count)
            if any(recorder in stack for recorder in _RECORDERS):
                recording += int(count)
    return recording / max(total, 1)
