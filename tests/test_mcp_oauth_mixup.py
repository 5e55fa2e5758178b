"""The OAuth mix-up attack (RFC 9207) on the per-user MCP connect flow, with two authorization servers on loopback:
an honest one and a hostile one whose sign-in page sends the person on to the honest one. The person starts
connecting to the hostile server; the honest server signs them in and answers to the platform's one redirect URI;
the code it issued must not be redeemed at the hostile server's token endpoint (which would hand the code and its
PKCE verifier to the attacker). The console refuses that answer by its `iss`; here, what the server's part of it
is: the issuer the console checks against, discovery that cannot be made to claim another's issuer, and token
endpoints checked before anything is sent to them."""

from __future__ import annotations

import base64
import hashlib
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
import pytest
from yarl import URL

from server.mcp import oauth_client
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.fakes.oauth_servers import FakeAuthServer
from tests.fakes.serve import serve_in_thread
from tests.world import World, make_world, must

MCP = "platform.agents.v1.ExternalMcpServerService"
HONEST_CLIENT, HONEST_SECRET = "honest-client", "honest-SECRET-1"
HOSTILE_CLIENT, HOSTILE_SECRET = "hostile-client", "hostile-SECRET-2"


@dataclass
class Pair:
    honest: FakeAuthServer
    hostile: FakeAuthServer
    honest_port: int
    hostile_port: int

    @property
    def honest_base(self) -> str:
        return f"http://127.0.0.1:{self.honest_port}"

    @property
    def hostile_base(self) -> str:
        return f"http://127.0.0.1:{self.hostile_port}"


@pytest.fixture
def pair(server: Server) -> Iterator[Pair]:
    redirect_uri = server.settings.mcp_oauth_redirect_uri
    honest = FakeAuthServer(redirect_uri, HONEST_CLIENT, HONEST_SECRET)
    with serve_in_thread(honest.app) as honest_port:
        hostile = FakeAuthServer(
            redirect_uri,
            HOSTILE_CLIENT,
            HOSTILE_SECRET,
            forward_to=f"http://127.0.0.1:{honest_port}/authorize",
            forward_client_id=HONEST_CLIENT,
        )
        with serve_in_thread(hostile.app) as hostile_port:
            yield Pair(honest, hostile, honest_port, hostile_port)


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def register(connect: ConnectJsonCaller, server: Server, url: str, client_id: str, secret: str) -> str:
    name = f"mix-{secrets.token_hex(3)}_"
    body = {
        "externalMcpServer": {
            "name": name,
            "serverUrl": url,
            "auth": {
                "type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE",
                "oauth": {"clientId": client_id, "scopes": ["calendar"]},
            },
            "sharing": {"shareToAll": True},
        },
        "oauthClientSecret": secret,
    }
    must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
    return name


async def sign_in(authorization_url: str, query: dict[str, str]) -> dict[str, str]:
    """The browser's part: follow the sign-in redirects until one goes to the redirect URI (not fetched: that is
    the console's page); return the callback's query."""
    url = str(URL(authorization_url).update_query(query))
    async with aiohttp.ClientSession() as http:
        for _ in range(5):
            async with http.get(url, allow_redirects=False) as resp:
                assert resp.status in (302, 303, 307), await resp.text()
                url = resp.headers["Location"]
            if "/authorize" not in urlsplit(url).path:
                return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
    raise AssertionError("the sign-in never came back")


def authorization_query(meta: dict[str, Any], challenge: str, state: str) -> dict[str, str]:
    return {
        "response_type": "code",
        "client_id": meta["oauth"]["clientId"],
        "redirect_uri": meta["redirectUri"],
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": state,
        "scope": "calendar",
    }


async def test_the_sign_in_metadata_names_the_discovered_issuer(
    server: Server, connect: ConnectJsonCaller, world: World, pair: Pair
) -> None:
    """The console checks the authorization response's `iss` (RFC 9207) against the issuer the metadata names, so
    the metadata names the issuer discovery found (checked against where its metadata was read, RFC 8414 3.3) when
    the registration gave none. Through the hostile server, the honest one answers with its own `iss`: another
    issuer than the one the sign-in was started at, which the console refuses before asking for any exchange
    (console/src/api/mcpOAuth.ts, driven in a browser by tests/console/test_console_resources.py)."""
    hostile = await register(connect, server, f"{pair.hostile_base}/mcp", HOSTILE_CLIENT, HOSTILE_SECRET)
    member = world.tokens["member"]
    meta = must(await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": hostile}, token=member))
    assert meta["oauth"]["authorizationUrl"] == f"{pair.hostile_base}/authorize"
    assert meta["oauth"]["issuerUrl"] == pair.hostile_base
    _, challenge = pkce()
    back = await sign_in(meta["oauth"]["authorizationUrl"], authorization_query(meta, challenge, "s"))
    assert back["iss"] == pair.honest_base != meta["oauth"]["issuerUrl"]


# -- Discovery and the token endpoint ------------------------------------------------------------------------------


async def test_origin_metadata_claiming_another_issuer_is_not_used(
    server: Server, connect: ConnectJsonCaller, world: World, pair: Pair
) -> None:
    """RFC 8414 section 3.3: a server without protected-resource metadata is found by its origin, whose metadata
    must name that origin as issuer. One that names the honest server's issuer (so the RFC 9207 check would take the
    honest server's `iss` as its own) is not used: no sign-in page, and nothing is sent to its token endpoint."""
    hostile = FakeAuthServer(
        server.settings.mcp_oauth_redirect_uri, HOSTILE_CLIENT, HOSTILE_SECRET, legacy_issuer=pair.honest_base
    )
    with serve_in_thread(hostile.app) as port:
        name = await register(connect, server, f"http://127.0.0.1:{port}/mcp", HOSTILE_CLIENT, HOSTILE_SECRET)
        member = world.tokens["member"]
        meta = must(await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=member))
        assert "authorizationUrl" not in meta["oauth"], meta
        grant = {"name": name, "code": "c", "codeVerifier": "v", "redirectUri": meta["redirectUri"]}
        refused = await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=member)
    assert refused.code == "failed_precondition" and "no OAuth token endpoint" in refused.message, refused
    assert not hostile.token_requests


