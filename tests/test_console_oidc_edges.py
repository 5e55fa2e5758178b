"""Console sign-in at its edges, each once a bug: a provider whose issuer ends with a slash (Auth0's shape), and the
sign-in's flow cookie on an https console, which must be as host-only as the session cookie or a sibling subdomain
can plant it (login CSRF).

The provider is a stand-in written here (aiohttp on loopback, RSA-signed JWTs, the authorization code flow with PKCE
and no login form), since tests/oidc's npm provider (tests/test_console_oidc.py) cannot be given these issuer shapes.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import jwt
import pytest
import pytest_asyncio
from aiohttp import web
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.conftest import Database, server_env, start_server
from tests.serving import free_port

CLIENT_ID = "edge-console"
AUDIENCE = "edge-api"
GET_SESSION = "switchboard.console.v1.ConsoleService/GetSession"
CONNECT_JSON = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@dataclass
class StandInProvider:
    """/authorize hands a code for `user` straight back; /token checks the PKCE verifier and answers a JWT access
    token (for the API) and an ID token (for the console's client), both naming `issuer` exactly."""

    base: str
    issuer: str
    key: rsa.RSAPrivateKey = field(
        default_factory=lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)
    )
    user: str = "alice"
    codes: dict[str, dict[str, str]] = field(default_factory=dict)

    def _sign(self, claims: dict[str, Any]) -> str:
        return jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": "k1"})

    async def discovery(self, _: web.Request) -> web.Response:
        return web.json_response(
            {
                "issuer": self.issuer,
                "authorization_endpoint": f"{self.base}/authorize",
                "token_endpoint": f"{self.base}/token",
                "jwks_uri": f"{self.base}/jwks",
            }
        )

    async def jwks(self, _: web.Request) -> web.Response:
        public = jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        return web.json_response({"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]})

    async def authorize(self, request: web.Request) -> web.Response:
        query = request.query
        code = secrets.token_urlsafe(16)
        self.codes[code] = {"nonce": query["nonce"], "challenge": query["code_challenge"], "user": self.user}
        raise web.HTTPFound(f"{query['redirect_uri']}?code={code}&state={query['state']}")

    async def token(self, request: web.Request) -> web.Response:
        form = await request.post()
        grant = self.codes.pop(str(form.get("code", "")), None)
        verifier = str(form.get("code_verifier", ""))
        if grant is None or _b64url(hashlib.sha256(verifier.encode()).digest()) != grant["challenge"]:
            return web.json_response({"error": "invalid_grant"}, status=400)
        now = int(time.time())
        claims = {"iss": self.issuer, "sub": grant["user"], "iat": now}
        access = self._sign({**claims, "aud": AUDIENCE, "exp": now + 3600})
        id_token = self._sign({**claims, "aud": CLIENT_ID, "nonce": grant["nonce"], "exp": now + 600})
        return web.json_response({"access_token": access, "id_token": id_token, "token_type": "Bearer"})


@dataclass
class Site:
    base_url: str
    provider: StandInProvider


async def _site(database: Database, issuer_path: str, public_url: str | None) -> AsyncIterator[Site]:
    """A management server signing in through a stand-in provider whose issuer is its address plus `issuer_path`."""
    if database.backend != "sqlite":
        pytest.skip("sign-in does not depend on the backend: one is enough")
    provider_port, port = free_port(), free_port()
    base = f"http://127.0.0.1:{provider_port}"
    provider = StandInProvider(base, base + issuer_path)
    app = web.Application()
    app.router.add_get("/.well-known/openid-configuration", provider.discovery)
    app.router.add_get("/jwks", provider.jwks)
    app.router.add_get("/authorize", provider.authorize)
    app.router.add_post("/token", provider.token)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", provider_port).start()
    base_url = f"http://127.0.0.1:{port}"
    env = server_env(
        database,
        Path(tempfile.mkdtemp(prefix="switchboard-oidc-edges-")),
        SWITCHBOARD_OIDC_ISSUER=provider.issuer,
        SWITCHBOARD_OIDC_CLIENT_ID=CLIENT_ID,
        SWITCHBOARD_CONSOLE_PUBLIC_URL=public_url or base_url,
        SWITCHBOARD_JWKS_URL=f"{base}/jwks",
        SWITCHBOARD_JWT_ISSUER=provider.issuer,  # kept as given: the API checks `iss` exactly
        SWITCHBOARD_JWT_AUDIENCE=AUDIENCE,
    )
    server = await start_server(env, port=port)
    try:
        yield Site(base_url, provider)
    finally:
        await server.stop()
        await runner.cleanup()


@pytest_asyncio.fixture(scope="module")
async def slash_issuer(database: Database) -> AsyncIterator[Site]:
    async for site in _site(database, "/", None):
        yield site


@pytest_asyncio.fixture(scope="module")
async def https_console(database: Database) -> AsyncIterator[Site]:
    async for site in _site(database, "", "https://console.example"):
        yield site


async def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], list[str], str]:
    """Status, headers, Set-Cookie lines and body of one GET, redirects not followed (a browser's view)."""
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(url, headers=headers or {}, allow_redirects=False) as resp,
    ):
        return resp.status, dict(resp.headers), resp.headers.getall("Set-Cookie", []), await resp.text()


