"""The external MCP server registry: registrations, their outbound credentials and their OAuth configuration.

Rules (spec: ExternalMcpServer and UpdateExternalMcpServer):
- `name` is immutable and is the model-visible tool prefix (`{name}{tool}`), so it uses the tool-name alphabet.
- Ownership scope is fixed by the create call (tenant or platform); sharing is changed only by update.
- Secrets are write-only: the bearer token (`api_key`), static header values and the OAuth client secret are sealed
  (server.crypto) and only `api_key_set`, `client_secret_set` and the header names reveal them.
- On update: an empty api_key keeps the stored token; static headers given replace them and `clear_static_headers`
  clears them; an omitted client secret keeps it and an empty one clears it; an omitted auth changes nothing.
- Secrets are bound to the URLs they are sent to (the bearer token and static headers: `server_url`; the client
  secret: the token endpoint, so `server_url`, `token_url` and `issuer_url`, which find it): an update that changes
  one of them while a stored secret bound to it would stay (not given again, cleared or dropped by an auth change) is
  refused naming that secret's field, so no stored secret is ever sent to an address its owner did not give it for.
- `server_url` is checked by the egress guard when stored (`EndpointCheck`, the rules of every MCP connection): a
  URL every connect would refuse is refused at registration.
Outbound connections (discovery, token exchange, tool calls) live elsewhere and go through the egress guard.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from enum import IntEnum
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.crypto import SecretBox
from server.domain import resource_pins
from server.domain.networks import EndpointCheck, Reach
from server.domain.principal import Principal
from server.domain.validation import (
    HEADER_VALUE_FORBIDDEN,
    MAX_DISPLAY_NAME,
    limit_text,
    require_header_secret,
    require_http_url,
    require_nonempty,
)
from server.errors import FailedPrecondition, InvalidArgument, NotFound
from server.mcp.oauth_client import TokenRequest
from server.permissions import Capability, ResourceKind, ResourceRef, Sharing
from server.store.keyset import Window
from server.store.models import ExternalMcpServerRow, utcnow

__all__ = [
    "Invocation",
    "McpAuth",
    "McpAuthType",
    "McpServer",
    "McpServerSpec",
    "OAuthConfig",
    "OAuthMetadata",
    "StaticHeader",
    "TokenGrant",
    "bearer_token",
    "create",
    "delete",
    "get",
    "invocation",
    "list_invokable",
    "oauth_metadata",
    "request_headers",
    "require_create",
    "token_request",
    "update",
]

KIND = ResourceKind.MCP_SERVER
PLATFORM_ROLE = "can_manage_tenants"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # RFC 9110 token
# Headers the transport or the protocol owns, or that the auth settings control.
_RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "connection",
        "content-length",
        "content-type",
        "host",
        "keep-alive",
        "mcp-protocol-version",
        "mcp-session-id",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
_MAX_HEADERS = 32
_MAX_HEADER_VALUE = 8192
# Parameters the OAuth authorization-code + PKCE flow itself sets; extra parameters may not override them.
# (What the MCP SDK puts on the authorization URL and the token request, plus the OIDC/RFC parameters that would
# let an extra parameter redirect or re-scope the flow.)
_OAUTH_PROTOCOL_PARAMETERS = frozenset(
    {
        "authorization_details",
        "client_assertion",
        "client_assertion_type",
        "client_id",
        "client_secret",
        "code",
        "code_challenge",
        "code_challenge_method",
        "code_verifier",
        "dpop_jkt",
        "grant_type",
        "iss",
        "nonce",
        "redirect_uri",
        "refresh_token",
        "request",
        "request_uri",
        "resource",
        "response_mode",
        "response_type",
        "scope",
        "state",
    }
)
_TOKEN_AUTH_METHODS = frozenset({"", "client_secret_post", "client_secret_basic", "none"})


class McpAuthType(IntEnum):
    """Numbers match platform.agents.v1.ExternalMcpAuthType."""

    UNSPECIFIED = 0
    NONE = 1
    BEARER = 2
    OAUTH_AUTHORIZATION_CODE = 3


@dataclass(frozen=True)
class OAuthConfig:
    """Non-user-specific OAuth settings; never tokens, never the client secret."""

    authorization_url: str = ""
    token_url: str = ""
    issuer_url: str = ""
    client_id: str = ""
    scopes: tuple[str, ...] = ()
    resource: str = ""
    authorization_parameters: dict[str, str] = field(default_factory=dict)
    token_endpoint_auth_method: str = ""


@dataclass(frozen=True)
class McpAuth:
    type: int
    oauth: OAuthConfig | None = None


@dataclass(frozen=True)
class StaticHeader:
    name: str
    value: str

    def __repr__(self) -> str:  # values are secrets
        return f"StaticHeader({self.name!r}, <hidden>)"


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    server_url: str = ""
    display_name: str = ""
    auth: McpAuth | None = None  # None: not given (update changes nothing)
    sharing: Sharing | None = None  # None: not given
    api_key: str = field(default="", repr=False)  # empty: none given (update keeps the stored one)
    static_headers: tuple[StaticHeader, ...] = ()
    clear_static_headers: bool = False
    oauth_client_secret: str | None = field(default=None, repr=False)  # None keeps; "" clears


@dataclass(frozen=True)
class McpServer:
    """As returned to clients: secrets only as flags."""

    name: str
    tenant_id: str | None
    server_url: str
    display_name: str
    auth_type: McpAuthType
    oauth: OAuthConfig | None
    api_key_set: bool
    client_secret_set: bool
    static_header_names: tuple[str, ...]
    sharing: Sharing
    created_at: datetime

    @property
    def user_auth_required(self) -> bool:
        return self.auth_type == McpAuthType.OAUTH_AUTHORIZATION_CODE


@dataclass(frozen=True)
class TokenGrant:
    """What an invoker's chat client brings to the token exchange: one authorization code (with its PKCE verifier and
    redirect URI) or one refresh token, and the metadata version its flow started from."""

    code: str = field(default="", repr=False)
    code_verifier: str = field(default="", repr=False)
    redirect_uri: str = ""
    refresh_token: str = field(default="", repr=False)
    metadata_version: str = ""


@dataclass(frozen=True)
class OAuthMetadata:
    oauth: OAuthConfig
    client_secret_set: bool
    redirect_uri: str
    metadata_version: str
    server_display_name: str
    server_url: str = ""  # where discovery starts when the endpoints were not registered


def _ref(name: str) -> ResourceRef:
    return ResourceRef(KIND, name)


def validate_name(value: str) -> str:
    require_nonempty(value, "external_mcp_server.name")
    if not _NAME.fullmatch(value):
        raise InvalidArgument(
            "external_mcp_server.name must be 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or"
            " digit (it prefixes the server's tool names)",
            field="external_mcp_server.name",
        )
    return value


def _oauth_config(value: OAuthConfig) -> OAuthConfig:
    prefix = "external_mcp_server.auth.oauth"
    manual = (value.authorization_url, value.token_url)
    if any(manual) and not all(manual):
        raise InvalidArgument(
            f"{prefix}.authorization_url and token_url are set together (manual endpoints) or both omitted"
            " (automatic discovery)",
            field=f"{prefix}.token_url" if value.authorization_url else f"{prefix}.authorization_url",
        )
    for name in ("authorization_url", "token_url", "issuer_url", "resource"):
        if getattr(value, name):
            require_http_url(getattr(value, name), f"{prefix}.{name}")
    for scope in value.scopes:
        if not scope or any(c.isspace() for c in scope):
            raise InvalidArgument(
                f"{prefix}.scopes entries must be non-empty and without spaces", field=f"{prefix}.scopes"
            )
    owned = sorted(k for k in value.authorization_parameters if k.strip().lower() in _OAUTH_PROTOCOL_PARAMETERS)
    if owned:
        raise InvalidArgument(
            f"{prefix}.authorization_parameters may not set OAuth protocol parameters: {', '.join(owned)}",
            field=f"{prefix}.authorization_parameters",
        )
    if value.token_endpoint_auth_method not in _TOKEN_AUTH_METHODS:
        raise InvalidArgument(
            f"{prefix}.token_endpoint_auth_method must be client_secret_post, client_secret_basic or none",
            field=f"{prefix}.token_endpoint_auth_method",
        )
    return value


def _auth(value: McpAuth) -> McpAuth:
    try:
        kind = McpAuthType(value.type)
    except ValueError:
        raise InvalidArgument("external_mcp_server.auth.type is not a known auth type", field="auth.type") from None
    if kind == McpAuthType.UNSPECIFIED:
        raise InvalidArgument(
            "external_mcp_server.auth.type must be set when auth is given (NONE, BEARER or OAUTH_AUTHORIZATION_CODE)",
            field="external_mcp_server.auth.type",
        )
    if kind == McpAuthType.OAUTH_AUTHORIZATION_CODE:
        if value.oauth is None:
            raise InvalidArgument(
                "external_mcp_server.auth.oauth is required for OAUTH_AUTHORIZATION_CODE",
                field="external_mcp_server.auth.oauth",
            )
        return McpAuth(kind, _oauth_config(value.oauth))
    if value.oauth is not None:
        raise InvalidArgument(
            "external_mcp_server.auth.oauth is only for OAUTH_AUTHORIZATION_CODE",
            field="external_mcp_server.auth.oauth",
        )
    return McpAuth(kind)


def _headers(values: tuple[StaticHeader, ...]) -> dict[str, str]:
    if len(values) > _MAX_HEADERS:
        raise InvalidArgument(f"static_headers may hold at most {_MAX_HEADERS} headers", field="static_headers")
    headers: dict[str, str] = {}
    for header in values:
        if not _TOKEN.fullmatch(header.name):
            raise InvalidArgument(
                "static_headers.name must be an HTTP header name (an RFC 9110 token)", field="static_headers.name"
            )
        if header.name.lower() in _RESERVED_HEADERS:
            raise InvalidArgument(
                f"static_headers.name {header.name!r} is set by the platform and cannot be configured",
                field="static_headers.name",
            )
        if any(existing.lower() == header.name.lower() for existing in headers):
            raise InvalidArgument(f"static_headers.name {header.name!r} is given twice", field="static_headers.name")
        if HEADER_VALUE_FORBIDDEN.search(header.value) or len(header.value) > _MAX_HEADER_VALUE:
            # The value itself is a secret: never echo it.
            raise InvalidArgument(
                f"static_headers.value of {header.name!r} must be at most {_MAX_HEADER_VALUE} characters without"
                " control characters other than tab",
                field="static_headers.value",
            )
        headers[header.name] = header.value
    return headers


def _oauth_json(value: OAuthConfig | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return {
        "authorization_url": value.authorization_url,
        "token_url": value.token_url,
        "issuer_url": value.issuer_url,
        "client_id": value.client_id,
        "scopes": list(value.scopes),
        "resource": value.resource,
        "authorization_parameters": dict(value.authorization_parameters),
        "token_endpoint_auth_method": value.token_endpoint_auth_method,
    }


def _oauth_of(stored: dict[str, Any] | None) -> OAuthConfig | None:
    if stored is None:
        return None
    return OAuthConfig(
        authorization_url=stored.get("authorization_url", ""),
        token_url=stored.get("token_url", ""),
        issuer_url=stored.get("issuer_url", ""),
        client_id=stored.get("client_id", ""),
        scopes=tuple(stored.get("scopes", ())),
        resource=stored.get("resource", ""),
        authorization_parameters=dict(stored.get("authorization_parameters", {})),
        token_endpoint_auth_method=stored.get("token_endpoint_auth_method", ""),
    )


def _build(row: ExternalMcpServerRow, owner: permissions.Ownership) -> McpServer:
    return McpServer(
        name=row.name,
        tenant_id=row.tenant_id,
        server_url=row.server_url,
        display_name=row.display_name,
        auth_type=McpAuthType(row.auth_type),
        oauth=_oauth_of(row.oauth),
        api_key_set=row.api_key_encrypted is not None,
        client_secret_set=row.client_secret_encrypted is not None,
        static_header_names=tuple(row.static_header_names or ()),
        sharing=owner.sharing,
        created_at=row.created_at,
    )


def _apply_auth(row: ExternalMcpServerRow, auth: McpAuth) -> None:
    row.auth_type = int(auth.type)
    row.oauth = _oauth_json(auth.oauth)
    # Credentials of another auth type would only linger unused (and keep reporting "set"): drop them.
    if auth.type != McpAuthType.BEARER:
        row.api_key_encrypted = None
    if auth.type != McpAuthType.OAUTH_AUTHORIZATION_CODE:
        row.client_secret_encrypted = None


def _apply_secrets(row: ExternalMcpServerRow, spec: McpServerSpec, box: SecretBox) -> None:
    if spec.static_headers and spec.clear_static_headers:
        raise InvalidArgument("give static_headers or clear_static_headers, not both", field="clear_static_headers")
    if spec.static_headers:
        headers = _headers(spec.static_headers)
        row.static_header_names = sorted(headers, key=str.lower)
        row.static_headers_encrypted = box.seal(json.dumps(headers))
    elif spec.clear_static_headers:
        row.static_header_names, row.static_headers_encrypted = [], None
    kind = McpAuthType(row.auth_type)
    if spec.api_key:
        if kind != McpAuthType.BEARER:
            raise InvalidArgument("api_key is the bearer token of auth type BEARER", field="api_key")
        row.api_key_encrypted = box.seal(bearer_token(spec.api_key, "api_key"))
    if kind == McpAuthType.BEARER and row.api_key_encrypted is None:
        raise InvalidArgument("api_key is required for auth type BEARER", field="api_key")
    if spec.oauth_client_secret is not None:
        if spec.oauth_client_secret and kind != McpAuthType.OAUTH_AUTHORIZATION_CODE:
            raise InvalidArgument(
                "oauth_client_secret is only for auth type OAUTH_AUTHORIZATION_CODE", field="oauth_client_secret"
            )
        row.client_secret_encrypted = box.seal(spec.oauth_client_secret) if spec.oauth_client_secret else None
    oauth = _oauth_of(row.oauth)
    secret_methods = ("client_secret_post", "client_secret_basic")
    if oauth is not None and oauth.token_endpoint_auth_method in secret_methods and row.client_secret_encrypted is None:
        raise InvalidArgument(
            f"oauth_client_secret is required for token_endpoint_auth_method {oauth.token_endpoint_auth_method}",
            field="oauth_client_secret",
        )


def _display_name(value: str) -> str:
    return limit_text(value, "external_mcp_server.display_name", MAX_DISPLAY_NAME)


async def require_create(session: AsyncSession, principal: Principal, tenant_id: str | None) -> str | None:
    """The gate of creating (and of probing, its first step): a platform server needs can_manage_tenants, from
    platform scope (spec Auth 9); a tenant's needs the create-MCP-server capability there. Returns the tenant acted
    on."""
    if tenant_id is None:
        permissions.require_platform_scope(principal, PLATFORM_ROLE)
        return None
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_capability(session, principal, tenant_id, Capability.CREATE_MCP_SERVER)
    return tenant_id


_SERVER_URL = "external_mcp_server.server_url"
_TOKEN_URL = "external_mcp_server.auth.oauth.token_url"  # noqa: S105 (a field name, not a secret)
_ISSUER_URL = "external_mcp_server.auth.oauth.issuer_url"
# The URLs that decide where each stored secret is sent: the bearer token and static headers go to the server; the
# client secret to the token endpoint, the registered one or the one discovered from the issuer or the server.
_SECRET_DESTINATIONS = {
    "api_key": (_SERVER_URL,),
    "static_headers": (_SERVER_URL,),
    "oauth_client_secret": (_SERVER_URL, _TOKEN_URL, _ISSUER_URL),
}


def _destinations(row: ExternalMcpServerRow) -> dict[str, str]:
    oauth = _oauth_of(row.oauth) or OAuthConfig()
    return {_SERVER_URL: row.server_url, _TOKEN_URL: oauth.token_url, _ISSUER_URL: oauth.issuer_url}


def _require_secrets_given_again(row: ExternalMcpServerRow, spec: McpServerSpec, before: dict[str, str]) -> None:
    """Every stored secret that would stay while a URL it is sent to changed (from `before`) must be given again or
    cleared: whoever may edit the registration need not be whoever gave the secret."""
    after = _destinations(row)
    moved = [url for url in after if after[url] != before[url]]
    stays = {
        "api_key": row.api_key_encrypted is not None and not spec.api_key,
        "static_headers": row.static_headers_encrypted is not None
        and not (spec.static_headers or spec.clear_static_headers),
        "oauth_client_secret": row.client_secret_encrypted is not None and spec.oauth_client_secret is None,
    }
    for name, urls in _SECRET_DESTINATIONS.items():
        changed = next((url for url in moved if url in urls), None)
        if stays[name] and changed is not None:
            raise InvalidArgument(
                f"{name} must be given again (or cleared) when {changed} changes: stored secrets are only ever sent "
                "to the URL they were given for",
                field=name,
            )


async def create(
    session: AsyncSession,
    principal: Principal,
    spec: McpServerSpec,
    box: SecretBox,
    *,
    tenant_id: str | None,
    check: EndpointCheck,
) -> McpServer:
    tenant_id = await require_create(session, principal, tenant_id)
    name = validate_name(spec.name)
    url = require_http_url(spec.server_url, _SERVER_URL)
    await check(url, field=_SERVER_URL, reach=Reach.TENANT)
    auth = _auth(spec.auth) if spec.auth is not None else McpAuth(McpAuthType.NONE)
    display_name = _display_name(spec.display_name) or name
    row = ExternalMcpServerRow(name=name, tenant_id=tenant_id, server_url=url, display_name=display_name)
    _apply_auth(row, auth)
    _apply_secrets(row, spec, box)
    # Creating is not changing: the registration starts with the sharing it was created with.
    await permissions.create_resource(
        session, principal, _ref(name), tenant_id=tenant_id, sharing=spec.sharing or Sharing()
    )
    session.add(row)
    await session.flush()
    return _build(row, await permissions.ownership(session, _ref(name), principal))


async def _row(session: AsyncSession, name: str) -> ExternalMcpServerRow:
    row = await session.get(ExternalMcpServerRow, name)
    if row is None:  # the access record exists but not the server: a half-deleted state cannot be committed
        raise NotFound(f"external MCP server {name!r} not found", field="name")
    return row


async def get(session: AsyncSession, principal: Principal, name: str) -> McpServer:
    owner = await permissions.require_admin(session, principal, _ref(name))
    return _build(await _row(session, name), owner)


async def update(
    session: AsyncSession, principal: Principal, spec: McpServerSpec, box: SecretBox, *, check: EndpointCheck
) -> McpServer:
    """See the update rules in the module docstring. Name and ownership scope never change."""
    require_nonempty(spec.name, "external_mcp_server.name")
    await permissions.require_admin(session, principal, _ref(spec.name))
    row = await _row(session, spec.name)
    before = _destinations(row)
    if spec.server_url:
        url = require_http_url(spec.server_url, _SERVER_URL)
        await check(url, field=_SERVER_URL, reach=Reach.TENANT)
        row.server_url = url
    if spec.display_name:
        row.display_name = _display_name(spec.display_name)
    if spec.auth is not None:
        _apply_auth(row, _auth(spec.auth))
    _require_secrets_given_again(row, spec, before)
    _apply_secrets(row, spec, box)
    row.updated_at = utcnow()
    if spec.sharing is not None:
        await permissions.set_sharing(session, principal, _ref(spec.name), spec.sharing)
    await session.flush()
    return _build(row, await permissions.ownership(session, _ref(spec.name), principal))


async def delete(session: AsyncSession, principal: Principal, name: str) -> None:
    await permissions.require_admin(session, principal, _ref(name))
    await session.delete(await _row(session, name))
    await permissions.delete_resource(session, _ref(name))


async def list_invokable(session: AsyncSession, principal: Principal, window: Window | None = None) -> list[McpServer]:
    """Every server the caller can invoke in its tenant: that tenant's and the platform's, by name (a window: one
    keyset page of them). Without a tenant the request is refused (an empty list would read as "none exist")."""
    tenant_id = permissions.require_tenant_scope(principal, "listing external MCP servers")
    names = await permissions.readable_names(session, principal, KIND)
    if not names:
        return []
    query = (
        select(ExternalMcpServerRow)
        .where(
            ExternalMcpServerRow.name.in_(names),
            or_(ExternalMcpServerRow.tenant_id.is_(None), ExternalMcpServerRow.tenant_id == tenant_id),
        )
        .order_by(ExternalMcpServerRow.name)
    )
    if window is not None:
        query = window.apply(
            query, ExternalMcpServerRow.name, searched=(ExternalMcpServerRow.name, ExternalMcpServerRow.display_name)
        )
    rows = (await session.scalars(query)).all()
    owners = await permissions.ownerships(session, KIND, [r.name for r in rows], principal)
    return [_build(row, owners[row.name]) for row in rows]


def _metadata_version(row: ExternalMcpServerRow, oauth: OAuthConfig, secret_set: bool) -> str:
    """Changes whenever what an invoker's OAuth flow depends on changes, so stale clients can notice."""
    basis = json.dumps([row.server_url, _oauth_json(oauth), secret_set], sort_keys=True)
    return hashlib.sha256(basis.encode()).hexdigest()[:16]