async def test_origin_metadata_naming_its_origin_is_used(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """The same legacy server naming its own origin (with the root's trailing slash) is found as before."""
    redirect_uri = server.settings.mcp_oauth_redirect_uri
    fake = FakeAuthServer(redirect_uri, HONEST_CLIENT, HONEST_SECRET, legacy_issuer="")
    with serve_in_thread(fake.app) as port:
        fake.legacy_issuer = f"http://127.0.0.1:{port}/"
        name = await register(connect, server, f"http://127.0.0.1:{port}/mcp", HONEST_CLIENT, HONEST_SECRET)
        meta = must(
            await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=world.tokens["member"])
        )
    assert meta["oauth"]["authorizationUrl"] == f"http://127.0.0.1:{port}/authorize", meta


@pytest.mark.parametrize(
    ("endpoint", "problem"),
    [
        ("http://user:s3cr3t@{host}/token", "carries credentials in the URL"),
        ("http://{host}/token#s3cr3t", "has a fragment"),
        ("ftp://{host}/token", "is not an http(s) URL"),
    ],
)
async def test_a_discovered_token_endpoint_is_checked_before_use(
    server: Server, connect: ConnectJsonCaller, world: World, endpoint: str, problem: str
) -> None:
    redirect_uri = server.settings.mcp_oauth_redirect_uri
    fake = FakeAuthServer(redirect_uri, HONEST_CLIENT, HONEST_SECRET, token_endpoint=endpoint)
    with serve_in_thread(fake.app) as port:
        name = await register(connect, server, f"http://127.0.0.1:{port}/mcp", HONEST_CLIENT, HONEST_SECRET)
        grant = {"name": name, "code": "c", "codeVerifier": "v", "redirectUri": redirect_uri}
        refused = await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=world.tokens["member"])
    assert refused.code == "failed_precondition" and problem in refused.message, refused
    assert "s3cr3t" not in refused.message and "user" not in refused.message
    assert not fake.token_requests


@pytest.mark.parametrize(
    ("url", "issuer", "problem"),
    [
        ("https://as.example/token", "https://as.example", None),
        ("http://127.0.0.1:1/token", "http://127.0.0.1:1", None),
        ("http://as.example/token", "https://as.example", "is plain http while"),  # no downgrade from https
        ("http://as.example/token", "", None),
        ("https://a:b@as.example/token", "", "carries credentials"),
        ("https://as.example/token#", "", "has a fragment"),
        ("javascript:alert(1)", "", "is not an http(s) URL"),
        ("http://[::1/token", "", "is not a valid URL"),
    ],
)
def test_token_endpoint_rules(url: str, issuer: str, problem: str | None) -> None:
    found = oauth_client.endpoint_problem(url, issuer)
    assert found == problem if problem is None else (found is not None and found.startswith(problem)), found


async def test_an_out_of_range_token_lifetime_is_no_internal_error(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """A token answer whose expires_in does not fit the response (or is no number) is read as "not given", and a
    token that is no string is an invalid answer, named: neither is an internal error."""
    redirect_uri = server.settings.mcp_oauth_redirect_uri
    fake = FakeAuthServer(redirect_uri, HONEST_CLIENT, HONEST_SECRET, token_answer={"expires_in": 1e30})
    with serve_in_thread(fake.app) as port:
        base = f"http://127.0.0.1:{port}"
        name = await register(connect, server, f"{base}/mcp", HONEST_CLIENT, HONEST_SECRET)
        member = world.tokens["member"]
        answers: list[tuple[dict[str, Any], str | None]] = [
            ({"expires_in": 1e30}, None),
            ({"access_token": {"a": 1}}, "invalid token response"),
        ]
        for answer, expect in answers:
            fake.token_answer = answer
            verifier, challenge = pkce()
            meta = {"oauth": {"clientId": HONEST_CLIENT}, "redirectUri": redirect_uri}
            back = await sign_in(f"{base}/authorize", authorization_query(meta, challenge, "s"))
            grant = {"name": name, "code": back["code"], "codeVerifier": verifier, "redirectUri": redirect_uri}
            result = await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=member)
            if expect is None:
                assert "expiresIn" not in must(result), result
            else:
                assert result.code == "unavailable" and expect in result.message, result
