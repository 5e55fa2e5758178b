"""Discovery and the server-side OAuth token exchange, against real MCP servers (the mcp SDK) on loopback, one of
them with its own authorization server. The test plays the chat client: it sends the user to /authorize and brings
the code back to Switchboard, which redeems it with the confidential client secret only Switchboard holds."""

from __future__ import annotations

import base64
import hashlib
import secrets
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import aiohttp
import httpx2
import pytest
from aiohttp import web
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import MCPServer
from mcp.shared.auth import OAuthClientInformationFull

from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, server_env, start_server
from tests.fakes.mcp_servers import (
    BASIC_CLIENT_ID,
    CLIENT_ID,
    CLIENT_SECRET,
    AutoApprove,
    McpServers,
    oauth_server,
    serve_asgi,
    tools_server,
)
from tests.fakes.serve import serve_in_thread
from tests.world import World, make_world, must

MCP = "platform.agents.v1.ExternalMcpServerService"


@pytest.fixture(scope="session")
def mcp_servers(server: Server) -> Iterator[McpServers]:
    provider = AutoApprove(server.settings.mcp_oauth_redirect_uri)
    with serve_asgi(tools_server()) as tools_port, serve_asgi(oauth_server(provider)) as oauth_port:
        yield McpServers(tools_port, oauth_port, provider)


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


def _bearer_only_app() -> web.Application:
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=401, headers={"WWW-Authenticate": 'Bearer realm="tools"'})

    app = web.Application()
    app.router.add_post("/mcp", refuse)
    return app


async def _discover(connect: ConnectJsonCaller, token: str, url: str, tenant_id: str = "") -> Any:
    if tenant_id:
        return await connect.call(
            f"{MCP}/DiscoverExternalMcpServer", {"serverUrl": url, "tenantId": tenant_id}, token=token
        )
    return await connect.call(f"{MCP}/DiscoverPlatformExternalMcpServer", {"serverUrl": url}, token=token)


async def test_discovery_reports_what_each_server_advertises(
    server: Server, connect: ConnectJsonCaller, mcp_servers: McpServers, world: World
) -> None:
    plain = must(await _discover(connect, server.admin_token, mcp_servers.tools_url))["discovery"]
    assert plain == {"authType": "EXTERNAL_MCP_AUTH_TYPE_NONE", "serverName": "tools-srv"}
    oauth = must(await _discover(connect, world.tokens["editor"], mcp_servers.oauth_url, world.tenant_id))
    assert oauth["discovery"] == {
        "authType": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE",
        "dynamicClientRegistrationSupported": True,
    }
    with serve_in_thread(_bearer_only_app) as port:
        bearer = must(await _discover(connect, server.admin_token, f"http://127.0.0.1:{port}/mcp"))
    assert bearer["discovery"] == {"authType": "EXTERNAL_MCP_AUTH_TYPE_BEARER"}


def _sse_only_server(port: int) -> Any:
    """The mcp SDK's own server speaking only the 2024-11-05 HTTP+SSE transport (POST to /sse: 405)."""
    mcp = MCPServer("sse-only-srv", version="1.0.0")

    @mcp.tool()
    def add(a: int, b: int) -> int:
        return a + b

    return mcp.sse_app(host="127.0.0.1")


def _sse_shaped_app(get_status: int, content_type: str) -> Callable[[], web.Application]:
    """A URL that refuses the initialize POST like an HTTP+SSE server, then answers the GET as told."""

    def make() -> web.Application:
        async def refuse(request: web.Request) -> web.Response:
            return web.Response(status=405)

        async def get(request: web.Request) -> web.Response:
            headers = {"WWW-Authenticate": 'Bearer realm="tools"'} if get_status == 401 else {}
            return web.Response(status=get_status, body=b"<html></html>", content_type=content_type, headers=headers)

        app = web.Application()
        app.router.add_post("/sse", refuse)
        app.router.add_get("/sse", get)
        return app

    return make


