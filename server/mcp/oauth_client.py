"""Talking to an MCP server and its OAuth authorization server before anyone is signed in to it.

- `probe`: what auth a server wants (an unauthenticated `initialize`: 200 means none; 401 with protected-resource or
  authorization-server metadata means OAuth; another 401/403 means a static bearer token), its own name when it
  says, and whether a client_id can be had by registration. A server that refuses the POST (400, 404, 405) is tried
  as the older HTTP+SSE transport (`sse_probe`), the same fallback the tool loop takes: a GET of its stream, read
  the same way (200 and an `endpoint` event: no auth; 401/403: as above).
- `authorization_server`: the discovery chain of the MCP authorization spec (RFC 9728 protected-resource metadata,
  then RFC 8414 / OpenID metadata), with the mcp SDK's URL builders. The metadata's `issuer` must be the issuer its
  URL was built from (RFC 8414 section 3.3): exactly the protected resource's authorization server or the registered
  issuer, or, for a server found by its origin (no protected-resource metadata), that origin (with or without the
  root's trailing slash). Anything else is another server's metadata and is not used: its issuer is what the
  RFC 9207 check of the authorization response (the console's, api/mcpOAuth.ts) compares `iss` with.
- `exchange`: one token request (authorization code + PKCE verifier, or refresh token) to a token endpoint resolved
  server-side, never taken from the request. A token endpoint must be an http(s) URL with no credentials or fragment
  in it, and https when its issuer is (the client secret and the code never travel in clear text to an https
  authorization server's token endpoint).

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
    issuers_match,
)

from server.client_auth import client_secret_basic
from server.domain.json_values import is_number
from server.domain.validation import require_http_url
from server.errors import FailedPrecondition, InvalidArgument, SwitchboardError, UpstreamFailed
from server.mcp import sse_probe

__all__ = [
    "AuthServer",
    "Probe",
    "TokenRequest",
    "TokenSet",
    "authorization_server",
    "endpoint_problem",
    "exchange",
    "probe",
    "require_endpoint",
]

log = logging.getLogger("switchboard.mcp.oauth")

AUTH_NONE, AUTH_BEARER, AUTH_OAUTH = 1, 2, 3  # platform.agents.v1.ExternalMcpAuthType
_TIMEOUT = aiohttp.ClientTimeout(total=15)
_MAX_BODY = 1024 * 1024
_MAX_LIFETIME = 2**63  # expires_in is an int64 in the API's answer
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


def _host(url: str) -> str:
    """The host of `url` for messages and logs; never the URL itself (its path or query may carry a secret)."""
    try:
        return urlsplit(url).hostname or "(no host)"
    except ValueError:
        return "(no host)"


def _unreachable(url: str) -> UpstreamFailed:
    return UpstreamFailed(f"The MCP server at {_host(url)} could not be reached. Please retry shortly.", retryable=True)


def endpoint_problem(url: str, issuer: str = "") -> str | None:
    """What is wrong with `url` as a token endpoint (of `issuer`, when known), or None: it must be an absolute http(s)
    URL with a host, no user:password and no fragment (RFC 6749 section 3.2), and https when the issuer is."""
    try:
        parts = urlsplit(url)
        port_ok = (parts.port or 0) >= 0
    except ValueError:
        return "is not a valid URL"
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        return "is not an http(s) URL"
    if parts.username is not None or parts.password is not None:
        return "carries credentials in the URL"
    if parts.fragment or url.endswith("#"):
        return "has a fragment"
    if parts.scheme != "https" and issuer.lower().startswith("https:"):
        return "is plain http while its authorization server's issuer is https"
    return None


def require_endpoint(url: str, issuer: str) -> str:
    """`url` when it may be used as `issuer`'s token endpoint, else a refusal naming its host and the problem."""
    problem = endpoint_problem(url, issuer)
    if problem is not None:
        raise FailedPrecondition(
            f"the OAuth token endpoint of the MCP server's authorization server ({_host(url)}) {problem}; "
            "nothing was sent to it",
            field="token_url",
        )
    return url


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
    listed: str | None = None
    for url in build_protected_resource_metadata_discovery_urls(resource_metadata_url, server_url):
        prm = await _get_json(http, url)
        listed = _first_authorization_server(prm)
        if listed is not None:
            break
        prm = None
    issuer = issuer_url or listed
    for url in build_oauth_authorization_server_metadata_discovery_urls(issuer, server_url):
        meta = await _get_json(http, url)
        if meta is None or not isinstance(meta.get("token_endpoint"), str) or not meta["token_endpoint"]:
            continue
        if not _issuer_matches(meta.get("issuer"), issuer, server_url):
            # RFC 8414 section 3.3: metadata naming another issuer than the one its URL was built from must not be
            # used (it would let one server pass for another in the RFC 9207 check of `iss`).
            log.info("OAuth metadata at %s names another issuer: not used", _host(url))
            continue
        registration = bool(meta.get("registration_endpoint")) or bool(
            meta.get("client_id_metadata_document_supported")
        )
        found_issuer = str(meta["issuer"])
        return AuthServer(
            issuer=found_issuer,
            token_endpoint=require_endpoint(meta["token_endpoint"], found_issuer),
            registration_supported=registration,
            resource=str(prm.get("resource", "")) if prm else "",
            resource_name=str(prm.get("resource_name", "")) if prm else "",
            authorization_endpoint=_browser_url(meta.get("authorization_endpoint")),
        )
    return None


def _first_authorization_server(prm: dict[str, Any] | None) -> str | None:
    """The first authorization server a protected resource's metadata lists, when it lists one as an http(s) URL."""
    servers = prm.get("authorization_servers") if prm is not None else None
    if not isinstance(servers, list) or not servers or not isinstance(servers[0], str):
        return None
    return servers[0] if endpoint_problem(servers[0]) is None else None


def _issuer_matches(found: Any, issuer: str | None, server_url: str) -> bool:
    """Whether metadata naming `found` as its issuer may be used: exactly the issuer asked for, or, when none was
    known (a server without protected-resource metadata, found by its origin), that origin."""
    if not isinstance(found, str) or not found:
        return False
    if issuer is not None:
        return found == issuer
    parts = urlsplit(server_url)
    origin = f"{parts.scheme.lower()}://{parts.netloc.lower()}"
    return issuers_match(found, origin)


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
    require_endpoint(token_url, request.issuer_url)
    # client_id goes in the form whatever the method: it identifies, it does not authenticate (and some servers,
    # the mcp SDK's among them, require it even beside HTTP Basic).
    form = {**request.grant, "client_id": request.client_id}
    auth = None
    if request.auth_method == "client_secret_basic":
        auth = client_secret_basic(request.client_id, request.client_secret)
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
    return _token_set(answer)


def _token_set(answer: dict[str, Any]) -> TokenSet:
    """A 200 token answer read defensively: the tokens must be strings; a lifetime that is no positive number that
    fits the response (int64) is taken as not given."""
    access, refresh = answer.get("access_token"), answer.get("refresh_token", "")
    token_type, scope = answer.get("token_type", "Bearer"), answer.get("scope", "")
    if not all(isinstance(v, str) for v in (access, refresh, token_type, scope)) or not access:
        raise UpstreamFailed("The authorization server returned an invalid token response.", retryable=False)
    expires = answer.get("expires_in")
    lifetime = expires if is_number(expires) else 0
    return TokenSet(
        access_token=str(access),
        token_type=str(token_type),
        expires_in=int(lifetime) if 0 < lifetime < _MAX_LIFETIME else 0,
        refresh_token=str(refresh),
        scope=str(scope),
    )
