"""Talking to an MCP server and its OAuth authorization server before anyone is signed in to it.

- `probe`: what auth a server wants (an unauthenticated `initialize`: 200 means none; 401 with protected-resource or
  authorization-server metadata means OAuth; another 401/403 means a static bearer token), its own name when it
  says, and whether a client_id can be had by registration. A server that refuses the POST (400, 404, 405) is tried
  as the older HTTP+SSE transport (`sse_probe`), the same fallback the tool loop takes: a GET of its stream, read
  the same way (200 and an `endpoint` event: no auth; 401/403: as above).
- `authorization_server`: the discovery chain of the MCP authorization spec (RFC 9728 protected-resource metadata,
  then RFC 8414 / OpenID metadata, whose `issuer` must match exactly), with the mcp SDK's URL builders.
- `exchange`: one token request (authorization code + PKCE verifier, or refresh token) to a token endpoint resolved
  server-side, never taken from the request.

Every call goes through the `aiohttp.ClientSession` it is given, which must be the egress-guarded one: the guard
checks each connection's address. Redirects are not followed (metadata and token endpoints answer directly).
Failures become domain errors with friendly text; tokens and secrets are never logged.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import orjson
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
)

from server.domain.validation import require_http_url
from server.errors import FailedPrecondition, InvalidArgument, SwitchboardError, UpstreamFailed
from server.mcp import sse_probe

__all__ = ["AuthServer", "Probe", "TokenRequest", "TokenSet", "authorization_server", "exchange", "probe"]

log = logging.getLogger("switchboard.mcp.oauth")

AUTH_NONE, AUTH_BEARER, AUTH_OAUTH = 1, 2, 3  # platform.agents.v1.ExternalMcpAuthType
_TIMEOUT = aiohttp.ClientTimeout(total=15)
_MAX_BODY = 1024 * 1024
_RESOURCE_METADATA = re.compile(r'resource_metadata="([^"]+)"')
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "switchboard", "version": "1"},
    },
}


@dataclass(frozen=True)
class Probe:
    auth_type: int
    server_name: str = ""
    dynamic_client_registration_supported: bool = False


@dataclass(frozen=True)
class AuthServer:
    issuer: str
    token_endpoint: str
    registration_supported: bool
    resource: str = ""  # the protected resource's own identifier, when it published one
    resource_name: str = ""
    authorization_endpoint: str = ""  # where a person is sent to sign in (the browser's half of the code flow)


@dataclass(frozen=True)
class TokenRequest:
    """Everything one token request needs; `token_url` empty means discover it from the server's metadata."""

    server_url: str
    token_url: str
    issuer_url: str
    client_id: str
    client_secret: str = field(default="", repr=False)
    auth_method: str = "none"  # client_secret_post | client_secret_basic | none
    grant: dict[str, str] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class TokenSet:
    access_token: str = field(repr=False)
    token_type: str
    expires_in: int
    refresh_token: str = field(default="", repr=False)
    scope: str = ""


def _unreachable(url: str) -> UpstreamFailed:
    host = urlsplit(url).hostname or url
    return UpstreamFailed(f"The MCP server at {host} could not be reached. Please retry shortly.", retryable=True)


async def _get_json(http: aiohttp.ClientSession, url: str) -> dict[str, Any] | None:
    """A metadata document, or None when it is not there (any non-200 or non-JSON answer)."""
    try:
        async with http.get(url, allow_redirects=False, timeout=_TIMEOUT) as resp:
            if resp.status != 200:
                return None
            body = await resp.content.read(_MAX_BODY)
    except SwitchboardError:
        raise  # the egress guard refused the destination
    except (TimeoutError, aiohttp.ClientError, OSError):
        return None
    try:
        parsed = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _server_name(content_type: str, body: bytes) -> str:
    """serverInfo.name from an initialize result, sent as JSON or as one SSE event."""
    payload = body
    if "text/event-stream" in content_type:
        lines = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
        payload = lines[0] if lines else b""
    try:
        message = orjson.loads(payload)
    except orjson.JSONDecodeError:
        return ""
    info = message.get("result", {}).get("serverInfo", {}) if isinstance(message, dict) else {}
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else ""


async def authorization_server(
    http: aiohttp.ClientSession, server_url: str, *, issuer_url: str = "", resource_metadata_url: str | None = None
) -> AuthServer | None:
    """The authorization server protecting `server_url`, found through its protected-resource metadata (or, for
    servers that predate it, the server's own origin); `issuer_url` overrides the discovered issuer."""
    prm: dict[str, Any] | None = None
    for url in build_protected_resource_metadata_discovery_urls(resource_metadata_url, server_url):
        prm = await _get_json(http, url)
        if prm is not None and prm.get("authorization_servers"):
            break
        prm = None
    issuer = issuer_url or (str(prm["authorization_servers"][0]) if prm else None)
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
        meta = await _get_json(http, url)
        if meta is None or not meta.get("token_endpoint"):
            continue
        if issuer is not None and meta.get("issuer") != issuer:
            continue  # RFC 8414: metadata whose issuer differs from the one asked for must not be used
        registration = bool(meta.get("registration_endpoint")) or bool(
            meta.get("client_id_metadata_document_supported")
        )
        return AuthServer(
            issuer=str(meta.get("issuer", "")),
            token_endpoint=str(meta["token_endpoint"]),
            registration_supported=registration,
            resource=str(prm.get("resource", "")) if prm else "",
            resource_name=str(prm.get("resource_name", "")) if prm else "",
            authorization_endpoint=_browser_url(meta.get("authorization_endpoint")),
        )
    return None


