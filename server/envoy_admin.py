"""Envoy's admin API on loopback: how server.launch drains the management server, and how the management app, which
runs inside Envoy, reads the counters only Envoy keeps for its /metrics (connections refused past
SWITCHBOARD_MAX_CONNECTIONS: Envoy closes them before the app sees them)."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

__all__ = ["refused_connections", "request"]

# Per listener; the admin API's own is exempt from the bound (server.launch.with_connection_limit).
_REFUSED = re.compile(rb"^listener\.(?!admin\.)\S+\.downstream_global_cx_overflow: (\d+)$", re.MULTILINE)


def request(address: str, path: str, method: str = "GET") -> bytes:
    """The body of one admin call (`address`: host:port, as Envoy writes it on start)."""
    call = urllib.request.Request(f"http://{address}{path}", method=method)
    with urllib.request.urlopen(call, timeout=2) as resp:  # noqa: S310 - Envoy's loopback admin address
        return bytes(resp.read())


def refused_connections(address_file: Path) -> int | None:
    """Connections the management server's listeners closed unanswered at the bound, since Envoy started; None when
    the address is not (yet) written or Envoy does not answer."""
    try:
        address = address_file.read_text().strip()
        if not address:
            return None
        stats = request(address, "/stats?filter=downstream_global_cx_overflow")
    except (OSError, ValueError):  # ValueError: an address urllib cannot use (http.client.InvalidURL)
        return None
    return sum(int(found) for found in _REFUSED.findall(stats))