def _pair(set_cookie: str) -> tuple[str, str]:
    name, _, value = set_cookie.split(";", 1)[0].partition("=")
    return name, value


def _set(cookies: list[str], name: str) -> str | None:
    """The value `name` is set to (not cleared) in these Set-Cookie lines, or None."""
    return next((value for n, value in map(_pair, cookies) if n == name and value), None)


async def _start_sign_in(site: Site) -> tuple[str, str]:
    """What a browser holds after /console/auth/login and the provider's redirect: the flow cookie's Set-Cookie line,
    and the callback (path and query) the provider sends it to."""
    status, headers, cookies, body = await _get(f"{site.base_url}/console/auth/login?next=/console/")
    assert status == 302, (status, body)
    [flow] = cookies
    status, headers, _, body = await _get(headers["Location"])
    assert status == 302, (status, body)
    callback = urlsplit(headers["Location"])
    return flow, f"{callback.path}?{callback.query}"


async def test_a_provider_whose_issuer_ends_with_a_slash_signs_people_in(slash_issuer: Site) -> None:
    """Providers such as Auth0 name their issuer with a trailing slash and put exactly that in every token's `iss`.
    SWITCHBOARD_OIDC_ISSUER loses the slash (server.settings), and the discovery check allowed for it, but the ID token
    was checked against the stripped issuer: every sign-in ended in 400 "the provider's ID token is not valid for
    this client". It is checked against the issuer the discovery document names."""
    flow, callback = await _start_sign_in(slash_issuer)
    name, value = _pair(flow)
    status, headers, cookies, body = await _get(f"{slash_issuer.base_url}{callback}", {"Cookie": f"{name}={value}"})
    assert status == 302, (status, body)
    assert headers["Location"] == "/console/"
    assert _set(cookies, "sb_session") is not None, cookies


async def test_on_an_https_console_only_a_host_only_flow_cookie_finishes_a_sign_in(https_console: Site) -> None:
    """Login CSRF: an attacker starts a sign-in in their own browser, lets the provider sign *them* in, keeps the
    flow cookie and the callback URL, and plants the cookie in a victim's browser from a sibling subdomain
    (Domain=<parent>) or a plain-http page of the host. The cookie holds the state, nonce and PKCE verifier, so the
    callback would set the attacker's session in the victim's browser, and whatever the victim then does in the
    console lands in the attacker's account. On an https console the flow cookie is `__Host-sb_signin` (Secure,
    Path=/, no Domain), which no such page can set; a plain `sb_signin` finishes nothing."""
    https_console.provider.user = "attacker"
    flow, callback = await _start_sign_in(https_console)  # the attacker's own browser
    name, value = _pair(flow)
    assert name == "__Host-sb_signin", flow
    attributes = [part.strip() for part in flow.split(";")[1:]]
    assert "Secure" in attributes and "Path=/" in attributes and not any(a.startswith("Domain") for a in attributes)
    # The victim's browser, holding the planted cookie under the name a sibling subdomain can set.
    host = {"Host": "console.example"}
    status, _, cookies, body = await _get(
        f"{https_console.base_url}{callback}", {**host, "Cookie": f"sb_signin={value}"}
    )
    assert status == 400, (status, body)
    assert _set(cookies, "__Host-sb_session") is None, cookies
    # The same callback with the host-only cookie (the attacker's own browser) still signs in: the name is the check.
    status, _, cookies, body = await _get(
        f"{https_console.base_url}{callback}", {**host, "Cookie": f"__Host-sb_signin={value}"}
    )
    assert status == 302, (status, body)
    session = _set(cookies, "__Host-sb_session")
    assert session is not None, cookies
    async with (
        aiohttp.ClientSession() as http,
        http.post(
            f"{https_console.base_url}/{GET_SESSION}",
            json={},
            headers={**CONNECT_JSON, "Authorization": f"Bearer {session}"},
        ) as resp,
    ):
        assert (await resp.json())["user"]["userId"] == "attacker"