def _browser_url(value: Any) -> str:
    """A discovered sign-in page, or "" unless it is an http(s) URL, as a registered one must be: the console navigates
    a window of its own origin there, and the metadata is whatever the MCP server's side chose to publish (a
    `javascript:` URL would run as the console, were its CSP not there to stop it)."""
    try:
        require_http_url(str(value or ""), "authorization_endpoint")
    except InvalidArgument:
        return ""
    return str(value)


async def probe(http: aiohttp.ClientSession, server_url: str) -> Probe:
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    try:
        async with http.post(
            server_url, data=orjson.dumps(_INITIALIZE), headers=headers, allow_redirects=False, timeout=_TIMEOUT
        ) as resp:
            status, content_type = resp.status, resp.headers.get("Content-Type", "")
            challenge = resp.headers.get("WWW-Authenticate", "")
            session_id = resp.headers.get("Mcp-Session-Id")
            body = await resp.content.read(_MAX_BODY) if status == 200 else b""
    except SwitchboardError:
        raise
    except (TimeoutError, aiohttp.ClientError, OSError):
        log.info("MCP probe of %s failed to connect", urlsplit(server_url).hostname)
        raise _unreachable(server_url) from None
    if status == 200:
        if session_id:  # we opened a legacy session just to look: close it
            try:
                async with http.delete(server_url, headers={"Mcp-Session-Id": session_id}, timeout=_TIMEOUT):
                    pass
            except (TimeoutError, aiohttp.ClientError, OSError):
                pass
        return Probe(AUTH_NONE, _server_name(content_type, body))
    if status in (401, 403):
        return await _challenged(http, server_url, challenge)
    if status in sse_probe.FALLBACK_STATUSES:
        found = await _probe_sse(http, server_url)
        if found is not None:
            return found
    raise FailedPrecondition(
        f"server_url did not answer like an MCP server (HTTP {status} to initialize)", field="server_url"
    )


async def _challenged(http: aiohttp.ClientSession, server_url: str, challenge: str) -> Probe:
    """A server asking for credentials: OAuth when its authorization server can be found, else a bearer token."""
    found = _RESOURCE_METADATA.search(challenge)
    server = await authorization_server(http, server_url, resource_metadata_url=found.group(1) if found else None)
    if server is not None:
        return Probe(AUTH_OAUTH, server.resource_name, server.registration_supported)
    return Probe(AUTH_BEARER)


async def _probe_sse(http: aiohttp.ClientSession, server_url: str) -> Probe | None:
    """The server as the HTTP+SSE transport, or None when it is not one either."""
    headers = {"Accept": "text/event-stream"}
    stream_timeout = aiohttp.ClientTimeout(total=None, connect=_TIMEOUT.total, sock_connect=_TIMEOUT.total)
    try:
        async with http.get(server_url, headers=headers, allow_redirects=False, timeout=stream_timeout) as resp:
            if resp.status in (401, 403):
                challenge = resp.headers.get("WWW-Authenticate", "")
            elif resp.status == 200:
                name = await sse_probe.server_name(http, resp, server_url, orjson.dumps(_INITIALIZE))
                return Probe(AUTH_NONE, name)
            else:
                return None
    except sse_probe.NotSse as exc:
        log.info("MCP probe of %s: no HTTP+SSE server either (%s)", urlsplit(server_url).hostname, exc)
        return None
    except SwitchboardError:
        raise
    except (TimeoutError, aiohttp.ClientError, OSError):
        log.info("MCP probe of %s: the HTTP+SSE stream failed", urlsplit(server_url).hostname)
        return None
    return await _challenged(http, server_url, challenge)


async def exchange(http: aiohttp.ClientSession, request: TokenRequest) -> TokenSet:
    token_url = request.token_url
    if not token_url:
        server = await authorization_server(http, request.server_url, issuer_url=request.issuer_url)
        if server is None:
            raise FailedPrecondition(
                "the MCP server publishes no OAuth token endpoint; register token_url with the server", field="name"
            )
        token_url = server.token_endpoint
    # client_id goes in the form whatever the method: it identifies, it does not authenticate (and some servers,
    # the mcp SDK's among them, require it even beside HTTP Basic).
    form = {**request.grant, "client_id": request.client_id}
    auth = None
    if request.auth_method == "client_secret_basic":
        auth = aiohttp.BasicAuth(request.client_id, request.client_secret)
    elif request.auth_method == "client_secret_post":
        form["client_secret"] = request.client_secret
    try:
        async with http.post(
            token_url,
            data=form,
            auth=auth,
            headers={"Accept": "application/json"},
            allow_redirects=False,
            timeout=_TIMEOUT,
        ) as resp:
            status = resp.status
            body = await resp.content.read(_MAX_BODY)
    except SwitchboardError:
        raise
    except (TimeoutError, aiohttp.ClientError, OSError):
        raise _unreachable(token_url) from None
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        raise UpstreamFailed("The authorization server returned an invalid token response.", retryable=status >= 500)
    if status != 200 or "access_token" not in answer:
        error = answer.get("error")
        code = error if isinstance(error, str) and re.fullmatch(r"[a-z_]{1,64}", error) else "error"
        if status >= 500:
            raise UpstreamFailed("The authorization server is unavailable. Please retry shortly.", retryable=True)
        # The OAuth error code is safe to relay (it names the problem); its description may not be.
        grant_field = "refresh_token" if "refresh_token" in request.grant else "code"
        raise InvalidArgument(f"the authorization server refused the grant ({code})", field=grant_field)
    expires = answer.get("expires_in")
    return TokenSet(
        access_token=str(answer["access_token"]),
        token_type=str(answer.get("token_type", "Bearer")),
        expires_in=int(expires) if isinstance(expires, int | float) else 0,
        refresh_token=str(answer.get("refresh_token", "")),
        scope=str(answer.get("scope", "")),
    )
