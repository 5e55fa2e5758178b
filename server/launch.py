"""Start the management server (pyvoy serving server.asgi:app) and wait until it is ready.

Used by `switchboard serve`, the tests and the benchmarks, so all three run the server the same way. pyvoy builds
Envoy's configuration; `with_request_deadlines` adds a deadline of `request_header_timeout_seconds` on receiving
request headers (slowloris), in two parts:
- `request_headers_timeout` on every HTTP connection manager: Envoy arms it at a request's first byte and disarms it
  once the headers are in, so idle keep-alive time between requests is left to the connection idle timeout;
- Envoy's HTTP inspector as a listener filter, with `listener_filters_timeout`: it waits for the first request line
  of a new connection (to tell HTTP/1.1 from h2c), and a connection that has not sent one in time is closed. That
  covers a connection that sends nothing at all, which the first part never arms for.
"""

from __future__ import annotations

import asyncio
import urllib.request
from typing import IO, Any, Literal

from server.settings import load_settings

__all__ = ["start_management", "with_request_deadlines"]

_CONNECTION_MANAGER = "envoy.filters.network.http_connection_manager"
_HTTP_INSPECTOR = {
    "name": "envoy.filters.listener.http_inspector",
    "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector",
    },
}


def with_request_deadlines(config: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Envoy's configuration with the header deadline (see above) on every listener and HTTP connection manager."""
    timeout = f"{seconds:.3f}s"
    for listener in config["static_resources"]["listeners"]:
        if "udp_listener_config" not in listener:  # QUIC has its own handshake timeouts and no HTTP inspector
            listener.setdefault("listener_filters", []).append(dict(_HTTP_INSPECTOR))
            listener["listener_filters_timeout"] = timeout
        for chain in listener["filter_chains"]:
            for network_filter in chain["filters"]:
                if network_filter["name"] == _CONNECTION_MANAGER:
                    network_filter["typed_config"]["request_headers_timeout"] = timeout
    return config


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

    # The served app reads its settings from the environment pyvoy hands it: `env` when given, else this process's.
    header_timeout = (load_settings(env) if env else load_settings()).request_header_timeout_seconds

    class Server(PyvoyServer):
        def get_envoy_config(self) -> dict[str, Any]:
            return with_request_deadlines(super().get_envoy_config(), header_timeout)

    server = Server(
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
