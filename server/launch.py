"""Start the management server (pyvoy serving server.asgi:app) and wait until it is ready; stop it gracefully.

Used by `switchboard serve`, the tests and the benchmarks, so all three run the server the same way. pyvoy builds
Envoy's configuration; `with_request_deadlines` adds a deadline of `request_header_timeout_seconds` on receiving
request headers (slowloris), in two parts:
- `request_headers_timeout` on every HTTP connection manager: Envoy arms it at a request's first byte and disarms it
  once the headers are in, so idle keep-alive time between requests is left to the connection idle timeout;
- Envoy's HTTP inspector as a listener filter, with `listener_filters_timeout`: it waits for the first request line
  of a new connection (to tell HTTP/1.1 from h2c), and a connection that has not sent one in time is closed. That
  covers a connection that sends nothing at all, which the first part never arms for.

`with_utf8_paths` answers 400 to a request whose path is not UTF-8 once percent-decoded (`/console/%ff`), in a Lua
filter ahead of pyvoy's: pyvoy decodes the path strictly to build the ASGI scope and, when that fails, neither calls
the app nor answers, so each such request held one of the bounded connections until Envoy's stream timeout (300 s):
a few thousand locked everyone out.

`with_connection_limit` bounds the connections Envoy holds open (`max_connections`) with its overload manager's
global downstream connection monitor: past it new connections are closed as they are accepted, so the process (the app
runs inside Envoy) keeps file descriptors for its database and upstreams. The admin API, which a drain needs, is exempt.

Envoy binds its listener with SO_REUSEPORT by default, which let a second server bind the same port and take part of
the traffic; ours is bound once for all of Envoy's threads (`enable_reuse_port: false`), so a second one is refused
(server.listening). A graceful stop (`drain_management`) first reports not ready while still serving (the drain
marker file, which the app's /readyz reads: the app runs inside Envoy and gets no signal of its own) for the
deregistration delay, so that load balancers stop sending requests before the listener goes; then closes that
listener through Envoy's admin API, waits for the requests in flight to finish, and sends SIGTERM, on which pyvoy
runs the app's lifespan shutdown (the traffic meter's last batch).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any, Literal

from server import envoy_admin, waiting
from server.listening import ensure_free
from server.settings import load_settings

__all__ = [
    "drain_management",
    "start_management",
    "with_connection_limit",
    "with_request_deadlines",
    "with_utf8_paths",
]

_WHAT = "management API"
_READY_SECONDS = 60.0  # from Envoy's start to the app's /readyz: generous, a loaded machine imports the app slowly
_ACTIVE = re.compile(rb"^http\.ingress_http\.downstream_rq_active: (\d+)$", re.MULTILINE)

_CONNECTION_MANAGER = "envoy.filters.network.http_connection_manager"
_HTTP_INSPECTOR = {
    "name": "envoy.filters.listener.http_inspector",
    "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.listener.http_inspector.v3.HttpInspector",
    },
}

# RFC 3629's well-formed sequences (no overlongs, no surrogates, nothing past U+10FFFF), checked on the path as
# percent-decoded; the query is left to the app, which decodes it leniently.
_UTF8_PATHS = r"""
local function is_utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c, len, lo, hi = s:byte(i), 1, 0x80, 0xBF
    if c < 0x80 then len = 1
    elseif c >= 0xC2 and c <= 0xDF then len = 2
    elseif c == 0xE0 then len, lo = 3, 0xA0
    elseif c == 0xED then len, hi = 3, 0x9F
    elseif c >= 0xE1 and c <= 0xEF then len = 3
    elseif c == 0xF0 then len, lo = 4, 0x90
    elseif c == 0xF4 then len, hi = 4, 0x8F
    elseif c >= 0xF1 and c <= 0xF3 then len = 4
    else return false end
    for j = i + 1, i + len - 1 do
      local b = s:byte(j)
      if b == nil or b < lo or b > hi then return false end
      lo, hi = 0x80, 0xBF
    end
    i = i + len
  end
  return true
end

function envoy_on_request(handle)
  local path = (handle:headers():get(":path") or ""):match("^[^?]*")
  if not path:find("[%%\128-\255]") then return end
  local decoded = path:gsub("%%(%x%x)", function(hex) return string.char(tonumber(hex, 16)) end)
  if not is_utf8(decoded) then
    handle:respond(
      {[":status"] = "400", ["content-type"] = "text/plain; charset=utf-8"},
      "The request path is not UTF-8 once percent-decoded.\n")
  end
end
"""
_UTF8_PATH_FILTER = {
    "name": "envoy.filters.http.lua",
    "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.filters.http.lua.v3.Lua",
        "default_source_code": {"inline_string": _UTF8_PATHS},
    },
}


def _connection_managers(config: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for listener in config["static_resources"]["listeners"]:
        for chain in listener["filter_chains"]:
            for network_filter in chain["filters"]:
                if network_filter["name"] == _CONNECTION_MANAGER:
                    yield network_filter["typed_config"]


def with_request_deadlines(config: dict[str, Any], seconds: float) -> dict[str, Any]:
    """Envoy's configuration with the header deadline (see above) on every listener and HTTP connection manager."""
    timeout = f"{seconds:.3f}s"
    for listener in config["static_resources"]["listeners"]:
        if "udp_listener_config" not in listener:  # QUIC has its own handshake timeouts and no HTTP inspector
            listener.setdefault("listener_filters", []).append(dict(_HTTP_INSPECTOR))
            listener["listener_filters_timeout"] = timeout
    for manager in _connection_managers(config):
        manager["request_headers_timeout"] = timeout
    return config


