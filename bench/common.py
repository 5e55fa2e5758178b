"""What every benchmark needs: a private database and server, timing loops, and a table printer."""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from server.launch import start_management
from server.settings import Settings, load_settings
from server.store.migrate import upgrade
from tests.gateway_fixtures import start_gateway_process

__all__ = ["Measurement", "cpu_seconds", "gateway_env", "gateway_process", "measure", "print_table", "running_server"]


@dataclass
class Measurement:
    label: str
    requests: int
    seconds: float
    latencies: list[float]

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def measure(
    label: str,
    call: Callable[[], Awaitable[Any]],
    *,
    requests: int,
    concurrency: int,
    self_timed: bool = False,
) -> Measurement:
    """Run `requests` calls with `concurrency` in flight (after a short warm-up) and time them. With `self_timed`,
    each call returns its own latency in seconds (e.g. time to first chunk) instead of being timed whole."""
    for _ in range(min(50, requests)):
        await call()
    latencies: list[float] = []
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            latency = await call()
            latencies.append(float(latency) if self_timed else time.perf_counter() - start)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return Measurement(label, requests, time.perf_counter() - start, latencies)


def print_table(rows: list[Measurement], baseline: Measurement) -> None:
    print(f"{'case':<44} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs baseline':>12}")
    for row in rows:
        ratio = row.rps / baseline.rps
        print(
            f"{row.label:<44} {row.rps:>9.0f} {row.percentile(0.5):>8.2f} {row.percentile(0.99):>8.2f} {ratio:>11.2f}x"
        )


def gateway_env(settings: Settings, **extra: str) -> dict[str, str]:
    """A gateway's environment on the benchmark's management server's database (its upstreams are on loopback)."""
    return {
        "SWITCHBOARD_DATABASE_URL": settings.database_url,
        "SWITCHBOARD_VAR_DIR": str(settings.var_dir),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",
        "SWITCHBOARD_SHUTDOWN_DEREGISTER_SECONDS": "0",  # no load balancer to leave: stop accepting at once
        **extra,
    }


@contextlib.asynccontextmanager
async def running_server() -> AsyncIterator[tuple[str, int, Settings]]:
    """A management server on its own SQLite database, for one benchmark run."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-bench-"))
    env = dict(os.environ)
    env.update(
        SWITCHBOARD_VAR_DIR=str(var_dir),
        SWITCHBOARD_DATABASE_URL=os.environ.get(
            "SWITCHBOARD_BENCH_DATABASE_URL", f"sqlite+aiosqlite:///{var_dir / 'bench.db'}"
        ),
        SWITCHBOARD_LOG_LEVEL="WARNING",
        SWITCHBOARD_EGRESS_ALLOW_LOOPBACK="true",  # benchmark upstreams listen on loopback
    )
    upgrade(env["SWITCHBOARD_DATABASE_URL"])
    server = await start_management(env)
    try:
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        yield f"http://127.0.0.1:{server.listener_port}", server.listener_port, settings
    finally:
        await server.stop()


@contextlib.asynccontextmanager
async def gateway_process(env: dict[str, str], workers: int) -> AsyncIterator[tuple[str, int]]:
    """`python -m gateway` with the environment `env`; yields its base URL once /readyz answers, and its process id
    (the group of its workers)."""
    gateway = await start_gateway_process(env, workers, stderr=asyncio.subprocess.DEVNULL, own_group=True)
    try:
        yield gateway.base_url.removesuffix("/v1"), gateway.proc.pid
    finally:
        gateway.proc.terminate()
        await gateway.proc.wait()


_TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(*, pid: int = 0, group: int = 0) -> float:
    """User + system CPU seconds of process `pid`, or of every process in process group `group`."""
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or (pid and int(entry) != pid):
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited meanwhile
        if group and int(fields[2]) != group:  # fields after the command: state, ppid, pgrp, ...
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / _TICKS
