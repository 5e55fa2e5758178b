"""Session tokens from an external identity provider: a real JWKS endpoint on loopback, a real server."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import jwt
import pytest_asyncio
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.clients import ConnectJsonCaller
from tests.conftest import Database, server_env, start_server

ISSUER = "https://idp.example.test"
AUDIENCE = "switchboard-prod"
WHO_AM_I = "platform.tenants.v1.UserService/GetCurrentUser"


class IdentityProvider:
    """Publishes one signing key at /jwks.json and signs tokens with it."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "key-1"

    def jwks(self) -> dict[str, Any]:
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "use": "sig", "alg": "RS256"}]}

    def token(self, key: Any = None, **overrides: Any) -> str:
        now = int(time.time())
        claims = {
            "iss": ISSUER,
            "aud": AUDIENCE,
            "sub": "idp-user",
            "email": "IdP.User@Example.com",
            "iat": now,
            "exp": now + 300,
            "switchboard_roles": ["can_manage_tenants"],
            **overrides,
        }
        return jwt.encode(claims, key or self.key, algorithm="RS256", headers={"kid": self.kid})


@pytest_asyncio.fixture(scope="module")
async def idp_server(database: Database) -> AsyncIterator[tuple[IdentityProvider, ConnectJsonCaller]]:
    idp = IdentityProvider()
    app = web.Application()

    async def jwks(_: web.Request) -> web.Response:
        return web.json_response(idp.jwks())

    app.router.add_get("/jwks.json", jwks)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-idp-"))
    env = server_env(
        database,
        var_dir,
        SWITCHBOARD_JWKS_URL=f"http://127.0.0.1:{port}/jwks.json",
        SWITCHBOARD_JWT_ISSUER=ISSUER,
        SWITCHBOARD_JWT_AUDIENCE=AUDIENCE,
    )
    proc = await start_server(env)
    try:
        yield idp, ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
    finally:
        await proc.stop()
        await runner.cleanup()


async def test_tokens_signed_by_the_identity_provider_are_accepted(idp_server: Any) -> None:
    idp, connect = idp_server
    result = await connect.call(WHO_AM_I, {}, token=idp.token(), get=True)
    assert result.ok, result
    assert result.body["user"]["userId"] == "idp-user"
    assert result.body["user"]["email"] == "idp.user@example.com"
    assert result.body["canManageTenants"] is True
    assert "canManageModels" not in result.body


async def test_bad_tokens_are_refused_alike(idp_server: Any) -> None:
    idp, connect = idp_server
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    bad = {
        "foreign key": idp.token(key=stranger),
        "expired": idp.token(exp=int(time.time()) - 10),
        "wrong audience": idp.token(aud="someone-else"),
        "wrong issuer": idp.token(iss="https://evil.example.test"),
        "no subject": idp.token(sub=None),
    }
    for reason, token in bad.items():
        result = await connect.call(WHO_AM_I, {}, token=token, get=True)
        assert result.code == "unauthenticated", reason
        assert result.message == "invalid or expired session token", reason
