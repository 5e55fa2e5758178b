"""Start the management server (pyvoy serving server.asgi:app) and wait until it is ready.

Used by `switchboard serve`, the tests and the benchmarks, so all three run the server the same way.
"""

from __future__ import annotations

import asyncio
import urllib.request
from typing import IO, Any, Literal

__all__ = ["start_management"]


def _ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - loopback URL we built
            return bool(resp.status == 200)
    except OSError:
        return False


async def start_management(
    env: dict[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    stdout: int | IO[bytes] | None = None,
    stderr: int | IO[bytes] | None = None,
    log_level: Literal["debug", "info", "warning", "error"] = "error",
) -> Any:
    """Start pyvoy and return the running PyvoyServer once /readyz answers 200."""
    from pyvoy import PyvoyServer

    server = PyvoyServer(
        "server.asgi:app", address=host, port=port, env=env or {}, stdout=stdout, stderr=stderr, log_level=log_level
    )
    await server.start()
    url = f"http://{host}:{server.listener_port}/readyz"
    for _ in range(150):
        if await asyncio.to_thread(_ready, url):
            return server
        await asyncio.sleep(0.1)
    await server.stop()
    raise RuntimeError("the management server did not become ready")
