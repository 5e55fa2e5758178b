"""/switchboard.resources.v1.ResourceListService/* — the platform's resource lists a page at a time.

Each method pages the very function its platform namesake lists with (model_deployments.list_readable, ...), through
a keyset window (server.domain.pages.walk): the same gates, visibility and order, so walking every page answers
exactly what the unpaged list does. A token is the sort key of the page's last item, as strings.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from connectrpc.request import RequestContext
from sqlalchemy.ext.asyncio import AsyncSession

from gen.platform.modelmanager.v1 import model_alias_service_pb2
from gen.switchboard.resources.v1 import resource_list_service_pb2 as pb
from gen.switchboard.resources.v1.resource_list_service_connect import ResourceListService
from gen.switchboard.tenants.v1.tenant_list_service_pb2 import PageRequest
from server.domain import (
    external_models,
    mcp_network_policies,
    mcp_servers,
    model_aliases,
    model_deployments,
    preset_agents,
    rags,
    tenants,
)
from server.domain.pages import Page, walk
from server.domain.principal import Principal
from server.services import Deps
from server.services.agents import convert as agents_convert
from server.services.agents import preset_agent_convert
from server.services.context import current_principal
from server.services.modelmanager import convert as models_convert
from server.services.platform.mcp_network_policy_service import policy_message
from server.services.ragmanager import convert as rags_convert
from server.services.tenants import convert as tenants_convert
from server.store.keyset import Window

__all__ = ["ResourceListServiceHandler"]

Ctx = RequestContext[Any, Any]
T = TypeVar("T")
# A list's own function, as the paged method calls it: the caller's read session, the caller, the page's window.
Fetch = Callable[[AsyncSession, Principal, Window], Awaitable[Sequence[T]]]


def _created_then_name(key: list[str]) -> tuple[datetime, str]:
    return datetime.fromisoformat(key[0]), key[1]


class ResourceListServiceHandler(ResourceListService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db
        self._base_url = deps.settings.gateway_public_url

    async def _page(
        self,
        kind: str,
        page: PageRequest,
        fetch: Fetch[T],
        key: Callable[[T], tuple[str, ...]],
        *,
        parts: int = 1,
        parse: Callable[[list[str]], tuple[Any, ...]] = tuple,
        search: str = "",
    ) -> Page[T]:
        """One page of `kind` for the caller (narrowed by `search`), read by its unpaged list's own function in one
        read session."""
        principal = current_principal()
        async with self._db.read() as s:
            return await walk(
                kind,
                page.page_token,
                page.page_size,
                parts=parts,
                fetch=lambda window: fetch(s, principal, window),
                key=key,
                parse=parse,
                search=search,
            )

    async def list_model_deployments(
        self, request: pb.ListModelDeploymentsRequest, ctx: Ctx
    ) -> pb.ListModelDeploymentsResponse:
        page = await self._page(
            "model_deployments",
            request.page,
            model_deployments.list_readable,
            lambda d: (d.name,),
            search=request.search,
        )
        return pb.ListModelDeploymentsResponse(
            model_deployments=[models_convert.deployment(d) for d in page.items], next_page_token=page.next_token
        )

    async def list_external_models(
        self, request: pb.ListExternalModelsRequest, ctx: Ctx
    ) -> pb.ListExternalModelsResponse:
        page = await self._page(
            "external_models",
            request.page,
            external_models.list_readable,
            lambda m: (m.name,),
            search=request.search,
        )
        return pb.ListExternalModelsResponse(
            external_models=[models_convert.external_model_summary(m) for m in page.items],
            next_page_token=page.next_token,
        )

    async def list_model_aliases(self, request: pb.ListModelAliasesRequest, ctx: Ctx) -> pb.ListModelAliasesResponse:
        page = await self._page(
            "model_aliases",
            request.page,
            model_aliases.list_readable,
            lambda a: (a.public_model_id,),
            search=request.search,
        )
        item = model_alias_service_pb2.ListModelAliasesResponse.Item
        return pb.ListModelAliasesResponse(
            aliases=[item(name=a.name, alias=models_convert.alias(a)) for a in page.items],
            next_page_token=page.next_token,
        )

    async def list_external_mcp_servers(
        self, request: pb.ListExternalMcpServersRequest, ctx: Ctx
    ) -> pb.ListExternalMcpServersResponse:
        page = await self._page(
            "external_mcp_servers",
            request.page,
            mcp_servers.list_invokable,
            lambda m: (m.name,),
            search=request.search,
        )
        return pb.ListExternalMcpServersResponse(
            external_mcp_servers=[agents_convert.summary(m) for m in page.items], next_page_token=page.next_token
        )

    async def list_rags(self, request: pb.ListRagsRequest, ctx: Ctx) -> pb.ListRagsResponse:
        page = await self._page(
            "rags",
            request.page,
            lambda s, principal, window: rags.list_readable(s, principal, tenant_id=request.tenant_id, window=window),
            lambda r: (r.tenant_id or "", r.name, r.id),
            parts=3,
            search=request.search,
        )
        return pb.ListRagsResponse(
            rags=[rags_convert.rag(r, self._base_url) for r in page.items], next_page_token=page.next_token
        )

    async def list_preset_agents(self, request: pb.ListPresetAgentsRequest, ctx: Ctx) -> pb.ListPresetAgentsResponse:
        page = await self._page(
            "preset_agents",
            request.page,
            lambda s, principal, window: preset_agents.list_readable(
                s, principal, tenant_id=request.tenant_id, window=window
            ),
            lambda a: (a.public_model_id,),
            search=request.search,
        )
        return pb.ListPresetAgentsResponse(
            preset_agents=[preset_agent_convert.agent(a) for a in page.items], next_page_token=page.next_token
        )

    async def list_mcp_network_policies(
        self, request: pb.ListMcpNetworkPoliciesRequest, ctx: Ctx
    ) -> pb.ListMcpNetworkPoliciesResponse:
        page = await self._page(
            "mcp_network_policies",
            request.page,
            mcp_network_policies.list_all,
            lambda p: (p.created_at.isoformat(), p.name),
            parts=2,
            parse=_created_then_name,
        )
        return pb.ListMcpNetworkPoliciesResponse(
            policies=[policy_message(p) for p in page.items], next_page_token=page.next_token
        )

    async def list_tenants(self, request: pb.ListTenantsRequest, ctx: Ctx) -> pb.ListTenantsResponse:
        page = await self._page("tenants", request.page, tenants.list_tenants, lambda t: (t.name,))
        return pb.ListTenantsResponse(
            tenants=[tenants_convert.tenant(t) for t in page.items], next_page_token=page.next_token
        )
