"""/platform.agents.v1.ExternalMcpServerService/* — rules in server.domain.mcp_servers; discovery and the token
exchange talk to the MCP server through server.mcp.oauth_client over the egress-guarded HTTP session."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from connectrpc.request import RequestContext

from gen.platform.agents.v1 import external_mcp_server_pb2
from gen.platform.agents.v1 import external_mcp_server_service_pb2 as pb
from gen.platform.agents.v1.external_mcp_server_service_connect import ExternalMcpServerService
from server.domain import mcp_servers
from server.domain.validation import require_http_url, require_nonempty
from server.mcp import oauth_client
from server.permissions import ResourceKind
from server.services import Deps, resource_calls
from server.services.agents import convert
from server.services.context import current_principal

__all__ = ["ExternalMcpServerServiceHandler"]

Ctx = RequestContext[Any, Any]
KIND = ResourceKind.MCP_SERVER


def _create_spec(
    request: pb.CreateExternalMcpServerRequest | pb.CreatePlatformExternalMcpServerRequest,
) -> mcp_servers.McpServerSpec:
    return convert.spec(
        request.external_mcp_server,
        api_key=request.api_key,
        static_headers=request.static_headers,
        oauth_client_secret=request.oauth_client_secret,
    )


class ExternalMcpServerServiceHandler(ExternalMcpServerService):
    def __init__(self, deps: Deps) -> None:
        self._deps = deps
        self._db = deps.db
        self._box = deps.secret_box()
        self._check = deps.egress_guard().check_endpoint
        self._redirect_uri = deps.settings.mcp_oauth_redirect_uri

    async def _discover(
        self, server_url: str, tenant_id: str | None
    ) -> external_mcp_server_pb2.ExternalMcpServerDiscovery:
        async with self._db.read() as s:
            await mcp_servers.require_create(s, current_principal(), tenant_id)
        url = require_http_url(server_url, "server_url")
        found = await oauth_client.probe(self._deps.outbound_http(), url)
        return convert.discovery(found)

    async def discover_external_mcp_server(
        self, request: pb.DiscoverExternalMcpServerRequest, ctx: Ctx
    ) -> pb.DiscoverExternalMcpServerResponse:
        tenant_id = require_nonempty(request.tenant_id, "tenant_id")
        return pb.DiscoverExternalMcpServerResponse(discovery=await self._discover(request.server_url, tenant_id))

    async def discover_platform_external_mcp_server(
        self, request: pb.DiscoverPlatformExternalMcpServerRequest, ctx: Ctx
    ) -> pb.DiscoverPlatformExternalMcpServerResponse:
        return pb.DiscoverPlatformExternalMcpServerResponse(discovery=await self._discover(request.server_url, None))

    async def exchange_external_mcp_o_auth_token(
        self, request: pb.ExchangeExternalMcpOAuthTokenRequest, ctx: Ctx
    ) -> pb.ExchangeExternalMcpOAuthTokenResponse:
        grant = mcp_servers.TokenGrant(
            code=request.code,
            code_verifier=request.code_verifier,
            redirect_uri=request.redirect_uri,
            refresh_token=request.refresh_token,
            metadata_version=request.metadata_version,
        )
        name = require_nonempty(request.name, "name")
        async with self._db.read() as s:  # read, then talk to the token endpoint with no transaction open
            token_request = await mcp_servers.token_request(
                s, current_principal(), name, grant, box=self._box, redirect_uri=self._redirect_uri
            )
        tokens = await oauth_client.exchange(self._deps.outbound_http(), token_request)
        return pb.ExchangeExternalMcpOAuthTokenResponse(
            access_token=tokens.access_token,
            token_type=tokens.token_type,
            expires_in=tokens.expires_in,
            refresh_token=tokens.refresh_token,
            scope=tokens.scope,
        )

    async def create_external_mcp_server(
        self, request: pb.CreateExternalMcpServerRequest, ctx: Ctx
    ) -> pb.CreateExternalMcpServerResponse:
        tenant_id = require_nonempty(request.tenant_id, "tenant_id")
        async with self._db.transaction() as s:
            created = await mcp_servers.create(
                s, current_principal(), _create_spec(request), self._box, tenant_id=tenant_id, check=self._check
            )
        return pb.CreateExternalMcpServerResponse(external_mcp_server=convert.server(created))

    async def create_platform_external_mcp_server(
        self, request: pb.CreatePlatformExternalMcpServerRequest, ctx: Ctx
    ) -> pb.CreatePlatformExternalMcpServerResponse:
        async with self._db.transaction() as s:
            created = await mcp_servers.create(
                s, current_principal(), _create_spec(request), self._box, tenant_id=None, check=self._check
            )
        return pb.CreatePlatformExternalMcpServerResponse(external_mcp_server=convert.server(created))

    async def get_external_mcp_server(
        self, request: pb.GetExternalMcpServerRequest, ctx: Ctx
    ) -> pb.GetExternalMcpServerResponse:
        async with self._db.read() as s:
            found = await mcp_servers.get(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.GetExternalMcpServerResponse(external_mcp_server=convert.server(found))

    async def get_external_mcp_server_o_auth_metadata(
        self, request: pb.GetExternalMcpServerOAuthMetadataRequest, ctx: Ctx
    ) -> pb.GetExternalMcpServerOAuthMetadataResponse:
        async with self._db.read() as s:
            found = await mcp_servers.oauth_metadata(
                s, current_principal(), require_nonempty(request.name, "name"), self._redirect_uri
            )
        oauth = found.oauth
        if not oauth.authorization_url:
            # Registered without endpoints: resolve the sign-in page here, through the egress guard, as the token
            # exchange resolves its endpoint. A browser client (the console) cannot follow the discovery chain
            # itself: its CSP allows no third-party fetches, and metadata servers need not allow CORS.
            server = await oauth_client.authorization_server(
                self._deps.outbound_http(), found.server_url, issuer_url=oauth.issuer_url
            )
            if server is not None and server.authorization_endpoint:
                # The issuer too: the console checks the authorization response's `iss` against it (RFC 9207).
                issuer = oauth.issuer_url or server.issuer
                oauth = replace(oauth, authorization_url=server.authorization_endpoint, issuer_url=issuer)
        return pb.GetExternalMcpServerOAuthMetadataResponse(
            oauth=convert.oauth(oauth, client_secret_set=found.client_secret_set),
            redirect_uri=found.redirect_uri,
            metadata_version=found.metadata_version,
            server_display_name=found.server_display_name,
        )

    async def update_external_mcp_server(
        self, request: pb.UpdateExternalMcpServerRequest, ctx: Ctx
    ) -> pb.UpdateExternalMcpServerResponse:
        spec = convert.spec(
            request.external_mcp_server,
            api_key=request.api_key,
            static_headers=request.static_headers,
            oauth_client_secret=request.oauth_client_secret if request.HasField("oauth_client_secret") else None,
            clear_static_headers=request.clear_static_headers,
        )
        async with self._db.transaction() as s:
            updated = await mcp_servers.update(s, current_principal(), spec, self._box, check=self._check)
        return pb.UpdateExternalMcpServerResponse(external_mcp_server=convert.server(updated))

    async def delete_external_mcp_server(
        self, request: pb.DeleteExternalMcpServerRequest, ctx: Ctx
    ) -> pb.DeleteExternalMcpServerResponse:
        async with self._db.transaction() as s:
            await mcp_servers.delete(s, current_principal(), require_nonempty(request.name, "name"))
        return pb.DeleteExternalMcpServerResponse()

    async def list_external_mcp_servers(
        self, request: pb.ListExternalMcpServersRequest, ctx: Ctx
    ) -> pb.ListExternalMcpServersResponse:
        async with self._db.read() as s:
            found = await mcp_servers.list_invokable(s, current_principal())
        return pb.ListExternalMcpServersResponse(external_mcp_servers=[convert.summary(m) for m in found])

    async def list_external_mcp_server_permissions(
        self, request: pb.ListExternalMcpServerPermissionsRequest, ctx: Ctx
    ) -> pb.ListExternalMcpServerPermissionsResponse:
        found = await resource_calls.list_permissions(self._db, KIND, request)
        return pb.ListExternalMcpServerPermissionsResponse(permissions=found)

    async def add_external_mcp_server_permission(
        self, request: pb.AddExternalMcpServerPermissionRequest, ctx: Ctx
    ) -> pb.AddExternalMcpServerPermissionResponse:
        await resource_calls.add_permission(self._db, KIND, request)
        return pb.AddExternalMcpServerPermissionResponse()

    async def remove_external_mcp_server_permission(
        self, request: pb.RemoveExternalMcpServerPermissionRequest, ctx: Ctx
    ) -> pb.RemoveExternalMcpServerPermissionResponse:
        await resource_calls.remove_permission(self._db, KIND, request)
        return pb.RemoveExternalMcpServerPermissionResponse()