def with_utf8_paths(config: dict[str, Any]) -> dict[str, Any]:
    """Envoy's configuration refusing a path that is not UTF-8 (see above) before any other HTTP filter."""
    for manager in _connection_managers(config):
        manager["http_filters"].insert(0, _UTF8_PATH_FILTER)
    return config


def with_connection_limit(config: dict[str, Any], limit: int) -> dict[str, Any]:
    """Envoy's configuration closing downstream connections past `limit` open at once, its admin API exempt."""
    config["overload_manager"] = {
        "resource_monitors": [
            {
                "name": "envoy.resource_monitors.global_downstream_max_connections",
                "typed_config": {
                    "@type": "type.googleapis.com/"
                    "envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig",
                    "max_active_downstream_connections": limit,
                },
            }
        ]
    }
    config["admin"]["ignore_global_conn_limit"] = True
    return config


def _exclusive_server(header_timeout: float, max_connections: int, **options: Any) -> Any:
    from pyvoy import PyvoyServer

    class ExclusiveServer(PyvoyServer):
        def get_envoy_config(self) -> dict[str, Any]:
            config: dict[str, Any] = with_request_deadlines(super().get_envoy_config(), header_timeout)
            config = with_utf8_paths(with_connection_limit(config, max_connections))
            for listener in config["static_resources"]["listeners"]:
                listener["enable_reuse_port"] = False
            return config

    return ExclusiveServer("server.asgi:app", **options)


async def start_management(
    env: dict[str, str] | None = None,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    stdout: int | IO[bytes] | None = None,
    stderr: int | IO[bytes] | None = None,
    log_level: Literal["debug", "info", "warning", "error"] = "error",
) -> Any:
    """Start pyvoy and return the running PyvoyServer once /readyz answers 200; AddressInUseError when another
    server listens on host:port, pyvoy's StartupError when Envoy fails or dies before it is ready."""
    from pyvoy import StartupError

    # The served app reads its settings from the environment pyvoy hands it: this process's, with `env` on top.
    settings = load_settings(overrides=env)
    header_timeout = settings.request_header_timeout_seconds
    ensure_free(host, port, _WHAT)
    # Left by a server of this var dir that was killed while draining: this one is not draining.
    settings.management_drain_marker.unlink(missing_ok=True)
    settings.management_admin_file.unlink(missing_ok=True)  # a stopped server's: never read another Envoy's stats
    options = {"address": host, "port": port, "env": env or {}, "stdout": stdout, "stderr": stderr}
    server = _exclusive_server(header_timeout, settings.max_connections, **options, log_level=log_level)
    try:
        await server.start()
    except StartupError:
        ensure_free(host, port, _WHAT)  # another server took the port meanwhile: say so
        raise
    settings.management_admin_file.parent.mkdir(parents=True, exist_ok=True)
    settings.management_admin_file.write_text(_admin_address(server) or "")  # none: /metrics leaves Envoy's out
    try:
        await _until_ready(server, f"http://{host}:{server.listener_port}/readyz")
    except BaseException:  # not ready in time, or the start was called off (serve stopped while starting)
        await asyncio.shield(server.stop())
        raise
    return server


async def _until_ready(server: Any, url: str) -> None:
    from pyvoy import StartupError

    async def ready() -> bool:
        if server.stopped:  # Envoy died while starting: whatever answers on the port now is not this server
            raise StartupError("the management server stopped while starting")
        return await waiting.answers(url)

    if not await waiting.until(ready, _READY_SECONDS):
        raise RuntimeError("the management server did not become ready")


def _admin_address(server: Any) -> str | None:
    """Envoy's admin address (host:port) as pyvoy keeps it once started; it has no public accessor."""
    address: str | None = getattr(server, "_admin_address", None)
    return address


def _drain(address: str, grace_seconds: float) -> None:
    """Close the listener, then wait (at most the grace) until no request is in flight."""
    envoy_admin.request(address, "/drain_listeners", "POST")
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        found = _ACTIVE.search(envoy_admin.request(address, "/stats?filter=downstream_rq_active"))
        if found is None or int(found.group(1)) == 0:
            return
        time.sleep(0.1)


def _mark(marker: Path, *, draining: bool) -> None:
    """A file's creation or removal: microseconds, done on the loop."""
    if draining:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
    else:
        marker.unlink(missing_ok=True)


async def drain_management(
    server: Any, grace_seconds: float, *, deregister_seconds: float = 0.0, marker: Path | None = None
) -> None:
    """Report not ready (`marker`: the settings' `management_drain_marker`) while still serving for
    `deregister_seconds`, then stop accepting, let in-flight requests finish for at most `grace_seconds`, and stop
    the server (which flushes its meter on the way out)."""
    address = _admin_address(server)
    try:
        if address and not server.stopped:
            if marker is not None:
                _mark(marker, draining=True)
                # Serving on, unready: a load balancer's health check takes the replica out of rotation meanwhile,
                # so no request is sent to it as its listener closes.
                await asyncio.sleep(deregister_seconds)
            # Envoy already gone or not answering: stopping it is all that is left.
            with contextlib.suppress(OSError):
                await asyncio.to_thread(_drain, address, grace_seconds)
        await server.stop()
    finally:
        if marker is not None:
            _mark(marker, draining=False)