async def oauth_metadata(session: AsyncSession, principal: Principal, name: str, redirect_uri: str) -> OAuthMetadata:
    """Non-secret bootstrap data for invokers: can_read is enough, so a chat client can start the user's flow."""
    await permissions.require_read(session, principal, _ref(name))
    row = await _row(session, name)
    oauth = _oauth_of(row.oauth)
    if row.auth_type != McpAuthType.OAUTH_AUTHORIZATION_CODE or oauth is None:
        raise FailedPrecondition(f"external MCP server {name!r} does not use OAuth", field="name")
    secret_set = row.client_secret_encrypted is not None
    return OAuthMetadata(
        oauth=oauth,
        client_secret_set=secret_set,
        redirect_uri=redirect_uri,
        metadata_version=_metadata_version(row, oauth, secret_set),
        server_display_name=row.display_name or row.name,
        server_url=row.server_url,
    )


def _canonical_resource(url: str) -> str:
    """RFC 8707 resource value for an MCP server: lowercase scheme and host, no fragment, no trailing slash."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), parts.query, ""))


def _grant_form(grant: TokenGrant, redirect_uri: str) -> dict[str, str]:
    code_grant = bool(grant.code or grant.code_verifier)
    if code_grant == bool(grant.refresh_token):
        raise InvalidArgument(
            "give exactly one grant: code with code_verifier and redirect_uri, or refresh_token", field="code"
        )
    if not code_grant:
        return {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
    require_nonempty(grant.code, "code")
    require_nonempty(grant.code_verifier, "code_verifier")
    if grant.redirect_uri != redirect_uri:
        raise InvalidArgument(
            "redirect_uri must be the platform's registered redirect URI (see GetExternalMcpServerOAuthMetadata)",
            field="redirect_uri",
        )
    return {
        "grant_type": "authorization_code",
        "code": grant.code,
        "code_verifier": grant.code_verifier,
        "redirect_uri": grant.redirect_uri,
    }


async def token_request(
    session: AsyncSession, principal: Principal, name: str, grant: TokenGrant, *, box: SecretBox, redirect_uri: str
) -> TokenRequest:
    """The token request to send for an invoker (can_read). The token endpoint comes from the registered config or
    discovery, never from the request; the client secret is read here and goes only to that endpoint."""
    metadata = await oauth_metadata(session, principal, name, redirect_uri)
    if grant.metadata_version and grant.metadata_version != metadata.metadata_version:
        raise FailedPrecondition(
            "metadata_version is stale: the server's OAuth settings changed; fetch the metadata and sign in again",
            field="metadata_version",
        )
    form = _grant_form(grant, redirect_uri)
    row = await _row(session, name)
    oauth = metadata.oauth
    if not oauth.client_id:
        raise FailedPrecondition(
            f"external MCP server {name!r} has no OAuth client_id registered", field="auth.oauth.client_id"
        )
    secret = box.open(row.client_secret_encrypted) if row.client_secret_encrypted else ""
    method = oauth.token_endpoint_auth_method or ("client_secret_post" if secret else "none")
    form["resource"] = oauth.resource or _canonical_resource(row.server_url)
    if oauth.scopes and form["grant_type"] == "refresh_token":
        form["scope"] = " ".join(oauth.scopes)
    return TokenRequest(
        server_url=row.server_url,
        token_url=oauth.token_url,
        issuer_url=oauth.issuer_url,
        client_id=oauth.client_id,
        client_secret=secret,
        auth_method=method,
        grant=form,
    )


@dataclass(frozen=True)
class Invocation:
    """What calling a registered server's tools needs: its URL and the headers the platform attaches (static headers
    and the stored bearer token, decrypted for the outbound call only)."""

    name: str
    server_url: str
    user_auth_required: bool
    headers: dict[str, str] = field(repr=False)


def bearer_token(value: str, field: str) -> str:
    """A token sent as `Authorization: Bearer <token>`: what a header value may hold (a line break in one failed
    every tool call as an unreachable server, not the request that gave it)."""
    return require_header_secret(value, field)


def request_headers(values: Any, field: str) -> dict[str, str]:
    """Headers a caller asks to send to an MCP server: names and values checked like static headers; credentials and
    protocol headers stay the platform's."""
    if values is None:
        return {}
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise InvalidArgument(f"{field} must be an object of header names to string values", field=field)
    if len(values) > _MAX_HEADERS:
        raise InvalidArgument(f"{field} may hold at most {_MAX_HEADERS} headers", field=field)
    for name, value in values.items():
        if not _TOKEN.fullmatch(name) or name.lower() in _RESERVED_HEADERS:
            raise InvalidArgument(f"{field} may not set the header {name!r}", field=field)
        if HEADER_VALUE_FORBIDDEN.search(value) or len(value) > _MAX_HEADER_VALUE:
            raise InvalidArgument(f"{field} value of {name!r} is not a valid header value", field=field)
    return dict(values)