async def test_discovery_falls_back_to_the_http_sse_transport(server: Server, connect: ConnectJsonCaller) -> None:
    """Like the tool loop, discovery tries the older HTTP+SSE transport when the initialize POST is refused."""
    with serve_asgi(_sse_only_server) as port:
        found = must(await _discover(connect, server.admin_token, f"http://127.0.0.1:{port}/sse"))["discovery"]
    assert found == {"authType": "EXTERNAL_MCP_AUTH_TYPE_NONE", "serverName": "sse-only-srv"}
    with serve_in_thread(_sse_shaped_app(401, "text/plain")) as port:
        bearer = must(await _discover(connect, server.admin_token, f"http://127.0.0.1:{port}/sse"))["discovery"]
    assert bearer == {"authType": "EXTERNAL_MCP_AUTH_TYPE_BEARER"}
    with serve_in_thread(_sse_shaped_app(200, "text/html")) as port:
        refused = await _discover(connect, server.admin_token, f"http://127.0.0.1:{port}/sse")
    assert refused.code == "failed_precondition" and "HTTP 405" in refused.message, refused


async def test_discovery_gates_and_failures(
    server: Server, connect: ConnectJsonCaller, mcp_servers: McpServers, world: World
) -> None:
    refused = await _discover(connect, world.tokens["member"], mcp_servers.tools_url, world.tenant_id)
    assert refused.code == "permission_denied"  # probing is the first step of creating
    platform = await _discover(connect, world.tokens["admin"], mcp_servers.tools_url)
    assert platform.code == "permission_denied"
    with socket_closed() as url:
        gone = await _discover(connect, server.admin_token, url)
    assert gone.code == "unavailable"
    assert "could not be reached" in gone.message
    bad = await _discover(connect, server.admin_token, "ftp://127.0.0.1/mcp")
    assert bad.code == "invalid_argument" and "server_url" in bad.message


class socket_closed:
    """A loopback URL nothing listens on."""

    def __enter__(self) -> str:
        import socket

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self._port = sock.getsockname()[1]
        sock.close()
        return f"http://127.0.0.1:{self._port}/mcp"

    def __exit__(self, *exc: object) -> None:
        return None


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


async def _register_oauth(
    connect: ConnectJsonCaller,
    server: Server,
    url: str,
    *,
    shared: bool = True,
    secret: str = CLIENT_SECRET,
    **oauth: Any,
) -> str:
    name = f"cal-{secrets.token_hex(3)}_"
    config = {"clientId": CLIENT_ID, "scopes": ["calendar"], **oauth}
    body = {
        "externalMcpServer": {
            "name": name,
            "serverUrl": url,
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": config},
            "sharing": {"shareToAll": shared},
        },
        "oauthClientSecret": secret,
    }
    must(await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=server.admin_token))
    return name


async def _authorize(mcp_servers: McpServers, redirect_uri: str, challenge: str, client_id: str) -> str:
    """The chat client's part: send the user to /authorize and read the code off the redirect."""
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": secrets.token_urlsafe(8),
        "scope": "calendar",
        "resource": mcp_servers.oauth_url,
    }
    url = f"http://127.0.0.1:{mcp_servers.oauth_port}/authorize?{urlencode(query)}"
    async with aiohttp.ClientSession() as http, http.get(url, allow_redirects=False) as resp:
        assert resp.status in (302, 307), await resp.text()
        location = resp.headers["Location"]
    query_back = parse_qs(urlsplit(location).query)
    assert "code" in query_back, location
    return query_back["code"][0]


async def _whoami(mcp_servers: McpServers, access_token: str) -> str:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {access_token}"}) as http,
        Client(streamable_http_client(mcp_servers.oauth_url, http_client=http)) as client,
    ):
        result = await client.call_tool("whoami", {})
    return str(result.content[0].text)  # type: ignore[union-attr]


