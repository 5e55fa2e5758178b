"""One server per port: a second server on a port that is taken is refused with "address in use".

The gateway's workers each bind the port with SO_REUSEPORT, so that the kernel spreads connections evenly across
them (one listening socket shared by all workers left one worker with nearly every keep-alive connection). But
SO_REUSEPORT lets any process of the same user bind beside them, and the kernel then splits new connections between
both: a second `switchboard serve` with a database of its own silently took part of the first one's traffic. So the
gateway first claims the port (`claim_port`):

- an exclusive lock on a lock file named after the user and the port, held by the gateway's parent and inherited by
  its workers (a lock is released when the last process holding it exits, crashed or not), refuses a second
  Switchboard gateway;
- then a bind without SO_REUSEPORT (`ensure_free`), which the kernel refuses while anything listens on that port,
  refuses every other server.

The management server's Envoy needs neither: it binds its one listener without SO_REUSEPORT (server.launch).
SO_REUSEADDR stays everywhere: it only lets a restarted server bind past its predecessor's TIME_WAIT connections,
never beside a listening socket.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path
from typing import IO

__all__ = ["AddressInUseError", "claim_port", "ensure_free", "reserve"]

# Fixed, not $TMPDIR: two servers with different environments must still find the same lock.
_LOCK_DIR = Path("/tmp")  # noqa: S108 - lock files only, created 0600, named per user


class AddressInUseError(RuntimeError):
    def __init__(self, host: str, port: int, what: str) -> None:
        super().__init__(
            f"{host}:{port} ({what}): address in use: another server is listening there. Stop it, or give this one "
            "other ports (SWITCHBOARD_PORT, SWITCHBOARD_GATEWAY_PORT)."
        )


def _socket(host: str, *, reuse_port: bool) -> socket.socket:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    return sock


def _bind(sock: socket.socket, host: str, port: int, what: str) -> None:
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise AddressInUseError(host, port, what) from None
        raise


def ensure_free(host: str, port: int, what: str) -> None:
    """Raise AddressInUseError when anything listens on host:port (port 0: nothing to check)."""
    if port:
        sock = _socket(host, reuse_port=False)
        _bind(sock, host, port, what)
        sock.close()


def reserve(host: str, port: int, what: str) -> socket.socket:
    """Bind host:port with SO_REUSEPORT without listening: it holds the port (and resolves port 0) for the workers,
    which bind it too, and takes no connection itself."""
    sock = _socket(host, reuse_port=True)
    _bind(sock, host, port, what)
    return sock


def _lock(port: int) -> IO[bytes] | None:
    path = _LOCK_DIR / f"switchboard-{os.getuid()}-port-{port}.lock"
    # O_NOFOLLOW: in a shared /tmp, a planted symlink must not make us open (or create) another file.
    handle = os.fdopen(os.open(path, os.O_CREAT | os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW, 0o600), "ab")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def claim_port(host: str, port: int, what: str) -> tuple[socket.socket, IO[bytes]]:
    """Claim host:port for this server and its SO_REUSEPORT workers: (the reserved socket, the held lock). Keep both
    open for the server's life; AddressInUseError when another server has it."""
    if port == 0:  # the kernel picks a port nobody holds; lock it against a second server asked for that port
        sock = reserve(host, 0, what)
        port = int(sock.getsockname()[1])
    else:
        sock = None
    lock = _lock(port)
    if lock is None:
        if sock is not None:
            sock.close()
        raise AddressInUseError(host, port, what)
    try:
        if sock is None:
            ensure_free(host, port, what)
            sock = reserve(host, port, what)
    except BaseException:
        lock.close()
        raise
    return sock, lock
