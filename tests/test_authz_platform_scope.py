"""A session scoped to one tenant (X-Platform-Tenant-Id) acts on that tenant alone, an operator's too: operations that
are no one tenant's (platform-wide reads and policies, tenants and users themselves) are refused from there, and
reads that span tenants for an operator narrow to the scope (spec Auth 4 and 9)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.world import TENANTS, World, make_world, must

WINDOW = {"startTime": "2001-01-01T00:00:00Z", "endTime": "2001-01-01T01:00:00Z"}
USAGE = "platform.metering.v1.PlatformUsageService"
PLATFORM_WIDE = [
    (f"{USAGE}/GetPlatformTokenUsageSeries", {"window": WINDOW}),
    (f"{USAGE}/GetPlatformCallCountSeries", {"window": WINDOW, "kind": "CALL_KIND_EMBEDDING"}),
    (f"{USAGE}/ListPlatformTokenUsage", {"window": WINDOW}),
    (f"{USAGE}/GetPlatformApiTrafficSeries", {"window": WINDOW}),
    ("platform.platform.v1.McpNetworkPolicyService/ListMcpNetworkPolicies", {}),
    (
        "platform.platform.v1.McpNetworkPolicyService/CreateMcpNetworkPolicy",
        {"spec": {"allowedNetworks": ["10.0.0.0/8"]}},
    ),
    ("platform.modelmanager.v1.ModelDeploymentObservabilityService/GetModelDeploymentGpuOverview", {}),
    ("platform.modelmanager.v1.ModelDeploymentObservabilityService/ListNodeModelCacheUsage", {}),
    ("platform.ragmanager.v1.RagQuotaService/ListTenantsUsage", {}),
    ("platform.modelmanager.v1.ModelAliasService/GetModelAlias", {"name": "any"}),
    (f"{TENANTS}/CreateTenant", {"name": "from-a-scope"}),
    ("platform.tenants.v1.UserService/DeleteUser", {"userId": "someone"}),
]


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


@pytest.mark.parametrize(("method", "body"), PLATFORM_WIDE, ids=[m.rsplit("/", 1)[1] for m, _ in PLATFORM_WIDE])
async def test_platform_wide_operations_are_refused_from_a_tenant_scope(
    server: Server, connect: ConnectJsonCaller, world: World, method: str, body: dict[str, Any]
) -> None:
    scoped = await connect.call(method, body, token=server.admin_token, tenant=world.tenant_id)
    assert scoped.code == "permission_denied" and "platform scope" in scoped.message, scoped


async def test_a_scoped_operator_reads_the_audit_trail_of_the_scope_only(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """Naming no tenant, a scoped operator read every tenant's events; naming another, that tenant's."""
    audit = "switchboard.audit.v1.AuditService/ListAuditEvents"
    for tenant_id in (world.tenant_id, world.other_tenant_id):  # an event in each tenant
        body = {"tenantId": tenant_id, "name": "scope-check"}
        must(await connect.call("platform.tenants.v1.GroupService/CreateGroup", body, token=server.admin_token))
    scoped = must(await connect.call(audit, {"pageSize": 1000}, token=server.admin_token, tenant=world.tenant_id))
    assert {e.get("tenantId") for e in scoped["events"]} == {world.tenant_id}
    other = {"tenantId": world.other_tenant_id}
    refused = await connect.call(audit, other, token=server.admin_token, tenant=world.tenant_id)
    assert refused.code == "permission_denied", refused
    unscoped = must(await connect.call(audit, {"pageSize": 1000}, token=server.admin_token))
    assert {world.tenant_id, world.other_tenant_id} <= {e.get("tenantId") for e in unscoped["events"]}