@pytest.mark.parametrize("manual", [False, True])
async def test_code_and_refresh_exchange(
    server: Server, connect: ConnectJsonCaller, mcp_servers: McpServers, world: World, manual: bool
) -> None:
    endpoints: dict[str, Any] = {}
    if manual:  # registered endpoints instead of discovery, and HTTP Basic client authentication
        base = f"http://127.0.0.1:{mcp_servers.oauth_port}"
        endpoints = {
            "authorizationUrl": f"{base}/authorize",
            "tokenUrl": f"{base}/token",
            "tokenEndpointAuthMethod": "client_secret_basic",
            "clientId": BASIC_CLIENT_ID,
        }
    name = await _register_oauth(connect, server, mcp_servers.oauth_url, **endpoints)
    member = world.tokens["member"]  # an invoker, not an admin of the server
    meta = must(await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=member))
    verifier, challenge = _pkce()
    code = await _authorize(mcp_servers, meta["redirectUri"], challenge, meta["oauth"]["clientId"])
    grant = {
        "name": name,
        "code": code,
        "codeVerifier": verifier,
        "redirectUri": meta["redirectUri"],
        "metadataVersion": meta["metadataVersion"],
    }
    tokens = must(await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=member))
    assert tokens["tokenType"] == "Bearer" and int(tokens["expiresIn"]) > 0 and tokens["scope"] == "calendar"
    assert CLIENT_SECRET not in str(tokens)
    assert await _whoami(mcp_servers, tokens["accessToken"]) == "user-42"
    # A code is redeemed once: replaying it is the authorization server's refusal, named.
    replay = await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=member)
    assert replay.code == "invalid_argument" and "invalid_grant" in replay.message
    refresh = {"name": name, "refreshToken": tokens["refreshToken"]}
    refreshed = must(await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", refresh, token=member))
    assert refreshed["accessToken"] != tokens["accessToken"]
    assert await _whoami(mcp_servers, refreshed["accessToken"]) == "user-42"


@pytest.mark.parametrize(
    "client",
    [
        ("basic-encoded", "s3cr%41t+with/chars= &"),  # decoded as it was sent, it is another secret
        ("https://client.example.test/meta.json", CLIENT_SECRET),  # a ':' in a Basic user-id was an internal error
    ],
)
async def test_client_secret_basic_credentials_are_form_encoded(
    server: Server, connect: ConnectJsonCaller, mcp_servers: McpServers, world: World, client: tuple[str, str]
) -> None:
    """RFC 6749 section 2.3.1: with client_secret_basic the client id and secret are form-urlencoded before they go
    into the Basic header, and a compliant authorization server (the mcp SDK's) decodes them. Sent as they were, a
    secret with '%' or '+' was another secret to it (invalid_client), and a client id with ':' (URL-shaped ids have
    one) was an internal error. Authenticated, a bogus refresh token is refused as invalid_grant."""
    client_id, secret = client
    mcp_servers.provider.clients[client_id] = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        redirect_uris=[server.settings.mcp_oauth_redirect_uri],  # type: ignore[list-item]
        token_endpoint_auth_method="client_secret_basic",
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope="calendar",
    )
    base = f"http://127.0.0.1:{mcp_servers.oauth_port}"
    endpoints = {"authorizationUrl": f"{base}/authorize", "tokenUrl": f"{base}/token"}
    name = await _register_oauth(
        connect,
        server,
        mcp_servers.oauth_url,
        secret=secret,
        clientId=client_id,
        tokenEndpointAuthMethod="client_secret_basic",
        **endpoints,
    )
    grant = {"name": name, "refreshToken": "not-a-real-refresh-token"}
    result = await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=world.tokens["member"])
    assert result.code == "invalid_argument" and "invalid_grant" in result.message, result


