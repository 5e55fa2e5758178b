"""/platform.platform.v1.McpNetworkPolicyService/* — rules and the can_manage_tenants gate in
server.domain.mcp_network_policies; the egress guard that applies the policies is server.egress."""

from __future__ import annotations

from typing import Any

from connectrpc.request import RequestContext

from gen.platform.platform.v1 import mcp_network_policy_pb2 as policy_pb2
from gen.platform.platform.v1 import mcp_network_policy_service_pb2 as pb
from gen.platform.platform.v1.mcp_network_policy_service_connect import McpNetworkPolicyService
from server.domain import mcp_network_policies as policies
from server.services import Deps
from server.services.context import current_principal

__all__ = ["McpNetworkPolicyServiceHandler", "policy_message"]

Ctx = RequestContext[Any, Any]


def policy_message(value: policies.Policy) -> policy_pb2.McpNetworkPolicy:
    """The policy as the API answers it (here and in ResourceListService's pages)."""
    return policy_pb2.McpNetworkPolicy(
        name=value.name,
        uid=value.uid,
        resource_version=value.resource_version,
        spec=policy_pb2.McpNetworkPolicySpec(
            allowed_networks=list(value.allowed_networks), description=value.description
        ),
    )


class McpNetworkPolicyServiceHandler(McpNetworkPolicyService):
    def __init__(self, deps: Deps) -> None:
        self._db = deps.db

    async def list_mcp_network_policies(
        self, request: pb.ListMcpNetworkPoliciesRequest, ctx: Ctx
    ) -> pb.ListMcpNetworkPoliciesResponse:
        async with self._db.read() as s:
            found = await policies.list_all(s, current_principal())
        return pb.ListMcpNetworkPoliciesResponse(policies=[policy_message(p) for p in found])

    async def create_mcp_network_policy(
        self, request: pb.CreateMcpNetworkPolicyRequest, ctx: Ctx
    ) -> pb.CreateMcpNetworkPolicyResponse:
        spec = request.spec
        value = policies.PolicySpec(
            allowed_networks=tuple(spec.allowed_networks) if spec is not None else (),
            description=spec.description if spec is not None else "",
        )
        async with self._db.transaction() as s:
            created = await policies.create(s, current_principal(), value)
        return pb.CreateMcpNetworkPolicyResponse(policy=policy_message(created))

    async def delete_mcp_network_policy(
        self, request: pb.DeleteMcpNetworkPolicyRequest, ctx: Ctx
    ) -> pb.DeleteMcpNetworkPolicyResponse:
        async with self._db.transaction() as s:
            await policies.delete(s, current_principal(), request.name, request.uid, request.resource_version)
        return pb.DeleteMcpNetworkPolicyResponse()
