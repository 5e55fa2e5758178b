"""One span per RPC when an exporter is configured; spans carry no bearer tokens or request bodies."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, server_env, start_server


async def test_spans_are_exported_per_rpc_without_secrets(database: Database) -> None:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-trace-"))
    env = server_env(database, var_dir, SWITCHBOARD_OTEL_EXPORTER="console")
    out_path = var_dir / "stdout.log"
    with out_path.open("wb") as out:
        proc = await start_server(env, stdout=out)
        try:
            settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
            token = mint_token(settings, user_id="tracer", roles=PLATFORM_ROLES)
            connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
            result = await connect.call(
                "platform.tenants.v1.TenantService/CreateTenant", {"name": "traced-tenant-secret-name"}, token=token
            )
            assert result.ok, result
            text = ""
            for _ in range(50):
                text = out_path.read_text(errors="replace")
                if "TenantService/CreateTenant" in text:
                    break
                await asyncio.sleep(0.1)
        finally:
            await proc.stop()
    assert "platform.tenants.v1.TenantService/CreateTenant" in text
    assert token not in text
    assert "traced-tenant-secret-name" not in text  # request bodies are not traced
