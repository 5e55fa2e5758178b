"""Authorization matrix rows for ModelDeploymentObservabilityService.

The GPU overview and the cache listing are platform reads gated on can_manage_models (deployments are platform
resources managed with it); a deployment's metrics need can_admin on the deployment, which only a platform operator
with can_manage_models holds. Tenant users who can read a shared deployment are refused (its traffic spans every
tenant); callers who cannot even read it get not_found, so names cannot be probed.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.matrix import Cast, Row, allow, build_cast, check_rows
from tests.world import must

OBS = "platform.modelmanager.v1.ModelDeploymentObservabilityService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
TENANT_USERS = ("admin", "editor", "member", "group_member", "creator")


async def nothing(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {}


async def shared_deployment(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    name = f"obs-{secrets.token_hex(4)}"
    body = {
        "name": name,
        "publicModelId": name,
        "endpointUrl": "http://127.0.0.1:9/v1",
        "sharing": {"sharedWith": [cast.tenant_id]},
    }
    must(
        await connect.call(
            f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=cast.tokens["platform_admin"]
        )
    )
    return {"deploymentName": name}


ROWS = [
    Row(f"{OBS}/GetModelDeploymentGpuOverview", nothing, allow("platform_admin"), get=True),
    Row(f"{OBS}/ListNodeModelCacheUsage", nothing, allow("platform_admin"), get=True),
    Row(
        f"{OBS}/GetModelDeploymentMetrics",
        shared_deployment,
        {
            **allow("platform_admin"),
            **allow(*TENANT_USERS, "key_all", code="permission_denied"),
            **allow("outsider", "key_personal", "key_granted", "key_sa", code="not_found"),
        },
        get=True,
    ),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_observability_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)


async def test_the_platform_role_that_counts_is_can_manage_models(server: Server, connect: ConnectJsonCaller) -> None:
    models_only = server.token(f"models-{secrets.token_hex(3)}", roles=("can_manage_models",))
    tenants_only = server.token(f"tenants-{secrets.token_hex(3)}", roles=("can_manage_tenants",))
    name = f"obs-{secrets.token_hex(4)}"
    body = {"name": name, "publicModelId": name, "endpointUrl": "http://127.0.0.1:9/v1"}
    must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=models_only))
    deployment = {"deploymentName": name}
    for method, body in (
        ("GetModelDeploymentGpuOverview", {}),
        ("ListNodeModelCacheUsage", {}),
        ("GetModelDeploymentMetrics", deployment),
    ):
        allowed = await connect.call(f"{OBS}/{method}", body, token=models_only, get=True)
        assert allowed.ok, (method, allowed)
        refused = await connect.call(f"{OBS}/{method}", body, token=tenants_only, get=True)
        assert refused.code in ("permission_denied", "not_found"), (method, refused)
        if method != "GetModelDeploymentMetrics":
            assert "can_manage_models" in refused.message
