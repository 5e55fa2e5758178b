"""Gateway fixtures: fake providers on loopback, the gateway itself, and a world of models and keys.

Registered from conftest.py (`pytest_plugins`). Everything runs on 127.0.0.1; fakes run in threads of their own so
that the synchronous OpenAI client in a test cannot block them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest
import pytest_asyncio

from server.settings import Settings, load_settings
from server.store.db import Database as Db
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Kept, Server
from tests.fakes.serve import serve_in_thread
from tests.fakes.upstream import FakeUpstream
from tests.gateway_world import (
    GatewayWorld,
    all_resources_key,
    create_models,
    default_specs,
    service_account_key,
)
from tests.world import make_world, must

MCP_SERVERS = "platform.agents.v1.ExternalMcpServerService"


@dataclass
class Fakes:
    openai: FakeUpstream
    azure: FakeUpstream
    vendor_a: FakeUpstream
    openai_url: str
    azure_url: str
    vendor_a_url: str
    closed_url: str


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def fakes() -> Iterator[Fakes]:
    openai, azure, vendor_a = FakeUpstream("openai"), FakeUpstream("azure"), FakeUpstream("vendor-a")
    with contextlib.ExitStack() as stack:
        ports = [stack.enter_context(serve_in_thread(f.app)) for f in (openai, azure, vendor_a)]
        yield Fakes(
            openai,
            azure,
            vendor_a,
            f"http://127.0.0.1:{ports[0]}/v1",
            f"http://127.0.0.1:{ports[1]}",
            f"http://127.0.0.1:{ports[2]}/v1",
            f"http://127.0.0.1:{_closed_port()}/v1",
        )


@dataclass
class Gateway:
    base_url: str  # ends in /v1, as the OpenAI SDK wants it
    settings: Settings
    db: Db
    backend: str
    log_path: Path  # the gateway's stderr (its log)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    @contextlib.contextmanager
    def logs_no_error(self) -> Iterator[None]:
        """Fails if the gateway logs anything at ERROR, or a traceback, while the block runs."""
        start = len(self.log())
        yield
        written = self.log()[start:]
        assert " ERROR " not in written and "Traceback" not in written, written[-3000:]


def gateway_env(database: Database, var_dir: Path, fakes: Fakes) -> dict[str, str]:
    return {
        "SWITCHBOARD_DATABASE_URL": database.url,
        "SWITCHBOARD_VAR_DIR": str(var_dir),
        "SWITCHBOARD_LOG_LEVEL": "WARNING",
        "SWITCHBOARD_API_KEY_CACHE_SECONDS": "1",
        "SWITCHBOARD_VENDOR_A_BASE_URL": fakes.vendor_a_url,
        "SWITCHBOARD_GATEWAY_HOST": "127.0.0.1",
        "SWITCHBOARD_GATEWAY_PORT": "0",
        # The fake providers and the tool loop's MCP servers listen on loopback only (development/test setting;
        # tests/test_model_egress.py proves the refusal with it off). Short tool-loop bounds for the tests.
        "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true",
        "SWITCHBOARD_MCP_TOOL_CALL_TIMEOUT_SECONDS": "3",
        "SWITCHBOARD_RESPONSES_HEARTBEAT_SECONDS": "0.5",
        "SWITCHBOARD_MCP_MAX_TOOL_RESULT_BYTES": "65536",
        "SWITCHBOARD_RAG_PARSE_CPU_SECONDS": "2",  # what a hostile upload burns before it is refused
        # Half the default: filling a parser's memory is page faults, counted as CPU time, and a gigabyte of them
        # took 2.8 s of the 3 s a hostile upload gets here (over it on a slower machine: a CPU refusal, not memory).
        "SWITCHBOARD_RAG_PARSE_MEMORY_BYTES": str(512 * 2**20),
    }


def own_var_dir(server: Server, dest: Path) -> Path:
    """A var dir of its own holding only the server's keys (to decrypt and sign what it stored). Not a copy of the
    whole dir: the shared gateways' metering journal changes under a copy, and a gateway started on another's journal
    would replay (meter again) what that one wrote."""
    dest.mkdir(parents=True)
    for key in (server.settings.signing_key_path, server.settings.encryption_key_path):
        shutil.copy2(key, dest / key.name)
    return dest


@contextlib.asynccontextmanager
async def running_gateway(database: Database, server: Server, fakes: Fakes) -> AsyncIterator[Gateway]:
    env = gateway_env(database, server.settings.var_dir, fakes)
    log_path = Path(tempfile.mkdtemp(prefix="switchboard-gw-")) / "gateway.log"
    with log_path.open("wb") as log:
        proc = await start_gateway_process(env, workers=2, stderr=log)
        db = Db(database.url)
        try:
            yield Gateway(proc.base_url, load_settings(env), db, database.backend, log_path)
        finally:
            proc.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(proc.proc.wait(), 60)
            await db.close()


@pytest_asyncio.fixture(scope="session")
async def gateway(database: Database, server: Server, fakes: Fakes, kept: Kept) -> Gateway:
    """The real gateway process (`python -m gateway`, two workers) on this run's database, sharing the management
    server's var dir (its encryption key decrypts provider keys); one per test process (see conftest.Kept)."""
    return await kept.aget(("gateway", database.url), lambda: running_gateway(database, server, fakes))


