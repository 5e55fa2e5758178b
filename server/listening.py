"""One server per address: listening sockets are bound without SO_REUSEPORT.

With SO_REUSEPORT any process of the same user may bind a port that is already listening, and the kernel then splits
new connections between them: a second `switchboard serve` with a database of its own silently took half of the
first one's traffic. Binding without it makes the kernel refuse the second bind (EADDRINUSE). The gateway's workers
share the one listening socket their parent bound (inherited over fork); the management server's Envoy binds its
listener once for all its threads (server.launch). SO_REUSEADDR stays: it only lets a restarted server bind past its
predecessor's TIME_WAIT connections, never beside a listening socket.
"""

from __future__ import annotations

import errno
import socket

__all__ = ["AddressInUseError", "ensure_free", "listen_exclusively"]


class AddressInUseError(RuntimeError):
    def __init__(self, host: str, port: int, what: str) -> None:
        super().__init__(
            f"{host}:{port} ({what}): address in use: another server is listening there. Stop it, or give this one "
            "other ports (SWITCHBOARD_PORT, SWITCHBOARD_GATEWAY_PORT)."
        )


def _bound(host: str, port: int, what: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUseError(host, port, what) from None
        raise
    return sock


def listen_exclusively(host: str, port: int, what: str, backlog: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one) that no other server can share."""
    sock = _bound(host, port, what)
    sock.listen(backlog)
    return sock


def ensure_free(host: str, port: int, what: str) -> None:
    """Raise AddressInUseError when a server already listens on host:port (checked before starting the processes
    that bind it, so the refusal comes first and clearly; their own exclusive binds are what guarantees it)."""
    if port:
        _bound(host, port, what).close()