async def test_metadata_names_the_discovered_sign_in_page(
    server: Server, connect: ConnectJsonCaller, mcp_servers: McpServers, world: World
) -> None:
    """A server registered without endpoints: the metadata still says where to send the person (found through the
    discovery chain server-side), since a browser client cannot follow that chain under the console's CSP."""
    name = await _register_oauth(connect, server, mcp_servers.oauth_url)
    meta = must(
        await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=world.tokens["member"])
    )
    assert meta["oauth"]["authorizationUrl"] == f"http://127.0.0.1:{mcp_servers.oauth_port}/authorize", meta
    assert "tokenUrl" not in meta["oauth"]  # only what the browser needs; the token endpoint stays server-side
    # The URL it names is the one the flow uses: the code it hands out is redeemed.
    verifier, challenge = _pkce()
    code = await _authorize(mcp_servers, meta["redirectUri"], challenge, meta["oauth"]["clientId"])
    grant = {"name": name, "code": code, "codeVerifier": verifier, "redirectUri": meta["redirectUri"]}
    tokens = must(await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", grant, token=world.tokens["member"]))
    assert tokens["accessToken"]


def _scripted_sign_in_app() -> web.Application:
    """An OAuth-protected MCP server whose authorization server publishes a `javascript:` URL as its sign-in page."""

    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=401, headers={"WWW-Authenticate": 'Bearer realm="tools"'})

    async def resource(request: web.Request) -> web.Response:
        base = f"http://{request.host}"
        return web.json_response({"resource": f"{base}/mcp", "authorization_servers": [base]})

    async def authorization_server(request: web.Request) -> web.Response:
        base = f"http://{request.host}"
        return web.json_response(
            {
                "issuer": base,
                "token_endpoint": f"{base}/token",
                "authorization_endpoint": "javascript:opener.document.title='pwned'//",
            }
        )

    app = web.Application()
    app.router.add_post("/mcp", refuse)
    app.router.add_get("/.well-known/oauth-protected-resource/mcp", resource)
    app.router.add_get("/.well-known/oauth-authorization-server", authorization_server)
    return app


async def test_a_discovered_sign_in_page_that_is_no_http_url_is_not_handed_to_the_browser(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """The console sends a window of its own origin to `authorizationUrl`: a discovered one obeys the rule a
    registered one does (an http(s) URL), so an MCP server's metadata cannot name script to run there."""
    with serve_in_thread(_scripted_sign_in_app) as port:
        name = await _register_oauth(connect, server, f"http://127.0.0.1:{port}/mcp")
        meta = must(
            await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=world.tokens["member"])
        )
    assert "authorizationUrl" not in meta["oauth"], meta  # the console then says none was configured or discovered


async def test_exchange_refusals(
    server: Server, connect: ConnectJsonCaller, mcp_servers: McpServers, world: World
) -> None:
    name = await _register_oauth(connect, server, mcp_servers.oauth_url)
    member = world.tokens["member"]
    meta = must(await connect.call(f"{MCP}/GetExternalMcpServerOAuthMetadata", {"name": name}, token=member))
    before = mcp_servers.provider.token_requests
    cases = [
        ({"code": "c", "codeVerifier": "v", "redirectUri": meta["redirectUri"], "refreshToken": "r"}, "code"),
        ({}, "code"),
        ({"code": "c", "codeVerifier": "v", "redirectUri": "https://evil.example/cb"}, "redirect_uri"),
        ({"refreshToken": "r", "metadataVersion": "stale"}, "metadata_version"),
    ]
    for body, field in cases:
        result = await connect.call(f"{MCP}/ExchangeExternalMcpOAuthToken", {"name": name, **body}, token=member)
        assert result.code in ("invalid_argument", "failed_precondition"), result
        assert field in result.message
    assert mcp_servers.provider.token_requests == before  # refused before anything left Switchboard
    private = await _register_oauth(connect, server, mcp_servers.oauth_url, shared=False)
    hidden = await connect.call(
        f"{MCP}/ExchangeExternalMcpOAuthToken", {"name": private, "refreshToken": "r"}, token=member
    )
    assert hidden.code == "not_found"  # only invokers (can_read) may exchange


async def test_without_the_loopback_setting_the_guard_refuses_loopback(
    database: Database, mcp_servers: McpServers
) -> None:
    """The management server reaches MCP servers only through the egress guard: with loopback closed (the
    production default) discovery is refused with the host named, and nothing reaches the authorization server."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-guarded-"))
    env = server_env(database, var_dir, SWITCHBOARD_EGRESS_ALLOW_LOOPBACK="false")
    proc = await start_server(env)
    try:
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        admin = mint_token(settings, user_id="guard-admin", roles=PLATFORM_ROLES)
        connect = ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}")
        before = mcp_servers.provider.token_requests
        refused = await _discover(connect, admin, mcp_servers.oauth_url)
        assert refused.code == "failed_precondition", refused
        assert "127.0.0.1" in refused.message
        assert mcp_servers.provider.token_requests == before
    finally:
        await proc.stop()
