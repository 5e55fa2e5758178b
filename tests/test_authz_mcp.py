"""Authorization matrix rows for ExternalMcpServerService (the registry part)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import Cast, Row, allow, build_cast, check_rows
from tests.world import must

MCP = "platform.agents.v1.ExternalMcpServerService"
OTHERS = ("editor", "member", "group_member", "outsider", "key_personal", "key_granted", "key_sa")  # key_all reads


def _server() -> dict[str, Any]:
    return {"name": f"mx-{secrets.token_hex(4)}", "serverUrl": "https://mx.example.test/mcp"}


async def new_tenant_server(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "externalMcpServer": _server()}


async def new_platform_server(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"externalMcpServer": _server()}


async def creators_server(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    body = await new_tenant_server(cast, connect)
    created = must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=cast.tokens["creator"]))
    return {"name": created["externalMcpServer"]["name"]}


async def shared_oauth_server(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    oauth = {"authorizationUrl": "https://a.example.test/authorize", "tokenUrl": "https://a.example.test/token"}
    body = {
        "externalMcpServer": {
            **_server(),
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_OAUTH_AUTHORIZATION_CODE", "oauth": oauth},
            "sharing": {"sharedWith": [cast.tenant_id]},
        }
    }
    created = must(
        await connect.call(f"{MCP}/CreatePlatformExternalMcpServer", body, token=cast.tokens["platform_admin"])
    )
    return {"name": created["externalMcpServer"]["name"]}


ROWS = [
    Row(f"{MCP}/CreatePlatformExternalMcpServer", new_platform_server, allow("platform_admin")),
    Row(
        f"{MCP}/CreateExternalMcpServer",
        new_tenant_server,
        allow("admin", "editor", "creator", "platform_admin"),  # never a key, whoever owns it
    ),
    Row(
        f"{MCP}/GetExternalMcpServer",
        creators_server,
        {**allow("creator", "admin", "platform_admin"), **allow(*OTHERS, code="not_found")},
        get=True,
    ),
    Row(
        f"{MCP}/DeleteExternalMcpServer",
        creators_server,
        {**allow("creator", "admin", "platform_admin"), **allow(*OTHERS[:4], code="not_found")},  # keys: refused
    ),
    Row(
        f"{MCP}/GetExternalMcpServerOAuthMetadata",
        shared_oauth_server,
        {
            **allow("admin", "editor", "member", "group_member", "creator", "platform_admin", "key_all"),
            **allow("outsider", "key_personal", "key_granted", "key_sa", code="not_found"),
        },
    ),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_mcp_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)
