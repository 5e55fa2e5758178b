"""Authorization matrix rows for McpNetworkPolicyService: the spec shows no gate; these are platform-wide exceptions,
so every method needs can_manage_tenants, which only a platform operator's own session carries (API keys never carry
platform roles, whoever owns them). Tenant admins of every tenant are refused, reads included."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import Cast, Row, allow, build_cast, check_rows
from tests.world import must

SERVICE = "platform.platform.v1.McpNetworkPolicyService"


async def nothing(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {}


async def new_spec(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"spec": {"allowedNetworks": [f"192.168.77.{secrets.randbelow(256)}"], "description": "matrix"}}


async def existing_policy(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    created = must(
        await connect.call(
            f"{SERVICE}/CreateMcpNetworkPolicy", await new_spec(cast, connect), token=cast.tokens["platform_admin"]
        )
    )["policy"]
    return {"name": created["name"], "uid": created["uid"], "resourceVersion": created["resourceVersion"]}


ROWS = [
    Row(f"{SERVICE}/ListMcpNetworkPolicies", nothing, allow("platform_admin"), get=True),
    Row(f"{SERVICE}/CreateMcpNetworkPolicy", new_spec, allow("platform_admin")),
    Row(f"{SERVICE}/DeleteMcpNetworkPolicy", existing_policy, allow("platform_admin")),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_network_policy_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)


async def test_a_models_operator_is_not_a_network_policy_operator(server: Any, connect: ConnectJsonCaller) -> None:
    models_only = server.token("models-operator", roles=("can_manage_models",))
    tenants_only = server.token("tenants-operator", roles=("can_manage_tenants",))
    body = {"spec": {"allowedNetworks": ["192.168.77.1"]}}
    denied = await connect.call(f"{SERVICE}/CreateMcpNetworkPolicy", body, token=models_only)
    assert denied.code == "permission_denied" and "can_manage_tenants" in denied.message
    assert (await connect.call(f"{SERVICE}/ListMcpNetworkPolicies", {}, token=models_only, get=True)).code == (
        "permission_denied"
    )
    assert (await connect.call(f"{SERVICE}/CreateMcpNetworkPolicy", body, token=tenants_only)).ok


async def test_a_refused_caller_learns_nothing_about_policies(server: Any, connect: ConnectJsonCaller) -> None:
    """The gate comes before validation and lookup: an unknown name or a stale version still reads as denied."""
    outsider = server.token("netpol-outsider")
    body = {"name": "mnp-unknown", "uid": "u", "resourceVersion": "v"}
    result = await connect.call(f"{SERVICE}/DeleteMcpNetworkPolicy", body, token=outsider)
    assert result.code == "permission_denied"
    bad = {"spec": {"allowedNetworks": ["8.8.8.8"]}}
    assert (await connect.call(f"{SERVICE}/CreateMcpNetworkPolicy", bad, token=outsider)).code == "permission_denied"