async def invocation(
    session: AsyncSession,
    principal: Principal,
    name: str,
    box: SecretBox,
    *,
    field: str,
    delegated: resource_pins.Pins | None = None,
) -> Invocation:
    """The server `name` for a caller who wants to use its tools: it must be registered in the caller's tenant (or
    platform-wide) and invokable by the caller (the key's grants, sharing). Anything else reads as "unknown", so
    names cannot be probed. `delegated`: a preset agent's default server, used on the agent's authority (its saver
    was checked when the agent was saved; the caller's right to invoke the agent is the surface's check), given the
    agent's pins: only the server it was saved with, not one created later under its name."""
    tenant_id = principal.api_key.tenant_id if principal.api_key else principal.scoped_tenant_id
    row = await session.get(ExternalMcpServerRow, name)
    if row is None or (
        not await resource_pins.still_pinned(session, _ref(name), delegated)
        if delegated is not None
        else (
            (row.tenant_id is not None and row.tenant_id != tenant_id)
            or not await permissions.can_invoke(session, principal, _ref(name))
        )
    ):
        raise InvalidArgument(f"{field}: no registered MCP server named {name!r} that you can use", field=field)
    headers: dict[str, str] = {}
    if row.static_headers_encrypted:
        headers.update(json.loads(box.open(row.static_headers_encrypted)))
    if row.auth_type == McpAuthType.BEARER and row.api_key_encrypted:
        headers["Authorization"] = f"Bearer {box.open(row.api_key_encrypted)}"
    return Invocation(
        name=row.name,
        server_url=row.server_url,
        user_auth_required=row.auth_type == McpAuthType.OAUTH_AUTHORIZATION_CODE,
        headers=headers,
    )
