"""Real MCP servers (the `mcp` SDK's MCPServer) on loopback for tests, one of them with its own OAuth authorization
server that approves every request (the chat client's part of the flow is played by the test)."""

from __future__ import annotations

import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

__all__ = [
    "BASIC_CLIENT_ID",
    "CLIENT_ID",
    "CLIENT_SECRET",
    "AutoApprove",
    "McpServers",
    "loop_tools_server",
    "oauth_server",
    "serve_asgi",
    "tools_server",
]

CLIENT_ID = "switchboard-test"
CLIENT_SECRET = "oauth-client-SECRET-7"
BASIC_CLIENT_ID = "switchboard-basic"  # the same secret, authenticated with HTTP Basic


@contextmanager
def serve_asgi(
    make: Callable[[int], Any], *, host: str = "127.0.0.1", port: int = 0, graceful_seconds: float | None = None
) -> Iterator[int]:
    """Serve the ASGI app `make(port)` on `host` in a thread of its own; yield its port. A fixed `port` may be
    served again right after (a restarted server): the address is reusable. `graceful_seconds` bounds how long the
    stop waits for open connections (a client's standing SSE stream) before it drops them."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(make(port), log_level="warning", lifespan="on", timeout_graceful_shutdown=graceful_seconds)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def tools_server(name: str = "tools-srv") -> Callable[[int], Any]:
    def make(port: int) -> Any:
        mcp = MCPServer(name, version="1.0.0")

        @mcp.tool()
        def add(a: int, b: int) -> int:
            return a + b

        return mcp.streamable_http_app(host="127.0.0.1")

    return make


def loop_tools_server(required_headers: dict[str, str], name: str = "loop-srv") -> Callable[[int], Any]:
    """Tools for the Responses tool loop (`add`, `slow`, `big`, `fails`), answering 401 unless every required header
    is sent with its value (a bearer token, static headers)."""

    def make(port: int) -> Any:
        mcp = MCPServer(name, version="1.0.0")

        @mcp.tool()
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @mcp.tool()
        async def slow(seconds: float) -> str:
            """Sleep, then answer."""
            await anyio.sleep(seconds)
            return "finally"

        @mcp.tool()
        def big(size: int) -> str:
            """A long answer."""
            return "x" * size

        @mcp.tool()
        def fails() -> str:
            """Always fails."""
            raise ToolError("the tool broke")

        app = mcp.streamable_http_app(host="127.0.0.1")
        wanted = [(k.lower().encode(), v.encode()) for k, v in required_headers.items()]

        async def guarded(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                sent = dict(scope.get("headers") or [])
                if any(sent.get(k) != v for k, v in wanted):
                    await send({"type": "http.response.start", "status": 401, "headers": []})
                    await send({"type": "http.response.body", "body": b""})
                    return
            await app(scope, receive, send)

        return guarded

    return make


@dataclass
class AutoApprove:
    """An authorization server that approves everyone as user-42, with one pre-registered confidential client."""

    redirect_uri: str
    clients: dict[str, OAuthClientInformationFull] = field(default_factory=dict)
    codes: dict[str, AuthorizationCode] = field(default_factory=dict)
    refresh: dict[str, RefreshToken] = field(default_factory=dict)
    access: dict[str, AccessToken] = field(default_factory=dict)
    token_requests: int = 0

    def __post_init__(self) -> None:
        for client_id, method in ((CLIENT_ID, "client_secret_post"), (BASIC_CLIENT_ID, "client_secret_basic")):
            self.clients[client_id] = OAuthClientInformationFull(
                client_id=client_id,
                client_secret=CLIENT_SECRET,
                redirect_uris=[self.redirect_uri],  # type: ignore[list-item]
                token_endpoint_auth_method=method,  # type: ignore[arg-type]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                scope="calendar",
            )

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="user-42",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, code: str) -> AuthorizationCode | None:
        return self.codes.get(code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=int(time.time()) + 3600, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(
            access_token=access, token_type="Bearer", expires_in=3600, refresh_token=refresh, scope=" ".join(scopes)
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, code: AuthorizationCode
    ) -> OAuthToken:
        self.token_requests += 1
        del self.codes[code.code]
        return self._issue(code.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.token_requests += 1
        del self.refresh[refresh_token.token]  # rotated
        return self._issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        return self.access.get(token)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)


def oauth_server(provider: AutoApprove, name: str = "calendar-srv") -> Callable[[int], Any]:
    def make(port: int) -> Any:
        base = f"http://127.0.0.1:{port}"
        mcp = MCPServer(
            name,
            version="1.0.0",
            auth_server_provider=provider,
            auth=AuthSettings(
                issuer_url=base,  # type: ignore[arg-type]
                resource_server_url=f"{base}/mcp",  # type: ignore[arg-type]
                client_registration_options=ClientRegistrationOptions(enabled=True),
                validate_token_resource=False,
            ),
        )

        @mcp.tool()
        def whoami() -> str:
            return "user-42"

        return mcp.streamable_http_app(host="127.0.0.1")

    return make


@dataclass
class McpServers:
    tools_port: int
    oauth_port: int
    provider: AutoApprove

    @property
    def tools_url(self) -> str:
        return f"http://127.0.0.1:{self.tools_port}/mcp"

    @property
    def oauth_url(self) -> str:
        return f"http://127.0.0.1:{self.oauth_port}/mcp"
