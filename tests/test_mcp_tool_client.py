"""The MCP tool client on its own, against a real MCP server (the mcp SDK) behind TLS with a private CA: trusted only
when the installer names that CA; and the trusted-CA setting's own rule."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from server.egress import EgressGuard
from server.mcp.tool_client import ToolConnection, ToolFailure, ToolSource, tls_context
from server.settings import load_settings
from tests.fakes.mcp_servers import tools_server
from tests.pki import write_pki


@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The test MCP server over HTTPS with a certificate of a private CA: (its URL, the CA bundle)."""
    ca, cert, key = write_pki(tmp_path_factory.mktemp("pki"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        tools_server()(port), log_level="warning", lifespan="on", ssl_certfile=str(cert), ssl_keyfile=str(key)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield f"https://127.0.0.1:{port}/mcp", ca
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


async def _add(url: str, tls_file: str) -> str:
    guard = EgressGuard(None, allow_loopback=True)
    connection = ToolConnection(
        guard, ToolSource("tls", url), timeout=10, max_result_bytes=1024, tls=tls_context(tls_file)
    )
    try:
        assert [t.name for t in await connection.list_tools()] == ["add"]
        return (await connection.call_tool("add", {"a": 2, "b": 5})).text
    finally:
        await connection.close()


async def test_a_private_ca_is_trusted_only_when_named(tls_server: tuple[str, Path]) -> None:
    url, ca = tls_server
    assert await _add(url, str(ca)) == "7"
    with pytest.raises(ToolFailure) as refused:
        await _add(url, "")
    assert "could not be reached" in refused.value.message  # friendly, no TLS internals


def test_the_trusted_ca_setting_is_a_short_name(tmp_path: Path) -> None:
    settings = load_settings({"SWITCHBOARD_VAR_DIR": str(tmp_path), "SWITCHBOARD_MCP_TRUSTED_CA": "corp-root"})
    assert settings.mcp_trusted_ca_file == str(tmp_path / "trusted-ca" / "corp-root.pem")
    assert load_settings({}).mcp_trusted_ca_file == ""
    for bad in ("x" * 31, "../etc/passwd", "a b"):
        with pytest.raises(ValueError, match="MCP_TRUSTED_CA"):
            load_settings({"SWITCHBOARD_MCP_TRUSTED_CA": bad})
