"""CORS over plain HTTP: preflights and actual requests from an allowed origin, and nothing for other origins."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import pytest_asyncio

from tests.conftest import ONE_BACKEND, Database, Server
from tests.cors_servers import ALLOWED, OTHER, CorsServers, start_cors_servers
from tests.gateway_fixtures import Fakes, Gateway

pytestmark = ONE_BACKEND  # CORS is decided by the servers' settings, not by the database

LIST_TENANTS = "/platform.tenants.v1.TenantService/ListTenants"
CONNECT_HEADERS = (
    "content-type,connect-protocol-version,connect-timeout-ms,authorization,x-platform-tenant-id,x-user-agent"
)
GRPC_WEB_HEADERS = "content-type,x-grpc-web,grpc-timeout,x-user-agent,authorization"


@pytest_asyncio.fixture(scope="module")
async def cors_servers(database: Database, fakes: Fakes) -> AsyncIterator[CorsServers]:
    async for servers in start_cors_servers(database, fakes, ALLOWED):
        yield servers


def _listed(value: str | None) -> set[str]:
    return {v.strip().lower() for v in (value or "").split(",") if v.strip()}


async def _options(url: str, origin: str, method: str, headers: str) -> aiohttp.ClientResponse:
    async with aiohttp.ClientSession() as http:
        resp = await http.options(
            url,
            headers={
                "Origin": origin,
                "Access-Control-Request-Method": method,
                "Access-Control-Request-Headers": headers,
            },
        )
        await resp.read()
        return resp


async def test_management_preflights_allow_connect_and_grpc_web(cors_servers: CorsServers) -> None:
    for method, headers in (("POST", CONNECT_HEADERS), ("GET", CONNECT_HEADERS), ("POST", GRPC_WEB_HEADERS)):
        resp = await _options(cors_servers.api + LIST_TENANTS, ALLOWED, method, headers)
        assert resp.status == 204
        assert resp.headers.getall("Access-Control-Allow-Origin") == [ALLOWED]
        assert {"get", "post"} <= _listed(resp.headers["Access-Control-Allow-Methods"])
        assert _listed(headers) <= _listed(resp.headers["Access-Control-Allow-Headers"])
        assert "grpc-timeout" in _listed(resp.headers["Access-Control-Allow-Headers"])
        assert int(resp.headers["Access-Control-Max-Age"]) > 0


async def test_management_answers_carry_cors_headers_for_the_allowed_origin(cors_servers: CorsServers) -> None:
    async with aiohttp.ClientSession() as http:
        for token, status in ((cors_servers.admin_token, 200), ("not-a-token", 401)):
            headers = {
                "Origin": ALLOWED,
                "Authorization": f"Bearer {token}",
                "Content-Type": "application/json",
                "Connect-Protocol-Version": "1",
            }
            async with http.post(cors_servers.api + LIST_TENANTS, data=b"{}", headers=headers) as resp:
                assert resp.status == status
                assert resp.headers.getall("Access-Control-Allow-Origin") == [ALLOWED]
                exposed = _listed(resp.headers["Access-Control-Expose-Headers"])
                assert {"grpc-status", "grpc-message", "grpc-status-details-bin"} <= exposed
                assert "origin" in _listed(",".join(resp.headers.getall("Vary")))


async def test_other_origins_get_no_cors_headers(cors_servers: CorsServers) -> None:
    resp = await _options(cors_servers.api + LIST_TENANTS, OTHER, "POST", CONNECT_HEADERS)
    assert resp.status != 204 and "Access-Control-Allow-Origin" not in resp.headers
    resp = await _options(cors_servers.gateway + "/chat/completions", OTHER, "POST", "authorization,content-type")
    assert resp.status == 401 and "Access-Control-Allow-Origin" not in resp.headers
    async with aiohttp.ClientSession() as http:
        headers = {
            "Origin": OTHER,
            "Authorization": f"Bearer {cors_servers.admin_token}",
            "Content-Type": "application/json",
        }
        async with http.post(cors_servers.api + LIST_TENANTS, data=b"{}", headers=headers) as resp:
            assert resp.status == 200 and "Access-Control-Allow-Origin" not in resp.headers


async def test_with_cors_on_every_answer_varies_by_origin(cors_servers: CorsServers) -> None:
    """A shared cache keyed without Origin would hand an allowed origin an answer stored for another (or for
    none), without Access-Control-Allow-Origin."""
    async with aiohttp.ClientSession() as http:
        for origin in ({"Origin": OTHER}, {}):
            async with http.post(
                cors_servers.api + LIST_TENANTS,
                data=b"{}",
                headers={
                    **origin,
                    "Authorization": f"Bearer {cors_servers.admin_token}",
                    "Content-Type": "application/json",
                },
            ) as resp:
                assert resp.status == 200 and "Access-Control-Allow-Origin" not in resp.headers
                assert "origin" in _listed(",".join(resp.headers.getall("Vary", []))), origin
            async with http.get(
                cors_servers.gateway + "/models", headers={**origin, "Authorization": "Bearer sb_no"}
            ) as resp:
                assert resp.status == 401 and "Access-Control-Allow-Origin" not in resp.headers
                assert "origin" in _listed(",".join(resp.headers.getall("Vary", []))), origin


async def test_gateway_preflight_needs_no_auth(cors_servers: CorsServers) -> None:
    asked = "authorization,content-type,x-stainless-os,x-stainless-retry-count,openai-organization"
    for path, method in (("/chat/completions", "POST"), ("/models", "GET"), ("/responses/resp_1", "DELETE")):
        resp = await _options(cors_servers.gateway + path, ALLOWED, method, asked)
        assert resp.status == 204, path
        assert resp.headers.getall("Access-Control-Allow-Origin") == [ALLOWED]  # exactly once, or browsers refuse
        assert _listed(asked) <= _listed(resp.headers["Access-Control-Allow-Headers"])
        assert method.lower() in _listed(resp.headers["Access-Control-Allow-Methods"])


async def test_gateway_answers_carry_cors_headers(cors_servers: CorsServers) -> None:
    async with (
        aiohttp.ClientSession() as http,
        http.get(
            cors_servers.gateway + "/models", headers={"Origin": ALLOWED, "Authorization": "Bearer sb_no"}
        ) as resp,
    ):
        assert resp.status == 401  # an error the browser client can read, request id included
        assert resp.headers.getall("Access-Control-Allow-Origin") == [ALLOWED]
        assert {"x-request-id", "x-should-retry"} <= _listed(resp.headers["Access-Control-Expose-Headers"])
        assert resp.headers["x-request-id"]


async def test_by_default_no_origin_is_allowed(server: Server, gateway: Gateway) -> None:
    resp = await _options(server.base_url + LIST_TENANTS, ALLOWED, "POST", CONNECT_HEADERS)
    assert "Access-Control-Allow-Origin" not in resp.headers
    resp = await _options(gateway.base_url + "/chat/completions", ALLOWED, "POST", "authorization")
    assert resp.status == 401 and "Access-Control-Allow-Origin" not in resp.headers