@contextlib.asynccontextmanager
async def made_gw_world(server: Server, fakes: Fakes) -> AsyncIterator[GatewayWorld]:
    connect = ConnectJsonCaller(server.base_url)
    world = await make_world(server, connect)
    gw = GatewayWorld(
        tenant_id=world.tenant_id, tag=secrets.token_hex(3), tokens=dict(world.tokens), user_ids=dict(world.user_ids)
    )
    specs = default_specs(fakes.openai_url, fakes.azure_url, fakes.closed_url)
    await create_models(connect, server.admin_token, gw, specs)
    await all_resources_key(connect, gw, world.tokens["member"], "all")
    await service_account_key(connect, gw, world.tokens["admin"], "chat-only", ["chat", "hidden"])
    yield gw


@pytest_asyncio.fixture(scope="session")
async def gw_world(server: Server, gateway: Gateway, fakes: Fakes, kept: Kept) -> GatewayWorld:
    return await kept.aget(("gw_world", server.base_url), lambda: made_gw_world(server, fakes))


@dataclass
class GatewayProcess:
    proc: asyncio.subprocess.Process
    base_url: str


async def start_gateway_process(
    env: dict[str, str],
    workers: int = 2,
    stderr: Any = None,
    stdout_path: Path | None = None,
    *,
    own_group: bool = False,
) -> GatewayProcess:
    """`python -m gateway` with this environment (stdout to a file, where it announces its port); returns once a
    worker answers /readyz. `own_group`: in a process group of its own (its id the process's), whose CPU time a
    benchmark counts, its workers' included."""
    full = {**os.environ, **env, "SWITCHBOARD_GATEWAY_WORKERS": str(workers)}
    stdout_path = stdout_path or Path(tempfile.mkdtemp(prefix="switchboard-gw-")) / "stdout.log"
    with stdout_path.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gateway", env=full, stdout=out, stderr=stderr, start_new_session=own_group
        )
    async with aiohttp.ClientSession() as http:
        for _ in range(600):
            match = re.search(r"http://([\d.]+):(\d+)/v1", stdout_path.read_text(errors="replace"))
            if match:
                base_url = f"http://{match.group(1)}:{match.group(2)}"
                with contextlib.suppress(aiohttp.ClientError):
                    async with http.get(f"{base_url}/readyz") as resp:
                        if resp.status == 200:
                            return GatewayProcess(proc, f"{base_url}/v1")
            await asyncio.sleep(0.1)
    proc.kill()
    raise RuntimeError("the gateway did not become ready")


@pytest.fixture(name="sdk")
def all_resources_sdk(gateway: Gateway, gw_world: GatewayWorld, fakes: Fakes) -> Iterator[openai.OpenAI]:
    """The openai SDK on the gateway with the world's all-resources key, the fake model's script emptied before and
    after (the tool-loop tests script the model's answers). A module may define an `sdk` of its own."""
    fakes.openai.script.clear()
    with openai.OpenAI(base_url=gateway.base_url, api_key=gw_world.keys["all"], max_retries=0) as client:
        yield client
    fakes.openai.script.clear()


async def shared_mcp_server(server: Server, url: str, prefix: str) -> str:
    """An MCP server at `url` without credentials, registered on the platform and shared with every tenant: its
    label (`prefix`, a random part and `_`)."""
    name = f"{prefix}{secrets.token_hex(3)}_"
    spec = {
        "name": name,
        "serverUrl": url,
        "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"},
        "sharing": {"shareToAll": True},
    }
    body = {"externalMcpServer": spec}
    connect = ConnectJsonCaller(server.base_url)
    must(await connect.call(f"{MCP_SERVERS}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
    return name
