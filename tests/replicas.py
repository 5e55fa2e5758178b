"""Two server processes on one PostgreSQL database, for the tests of what the per-process caches promise across
replicas (a change made through one is seen by the other within SWITCHBOARD_API_KEY_CACHE_SECONDS, 1 s in tests)."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import PG_ADMIN_URL, Database, _pg_unreachable_reason, server_env, start_server
from tests.world import World, make_world


@dataclass
class Replicas:
    a: ConnectJsonCaller
    b: ConnectJsonCaller
    world: World  # made through `a`
    admin_token: str


class _Tokens:
    """What `make_world` needs of a server: tokens signed with the replicas' shared key."""

    def __init__(self, var_env: dict[str, str]) -> None:
        self._settings = load_settings({k: v for k, v in var_env.items() if k.startswith("SWITCHBOARD_")})
        self.admin_token = mint_token(self._settings, user_id="replica-admin", roles=PLATFORM_ROLES)

    def token(self, user: str, **_: object) -> str:
        return mint_token(self._settings, user_id=user, email=f"{user}@example.com")


@asynccontextmanager
async def two_replicas(database: Database) -> AsyncIterator[Replicas]:
    if database.backend != "postgresql":
        pytest.skip("replicas share a PostgreSQL database")
    if _pg_unreachable_reason():
        pytest.skip(f"PostgreSQL unreachable at {PG_ADMIN_URL}")
    env = server_env(database, Path(tempfile.mkdtemp(prefix="switchboard-replicas-")))
    first, second = await start_server(env), await start_server(env)
    try:
        tokens = _Tokens(env)
        a = ConnectJsonCaller(f"http://127.0.0.1:{first.listener_port}")
        b = ConnectJsonCaller(f"http://127.0.0.1:{second.listener_port}")
        yield Replicas(a, b, await make_world(tokens, a), tokens.admin_token)
    finally:
        await first.stop()
        await second.stop()
