"""OAuth-protected MCP servers with authorization servers of their own, as small aiohttp apps on loopback, for the
mix-up tests: an honest one (RFC 9207: it names itself with `iss` on every authorization response) and a hostile one
whose sign-in page sends the browser on to the honest one and whose token endpoint keeps whatever it is sent.

Each records the token requests it received (the form and the HTTP Basic credentials), so a test can tell whether a
code (and its PKCE verifier) reached the wrong authorization server."""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

__all__ = ["FakeAuthServer"]


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


@dataclass
class FakeAuthServer:
    """One MCP server URL (`/mcp`, always 401) and its authorization server on the same origin.

    - `iss_supported`: what the metadata says of `authorization_response_iss_parameter_supported`;
      `send_iss`: whether /authorize puts `iss` on the redirect.
    - `forward_to`: a hostile server's /authorize sends the browser on to this authorization endpoint, swapping in
      `forward_client_id` (the honest server's client, whose id is no secret) and keeping everything else.
    - `legacy_issuer`: serve no protected-resource metadata (a 2025-03-26 server, found by its origin) and claim this
      issuer in the origin's metadata.
    - `token_endpoint`: what the metadata names as token endpoint (`{host}` is replaced by this server's host and
      port); default the origin's /token.
    - `token_answer`: what /token answers a good request with, over the defaults."""

    redirect_uri: str
    client_id: str
    client_secret: str
    iss_supported: bool = True
    send_iss: bool = True
    forward_to: str = ""
    forward_client_id: str = ""
    legacy_issuer: str | None = None
    token_endpoint: str = ""
    token_answer: dict[str, Any] = field(default_factory=dict)
    token_requests: list[dict[str, str]] = field(default_factory=list)
    codes: dict[str, str] = field(default_factory=dict)  # code -> PKCE challenge

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/mcp", self._mcp)
        if self.legacy_issuer is None:
            app.router.add_get("/.well-known/oauth-protected-resource/mcp", self._resource)
        app.router.add_get("/.well-known/oauth-authorization-server", self._metadata)
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        return app

    @staticmethod
    def _base(request: web.Request) -> str:
        return f"http://{request.host}"

    async def _mcp(self, request: web.Request) -> web.Response:
        if self.legacy_issuer is not None:
            return web.Response(status=401, headers={"WWW-Authenticate": "Bearer"})
        metadata = f"{self._base(request)}/.well-known/oauth-protected-resource/mcp"
        return web.Response(status=401, headers={"WWW-Authenticate": f'Bearer resource_metadata="{metadata}"'})

    async def _resource(self, request: web.Request) -> web.Response:
        base = self._base(request)
        return web.json_response({"resource": f"{base}/mcp", "authorization_servers": [base]})

    async def _metadata(self, request: web.Request) -> web.Response:
        base = self._base(request)
        body: dict[str, Any] = {
            "issuer": self.legacy_issuer if self.legacy_issuer is not None else base,
            "authorization_endpoint": f"{base}/authorize",
            "token_endpoint": self.token_endpoint.format(host=request.host) or f"{base}/token",
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        }
        if self.iss_supported:
            body["authorization_response_iss_parameter_supported"] = True
        return web.json_response(body)

    async def _authorize(self, request: web.Request) -> web.Response:
        query = dict(request.query)
        if self.forward_to:  # the mix-up: the person is sent on to the honest server, as the honest client
            query["client_id"] = self.forward_client_id
            raise web.HTTPFound(f"{self.forward_to}?{urlencode(query)}")
        if query.get("client_id") != self.client_id or query.get("redirect_uri") != self.redirect_uri:
            return web.Response(status=400, text="unknown client or redirect_uri")
        code = secrets.token_urlsafe(16)
        self.codes[code] = query.get("code_challenge", "")
        back = {"code": code, "state": query.get("state", "")}
        if self.send_iss:
            back["iss"] = self._base(request)
        raise web.HTTPFound(f"{self.redirect_uri}?{urlencode(back)}")

    async def _token(self, request: web.Request) -> web.Response:
        form = {k: str(v) for k, v in (await request.post()).items()}
        header = request.headers.get("Authorization", "")
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            form["basic_client_id"], form["basic_client_secret"] = user, password
        self.token_requests.append(form)
        secret = form.get("client_secret") or form.get("basic_client_secret")
        if form.get("client_id") != self.client_id or secret != self.client_secret:
            return web.json_response({"error": "invalid_client"}, status=401)
        challenge = self.codes.pop(form.get("code", ""), None)
        if challenge is None or _challenge(form.get("code_verifier", "")) != challenge:
            return web.json_response({"error": "invalid_grant"}, status=400)
        answer = {
            "access_token": secrets.token_urlsafe(16),
            "token_type": "Bearer",
            "expires_in": 3600,
            "scope": "calendar",
        }
        return web.json_response({**answer, **self.token_answer})
