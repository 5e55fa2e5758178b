"""`switchboard serve` as a process of its own, on loopback ports, for the tests of supervision and lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import sys
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.conftest import Database, server_env


def _ephemeral_ports() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def _worker_ports() -> range:
    """This pytest-xdist worker's share of the ports below the ephemeral range (all of them without xdist)."""
    low = _ephemeral_ports()[0]
    first, last = 10_000, max(low, 10_001)
    index = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    count = max(int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")), 1)
    share = (last - first) // count
    return range(first + index * share, first + (index + 1) * share) if share > 0 else range(first, last)


def free_port() -> int:
    """A loopback port that a process started next will bind. A port the kernel hands out (bind to 0) comes from the
    ephemeral range, which every outgoing connection on this machine also draws from: in a busy suite one of them
    took such a port between the test choosing it and its server binding it ("address in use"). So the port is
    chosen below that range, in a share of its own for each xdist worker, and checked free."""
    ports = _worker_ports()
    for _ in range(200):
        port = random.choice(ports)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    with socket.socket() as sock:  # every pick was taken: let the kernel choose
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def children(pid: int) -> dict[int, str]:
    """Child pids of `pid` with their command lines."""
    found = {}
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        with contextlib.suppress(OSError):
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            found[int(child)] = cmdline
    return found


def running_process(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@dataclass
class Serve:
    proc: asyncio.subprocess.Process
    port: int
    gateway_port: int
    log_path: Path

    def child(self, marker: str) -> int | None:
        matches = [pid for pid, cmd in children(self.proc.pid).items() if marker in cmd]
        return matches[0] if matches else None

    def management(self) -> int | None:
        return self.child("envoy")

    def gateway(self) -> int | None:
        return self.child("-m gateway")


async def ready(url: str) -> bool:
    return await status_of(url) == 200


async def status_of(url: str) -> int | None:
    """The status a GET of `url` answers; None when nothing answers within 2 s."""
    with contextlib.suppress(aiohttp.ClientError, OSError, asyncio.TimeoutError):
        async with aiohttp.ClientSession() as http, http.get(url, timeout=aiohttp.ClientTimeout(total=2)) as resp:
            return resp.status
    return None


async def until(predicate: object, attempts: int = 300) -> None:
    """Poll a condition a bounded number of times (a wait, not a timing assertion)."""
    for _ in range(attempts):
        value = predicate() if callable(predicate) else None
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("condition not reached")


async def start_serve(
    database: Database, var_dir: Path, port: int, gateway_port: int, *args: str, **extra: str
) -> tuple[asyncio.subprocess.Process, Path]:
    """`switchboard serve *args` on these ports (one gateway worker unless `extra` says otherwise), logging to a file
    in its var dir; returns at once."""
    settings = {"SWITCHBOARD_PORT": str(port), "SWITCHBOARD_GATEWAY_PORT": str(gateway_port)}
    env = server_env(database, var_dir, **{**settings, "SWITCHBOARD_GATEWAY_WORKERS": "1", **extra})
    log_path = var_dir / "serve.log"
    with log_path.open("wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "server.cli", "serve", *args, env=env, stdout=log, stderr=log
        )
    return proc, log_path


async def launched(database: Database, var_dir: Path, *args: str, **extra: str) -> Serve:
    """`start_serve` on free ports; returns at once."""
    port, gateway_port = free_port(), free_port()
    proc, log_path = await start_serve(database, var_dir, port, gateway_port, *args, **extra)
    return Serve(proc, port, gateway_port, log_path)


_BANNER = "\nDatabase  "  # the last line serve prints before it supervises (server.cli._serve)


@contextlib.asynccontextmanager
async def serve(database: Database, var_dir: Path | None = None, **extra: str) -> AsyncIterator[Serve]:
    """`switchboard serve` on free ports, once both servers are ready; stopped (SIGTERM) on the way out."""
    handle = await launched(database, var_dir or Path(tempfile.mkdtemp(prefix="switchboard-serve-")), **extra)
    proc, port, gateway_port, log_path = handle.proc, handle.port, handle.gateway_port, handle.log_path
    try:
        for url in (f"http://127.0.0.1:{port}/readyz", f"http://127.0.0.1:{gateway_port}/readyz", None):

            async def up_or_gone(url: str | None = url) -> bool:
                if proc.returncode is not None:
                    return True
                # Last, serve itself: both servers answer before it has seen the management API's /readyz, and
                # until then it is starting, not supervising. It prints its banner (to the log) once it is.
                return await ready(url) if url else _BANNER in log_path.read_text(errors="replace")

            try:  # a busy machine may take a while to start both; a serve that exits has failed at once
                await until(up_or_gone, attempts=900)
            except AssertionError:
                raise AssertionError(f"serve did not become ready:\n{log_path.read_text(errors='replace')}") from None
            assert proc.returncode is None, f"serve exited {proc.returncode}:\n{log_path.read_text(errors='replace')}"
        yield handle
    finally:
        await stop(proc)


async def stop(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM, then SIGKILL if it has not exited within a minute."""
    if proc.returncode is None:
        proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 60)
    if proc.returncode is None:
        proc.kill()
        await proc.wait()
