"""A management server and a gateway that allow one browser origin (SWITCHBOARD_CORS_ALLOWED_ORIGINS)."""

from __future__ import annotations

import asyncio
import signal
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from server.settings import load_settings
from tests.conftest import Database, server_env, start_server
from tests.gateway_fixtures import Fakes, gateway_env, start_gateway_process

ALLOWED = "http://127.0.0.1:47100"  # a browser page's origin; nothing needs to listen there for these checks
OTHER = "http://127.0.0.1:47101"


@dataclass
class CorsServers:
    api: str
    gateway: str  # ends in /v1
    admin_token: str
    allowed: str


async def start_cors_servers(database: Database, fakes: Fakes, allowed: str) -> AsyncIterator[CorsServers]:
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-var-"))
    env = server_env(database, var_dir, SWITCHBOARD_CORS_ALLOWED_ORIGINS=allowed)
    server = await start_server(env)
    gw_env = {**gateway_env(database, var_dir, fakes), "SWITCHBOARD_CORS_ALLOWED_ORIGINS": allowed}
    gateway = await start_gateway_process(gw_env, workers=1)
    from server.tokens import PLATFORM_ROLES, mint_token

    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    token = mint_token(settings, user_id="cors-admin", roles=PLATFORM_ROLES)
    try:
        yield CorsServers(f"http://127.0.0.1:{server.listener_port}", gateway.base_url, token, allowed)
    finally:
        gateway.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gateway.proc.wait(), 60)
        await server.stop()
