"""platform.agents.v1 messages <-> the MCP registry's domain values, nothing else."""

from __future__ import annotations

from collections.abc import Iterable

from gen.platform.agents.v1 import external_mcp_server_pb2 as pb
from server.domain.mcp_servers import McpAuth, McpServer, McpServerSpec, OAuthConfig, StaticHeader
from server.mcp.oauth_client import Probe
from server.services.modelmanager.convert import sharing, sharing_in
from server.services.tenants.convert import enum

__all__ = ["discovery", "oauth", "server", "spec", "summary"]


def discovery(value: Probe) -> pb.ExternalMcpServerDiscovery:
    return pb.ExternalMcpServerDiscovery(
        auth_type=enum(pb.ExternalMcpAuthType, value.auth_type),
        server_name=value.server_name,
        dynamic_client_registration_supported=value.dynamic_client_registration_supported,
    )


def oauth(value: OAuthConfig, *, client_secret_set: bool) -> pb.ExternalMcpOAuthConfig:
    return pb.ExternalMcpOAuthConfig(
        authorization_url=value.authorization_url,
        token_url=value.token_url,
        issuer_url=value.issuer_url,
        client_id=value.client_id,
        scopes=list(value.scopes),
        resource=value.resource,
        authorization_parameters=dict(value.authorization_parameters),
        token_endpoint_auth_method=value.token_endpoint_auth_method,
        client_secret_set=client_secret_set,
    )


def _oauth_in(value: pb.ExternalMcpOAuthConfig) -> OAuthConfig:
    return OAuthConfig(
        authorization_url=value.authorization_url,
        token_url=value.token_url,
        issuer_url=value.issuer_url,
        client_id=value.client_id,
        scopes=tuple(value.scopes),
        resource=value.resource,
        authorization_parameters=dict(value.authorization_parameters),
        token_endpoint_auth_method=value.token_endpoint_auth_method,
    )


def server(value: McpServer) -> pb.ExternalMcpServer:
    auth = pb.ExternalMcpServerAuth(
        type=enum(pb.ExternalMcpAuthType, value.auth_type),
        oauth=oauth(value.oauth, client_secret_set=value.client_secret_set) if value.oauth is not None else None,
        api_key_set=value.api_key_set,
    )
    return pb.ExternalMcpServer(
        name=value.name,
        server_url=value.server_url,
        sharing=sharing(value.sharing),
        display_name=value.display_name,
        auth=auth,
        static_header_names=list(value.static_header_names),
    )


def summary(value: McpServer) -> pb.ExternalMcpServerSummary:
    return pb.ExternalMcpServerSummary(
        name=value.name,
        display_name=value.display_name,
        share_to_all=value.sharing.share_to_all,
        tenant_id=value.tenant_id or "",
        auth_type=enum(pb.ExternalMcpAuthType, value.auth_type),
        user_auth_required=value.user_auth_required,
    )


def spec(
    value: pb.ExternalMcpServer | None,
    *,
    api_key: str,
    static_headers: Iterable[pb.ExternalMcpStaticHeaderValue],
    oauth_client_secret: str | None,
    clear_static_headers: bool = False,
) -> McpServerSpec:
    message = value if value is not None else pb.ExternalMcpServer()
    auth = None
    if message.HasField("auth"):
        given = message.auth
        auth = McpAuth(int(given.type), _oauth_in(given.oauth) if given.HasField("oauth") else None)
    return McpServerSpec(
        name=message.name,
        server_url=message.server_url,
        display_name=message.display_name,
        auth=auth,
        sharing=sharing_in(message.sharing) if message.HasField("sharing") else None,
        api_key=api_key,
        static_headers=tuple(StaticHeader(h.name, h.value) for h in static_headers),
        clear_static_headers=clear_static_headers,
        oauth_client_secret=oauth_client_secret,
    )
