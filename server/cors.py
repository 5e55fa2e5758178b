"""CORS: the one policy for browser clients on other origins, used by the management API (ASGI) and the gateway
(aiohttp).

Allowed origins come from `SWITCHBOARD_CORS_ALLOWED_ORIGINS` (default: none, so nothing changes for browsers).
A preflight (OPTIONS with Origin and Access-Control-Request-Method) from an allowed origin is answered here, before
authentication, with 204 and what the surface allows; any other request from an allowed origin gets
Access-Control-Allow-Origin and the headers a browser client must be able to read. Requests from other origins get
no CORS headers at all (the browser then refuses them), and their preflights reach the app as before. With any origin
allowed, every answer says `Vary: Origin`: a cache must not hand one origin's answer (with or without
Access-Control-Allow-Origin) to another.

Only the origin is reflected (never `*`): credentials are bearer tokens in headers, not cookies, so no
Allow-Credentials is sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from server.console.static import console_origin, is_built
from server.settings import Settings

__all__ = ["GATEWAY", "MANAGEMENT", "CorsASGI", "CorsPolicy", "gateway_origins"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_MAX_AGE = "7200"


@dataclass(frozen=True)
class Surface:
    methods: tuple[str, ...]
    allowed_headers: tuple[str, ...] | None  # None: what the preflight asks for (the origin is trusted)
    exposed_headers: tuple[str, ...]


# Connect, gRPC-Web (what @connectrpc/connect-web sends and reads), plus our auth and tenant headers.
MANAGEMENT = Surface(
    methods=("GET", "POST"),
    allowed_headers=(
        "Content-Type",
        "Connect-Protocol-Version",
        "Connect-Timeout-Ms",
        "Connect-Accept-Encoding",
        "Connect-Content-Encoding",
        "Grpc-Timeout",
        "Grpc-Accept-Encoding",
        "X-Grpc-Web",
        "X-User-Agent",
        "Authorization",
        "X-Platform-Tenant-Id",
    ),
    exposed_headers=("Grpc-Status", "Grpc-Message", "Grpc-Status-Details-Bin", "Content-Encoding"),
)
# The OpenAI SDKs send their own x-stainless-* and OpenAI-* headers, which vary by version: allow what is asked.
# A browser client reads the rate-limit headers (gateway/limits/headers.py writes them) to pace itself and to back off
# after a 429; tests/test_limits_gateway.py checks that every one the limiter writes is listed here.
GATEWAY = Surface(
    methods=("GET", "POST", "DELETE"),
    allowed_headers=None,
    exposed_headers=(
        "x-request-id",
        "x-should-retry",
        "retry-after",
        "retry-after-ms",
        "x-ratelimit-limit-requests",
        "x-ratelimit-remaining-requests",
        "x-ratelimit-reset-requests",
        "x-ratelimit-limit-tokens",
        "x-ratelimit-remaining-tokens",
        "x-ratelimit-reset-tokens",
    ),
)


class CorsPolicy:
    def __init__(self, allowed_origins: Iterable[str], surface: Surface) -> None:
        self._origins = frozenset(allowed_origins)
        self._surface = surface
        self._methods = ", ".join(surface.methods)
        self._exposed = ", ".join(surface.exposed_headers)
        self._allowed = ", ".join(surface.allowed_headers) if surface.allowed_headers is not None else None

    @property
    def enabled(self) -> bool:
        return bool(self._origins)

    def allows(self, origin: str | None) -> bool:
        return origin is not None and origin in self._origins

    def preflight(self, origin: str | None, method: str, requested_headers: str | None) -> list[tuple[str, str]] | None:
        """Headers of the 204 answer to a preflight, or None when this is not one we answer."""
        if not method or not self.allows(origin) or method.upper() not in self._surface.methods:
            return None
        allowed = self._allowed if self._allowed is not None else (requested_headers or "")
        headers = [
            ("Access-Control-Allow-Origin", str(origin)),
            ("Access-Control-Allow-Methods", self._methods),
            ("Access-Control-Max-Age", _MAX_AGE),
            ("Vary", "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"),
        ]
        if allowed:
            headers.append(("Access-Control-Allow-Headers", allowed))
        return headers

    def response(self, origin: str | None) -> list[tuple[str, str]]:
        """Headers for an actual response to `origin` (or to no origin): only Vary when it is not allowed."""
        if not self.allows(origin):
            return [("Vary", "Origin")] if self.enabled else []
        return [
            ("Access-Control-Allow-Origin", str(origin)),
            ("Access-Control-Expose-Headers", self._exposed),
            ("Vary", "Origin"),
        ]


def gateway_origins(settings: Settings) -> tuple[str, ...]:
    """Origins the gateway answers: the configured ones, plus the web console's own when it is built (its chat and
    RAG uploads call the gateway, another origin, with a key held in the page's memory)."""
    if not is_built(settings):
        return settings.cors_allowed_origins
    return tuple(sorted({*settings.cors_allowed_origins, console_origin(settings)}))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return None


class CorsASGI:
    """The policy as ASGI middleware (management API)."""

    def __init__(self, app: ASGIApp, policy: CorsPolicy) -> None:
        self._app = app
        self._policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._policy.enabled:
            await self._app(scope, receive, send)
            return
        origin = _header(scope, b"origin")
        if scope["method"] == "OPTIONS" and self._policy.allows(origin):
            method = _header(scope, b"access-control-request-method") or ""
            answer = self._policy.preflight(origin, method, _header(scope, b"access-control-request-headers"))
            if answer is not None:
                headers = [(k.lower().encode(), v.encode()) for k, v in answer]
                await send({"type": "http.response.start", "status": 204, "headers": headers})
                await send({"type": "http.response.body", "body": b""})
                return
        extra = [(k.lower().encode(), v.encode()) for k, v in self._policy.response(origin)]

        async def with_cors(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self._app(scope, receive, with_cors)
