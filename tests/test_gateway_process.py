"""`python -m gateway`: worker processes share the port; a worker that dies is replaced; SIGTERM stops cleanly."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.conftest import Database
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
