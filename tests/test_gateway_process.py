"""`python -m gateway`: worker processes share the port; a worker that dies is replaced; SIGTERM stops cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
import tempfile
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import ONE_BACKEND, Database
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.gateway_world import GatewayWorld


def _children(pid: int) -> set[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return {int(p) for p in text.split()}


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
async def test_a_dead_worker_is_replaced(
    database: Database, gateway: Gateway, fakes: Fakes, gw_world: GatewayWorld
) -> None:
    gw = await start_gateway_process(gateway_env(database, gateway.settings.var_dir, fakes), workers=2)
    try:
        workers = _children(gw.proc.pid)
        assert len(workers) == 2
        victim = min(workers)
        os.kill(victim, signal.SIGKILL)
        replaced: set[int] = set()
        for _ in range(100):  # bounded wait for the replacement (not a timing assertion)
            replaced = _children(gw.proc.pid)
            if len(replaced) == 2 and victim not in replaced:
                break
            await asyncio.sleep(0.1)
        assert len(replaced) == 2 and victim not in replaced
        headers = {"Authorization": f"Bearer {gw_world.keys['all']}"}
        async with aiohttp.ClientSession() as http:
            for _ in range(10):
                async with http.get(f"{gw.base_url}/models", headers=headers) as resp:
                    assert resp.status == 200
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(gw.proc.wait(), 60)
    assert code == 0


async def _ready(url: str) -> bool:
    try:
        async with aiohttp.ClientSession() as http, http.get(url, timeout=aiohttp.ClientTimeout(total=1)) as resp:
            return resp.status == 200
    except (aiohttp.ClientError, TimeoutError):
        return False


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@ONE_BACKEND
async def test_a_hung_worker_is_killed_and_replaced(database: Database, gateway: Gateway, fakes: Fakes) -> None:
    """SIGSTOP freezes the worker exactly as a stuck event loop does: alive, holding its share of the port, answering
    nothing. The parent's watchdog sees its heartbeat stop, kills it and starts another."""
    env = {**gateway_env(database, gateway.settings.var_dir, fakes), "SWITCHBOARD_GATEWAY_LIVENESS_SECONDS": "2"}
    log_path = Path(tempfile.mkdtemp(prefix="switchboard-gw-")) / "gateway.log"
    with log_path.open("wb") as log:
        gw = await start_gateway_process(env, workers=1, stderr=log)
    readyz = gw.base_url.removesuffix("/v1") + "/readyz"
    try:
        (victim,) = _children(gw.proc.pid)
        await asyncio.sleep(3)  # a healthy worker outlives the liveness bound: it is left alone
        assert _children(gw.proc.pid) == {victim}
        os.kill(victim, signal.SIGSTOP)
        assert not await _ready(readyz)  # the only worker is frozen
        replaced: set[int] = set()
        for _ in range(200):  # bounded wait for the watchdog (not a timing assertion)
            replaced = _children(gw.proc.pid)
            if len(replaced) == 1 and victim not in replaced and await _ready(readyz):
                break
            await asyncio.sleep(0.1)
        assert len(replaced) == 1 and victim not in replaced
        assert await _ready(readyz)
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(gw.proc.wait(), 60)
    assert code == 0
    text = log_path.read_text(errors="replace")
    assert f"WARNING {gw.proc.pid} switchboard.gateway gateway worker {victim} stopped answering" in text
    assert f"gateway worker {victim} was killed by SIGKILL; starting a new one" in text
