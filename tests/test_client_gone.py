"""A client that gives up early is routine: a gRPC client (cancel, passed deadline) leaves no traceback in the server
log, and one hanging up mid-upload no ERROR in the gateway's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import grpc
import pytest

from server.app import quiet_client_gone
from tests.conftest import ONE_BACKEND, Database, Server, server_env, start_server
from tests.gateway_fixtures import Gateway
from tests.gateway_world import GatewayWorld
from tests.rag_http import call
from tests.test_rag_http import RagWorld, rw, url
from tests.test_rag_upload_refusals import BOUNDARY, _nothing_stored, _parts

__all__ = ["rw"]


def _same(data: bytes) -> bytes:
    return data


@ONE_BACKEND  # what the server logs when a client gives up does not depend on the database
@pytest.mark.timeout(180)
async def test_clients_that_give_up_leave_no_traceback_in_the_server_log(database: Database, tmp_path: Path) -> None:
    log_path = tmp_path / "server.log"
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-var-"))
    with log_path.open("wb") as log:
        proc = await start_server(server_env(database, var_dir), stdout=log, stderr=log)
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{proc.listener_port}") as channel:
                watch = channel.unary_stream(
                    "/grpc.health.v1.Health/Watch", request_serializer=_same, response_deserializer=_same
                )
                for _ in range(12):
                    gone = watch(b"", timeout=0.3)  # the client's deadline passes while the stream waits
                    assert await gone.read() == b"\x08\x01"  # SERVING
                    with pytest.raises(grpc.aio.AioRpcError) as raised:
                        await gone.read()
                    assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                    cancelled = watch(b"")
                    await cancelled.read()
                    cancelled.cancel()
            await asyncio.sleep(1)  # what the server logs about the last call
        finally:
            await proc.stop()
    text = log_path.read_text()
    assert "Traceback" not in text and "InvalidStateError" not in text, text


def test_the_handler_logs_a_reset_stream_at_debug_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.new_event_loop()
    try:
        handed_on: list[dict[str, Any]] = []
        loop.default_exception_handler = handed_on.append  # type: ignore[method-assign]
        with caplog.at_level(logging.DEBUG, logger="switchboard.server"):
            quiet_client_gone(
                loop, {"message": "Exception in callback", "exception": asyncio.InvalidStateError(), "handle": object()}
            )
        assert [(r.levelno, r.exc_info) for r in caplog.records] == [(logging.DEBUG, None)]
        other = {"message": "Exception in callback", "exception": RuntimeError("boom"), "handle": object()}
        quiet_client_gone(loop, other)
        assert handed_on == [other]  # anything else is asyncio's default handling, traceback and all
    finally:
        loop.close()


async def _hang_up(
    base_url: str, path: str, key: str, body: bytes, *, boundary: str, after: float, length: int | None = None
) -> None:
    """Send a multipart request's head announcing `length` bytes (by default the body's) and `body`, wait `after`
    seconds (the gateway is reading or parsing it then), and close the connection."""
    url = urlsplit(base_url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {url.hostname}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: {length or len(body)}\r\n\r\n"
    ).encode()
    writer.write(head + body)
    await writer.drain()
    await asyncio.sleep(after)
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    del reader


async def _hang_up_mid_upload(base_url: str, path: str, key: str, part: bytes) -> None:
    """Announce a large multipart body, send its first part's start, then close the connection."""
    start = b"--gone\r\n" + part + b"\r\n\r\n" + b"x" * 100_000
    await _hang_up(base_url, path, key, start, boundary="gone", after=0.3, length=10_000_000)


async def test_a_client_hanging_up_mid_upload_is_no_error_in_the_gateway_log(
    gateway: Gateway, gw_world: GatewayWorld, rw: RagWorld
) -> None:
    base = gateway.base_url.removesuffix("/v1")
    file_part = b'Content-Disposition: form-data; name="file"; filename="a.txt"'
    rag = await rw.rag()
    before = len(gateway.log())
    await _hang_up_mid_upload(base, f"/rag/{rag['id']}/files", rw.keys["editor"], file_part)
    await _hang_up_mid_upload(base, "/v1/audio/transcriptions", gw_world.keys["all"], file_part)
    await asyncio.sleep(1)  # what the gateway logs about them
    async with aiohttp.ClientSession() as http, http.get(f"{base}/healthz") as alive:
        assert alive.status == 200
    logged = gateway.log()[before:]
    assert "ERROR" not in logged and "Traceback" not in logged, logged


async def test_a_client_that_disconnects_mid_parse_stops_its_upload_and_nothing_is_stored(
    rw: RagWorld, server: Server
) -> None:
    """A client that hangs up stops its upload (gateway.client_gone.while_connected): 30,000 nested divs cost lexbor
    ~1.3 s of CPU, under the 3 s budget a file of that size gets; the client hangs up 0.5 s into the parse. Before,
    no handler was cancelled by a disconnect, and the file was parsed, embedded and stored for no one."""
    rag = await rw.rag()
    slow = ("<div>" * 30_000 + "abandoned lighthouse").encode()
    file_part = [b'Content-Disposition: form-data; name="file"; filename="slow.html"', b"Content-Type: text/html"]
    body = _parts((file_part, slow))
    path = f"/rag/{rag['id']}/files"
    await _hang_up(rw.gateway, path, rw.keys["editor"], body, boundary=BOUNDARY.decode(), after=0.5)
    listed = None
    for _ in range(60):  # a bounded wait: long enough for the abandoned parse (and its embedding) to have finished
        listed = await call("GET", url(rw, rag, "/files"), rw.keys["editor"], params={"include_total": "true"})
        if listed.body["total"]:
            break
        await asyncio.sleep(0.1)
    assert listed is not None
    assert listed.body["total"] == 0, f"the abandoned upload was parsed and stored anyway: {listed.body['data']}"
    await _nothing_stored(rw, server, rag)
