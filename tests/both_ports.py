"""A management server and a one-worker gateway process of a test module's own, on a SQLite database of their own,
with the settings the module tests (tests of what each listener does with connections)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

from server.store.migrate import upgrade
from tests.conftest import Database, server_env, start_server
from tests.gateway_fixtures import start_gateway_process


@contextlib.asynccontextmanager
async def both_ports(**settings: str) -> AsyncIterator[dict[str, int]]:
    """{"management": port, "gateway": port}, both run with `settings` (SWITCHBOARD_… variables)."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-ports-"))
    url = f"sqlite+aiosqlite:///{var_dir / 'ports.db'}"
    upgrade(url)
    management = await start_server(server_env(Database("sqlite", url), var_dir, **settings))
    gateway_env = {
        "SWITCHBOARD_DATABASE_URL": url,
        "SWITCHBOARD_VAR_DIR": str(var_dir),
        "SWITCHBOARD_GATEWAY_HOST": "127.0.0.1",
        "SWITCHBOARD_GATEWAY_PORT": "0",
        **settings,
    }
    try:
        gateway = await start_gateway_process(gateway_env, workers=1)
    except BaseException:
        await management.stop()
        raise
    try:
        gateway_port = int(gateway.base_url.removesuffix("/v1").rsplit(":", 1)[1])
        yield {"management": management.listener_port, "gateway": gateway_port}
    finally:
        gateway.proc.send_signal(signal.SIGTERM)
        await gateway.proc.wait()
        await management.stop()


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, path: str) -> bytes:
    """A GET of `path` on the connection: the response's status line, its body read."""
    writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    await asyncio.wait_for(reader.readexactly(length), 10)
    return head.split(b"\r\n", 1)[0]
