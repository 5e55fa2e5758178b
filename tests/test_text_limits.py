"""Free-text fields have length limits (issue 9, finding 8): over-long values are invalid_argument naming the field,
and nothing is written."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from typing import Any

import pytest

from server.domain.validation import MAX_DESCRIPTION, MAX_DISPLAY_NAME, MAX_PROVIDER_MODEL_ID, MAX_URL
from tests.clients import ConnectJsonCaller
from tests.conftest import Server
from tests.world import TENANTS, World, make_world

ACCOUNTS = "platform.tenants.v1.ServiceAccountService"
KEYS = "platform.tenants.v1.ApiKeyService"
EXTERNALS = "platform.modelmanager.v1.ExternalModelService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
MCP = "platform.agents.v1.ExternalMcpServerService"
MEGABYTE = "x" * (1024 * 1024)


def _external(**extra: str) -> dict[str, Any]:
    return {
        "externalModel": {
            "name": f"lim-{secrets.token_hex(3)}",
            "publicModelId": f"lim/{secrets.token_hex(3)}",
            "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
            "providerModelId": "gpt-x",
            "baseUrl": "https://api.example.com/v1",
            **extra,
        }
    }


Body = Callable[[World], dict[str, Any]]
CASES: list[tuple[str, str, Body, str]] = [
    # (method, caller, body with one field over its limit, the field named in the refusal)
    (f"{TENANTS}/CreateTenant", "platform", lambda w: {"name": "lim", "displayName": "d" * 257}, "display_name"),
    (
        f"{ACCOUNTS}/CreateServiceAccount",
        "admin",
        lambda w: {"tenantId": w.tenant_id, "name": "bot", "description": "d" * (MAX_DESCRIPTION + 1)},
        "description",
    ),
    (
        f"{KEYS}/CreateApiKey",
        "admin",
        lambda w: {"tenantId": w.tenant_id, "type": "API_KEY_TYPE_PERSONAL", "name": "k", "description": MEGABYTE},
        "description",
    ),
    (
        f"{EXTERNALS}/CreateExternalModel",
        "platform",
        lambda w: _external(providerModelId="p" * (MAX_PROVIDER_MODEL_ID + 1)),
        "provider_model_id",
    ),
    (
        f"{EXTERNALS}/CreateExternalModel",
        "platform",
        lambda w: _external(displayName="d" * (MAX_DISPLAY_NAME + 1)),
        "display_name",
    ),
    (
        f"{EXTERNALS}/CreateExternalModel",
        "platform",
        lambda w: _external(baseUrl="https://api.example.com/" + "a" * MAX_URL),
        "base_url",
    ),
    (
        f"{DEPLOYMENTS}/CreateModelDeployment",
        "platform",
        lambda w: {
            "modelDeployment": {
                "name": f"lim-{secrets.token_hex(3)}",
                "publicModelId": f"lim/{secrets.token_hex(3)}",
                "endpointUrl": "https://llm.example.com/v1",
                "displayName": MEGABYTE,
            }
        },
        "display_name",
    ),
    (
        f"{MCP}/CreatePlatformExternalMcpServer",
        "platform",
        lambda w: {
            "externalMcpServer": {
                "name": "lim_",
                "serverUrl": "https://mcp.example.com/mcp",
                "displayName": "d" * (MAX_DISPLAY_NAME + 1),
            }
        },
        "display_name",
    ),
]


@pytest.fixture(scope="module")
async def world(server: Server) -> World:
    return await make_world(server, ConnectJsonCaller(server.base_url))


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}-{c[3]}" for c in CASES])
async def test_over_long_text_is_invalid_argument(
    server: Server, world: World, connect: ConnectJsonCaller, case: tuple[str, str, Body, str]
) -> None:
    method, who, body, field = case
    token = server.admin_token if who == "platform" else world.tokens[who]
    result = await connect.call(method, body(world), token=token)
    assert result.code == "invalid_argument", result.body
    assert field in result.message
    assert "at most" in result.message


async def test_text_at_the_limit_is_accepted(server: Server, world: World, connect: ConnectJsonCaller) -> None:
    body = {"tenantId": world.tenant_id, "name": "bot-at-limit", "description": "d" * MAX_DESCRIPTION}
    result = await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=world.tokens["admin"])
    assert result.ok, result.body
