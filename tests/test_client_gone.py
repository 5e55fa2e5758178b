"""A gRPC client that gives up early (cancel, passed deadline) is routine: no traceback in the server log."""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path
from typing import Any

import grpc
import pytest

from server.app import quiet_client_gone
from tests.conftest import Database, server_env, start_server


def _same(data: bytes) -> bytes:
    return data


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
