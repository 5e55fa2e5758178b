"""SSRF through registered models and MCP servers (issue 9): one egress guard for every outbound connection.

The refusals are proven with SWITCHBOARD_EGRESS_ALLOW_LOOPBACK off: a second management server and a second gateway
(`guarded`) share this run's database and var dir but keep loopback protected, as in production. A loopback canary
(a fake provider recording every request) must see nothing they refuse; the session's own server and gateway (loopback
open for the test fakes) show the canary does answer when reached. The private ranges refused here (172.31.0.0/16,
192.168.213.0/24, fd55::/16) are approved by no test's network policy (see tests/test_network_policies.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from ipaddress import ip_address, ip_network
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from server.domain.networks import Verdict, classify
from server.settings import load_settings
from server.tokens import PLATFORM_ROLES, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import ONE_BACKEND, Database, Server, server_env, start_server
from tests.fakes.serve import serve_in_thread
from tests.fakes.upstream import FakeUpstream
from tests.gateway_fixtures import Fakes, Gateway, gateway_env, start_gateway_process
from tests.world import World, make_world, must

pytestmark = ONE_BACKEND  # the egress guard decides by address, whatever the database

EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
KEYS = "platform.tenants.v1.ApiKeyService"
MCP = "platform.agents.v1.ExternalMcpServerService"
POLICIES = "platform.platform.v1.McpNetworkPolicyService"


@dataclass
class Canary:
    upstream: FakeUpstream
    port: int
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/v1"


@contextlib.contextmanager
def _canary(host: str = "127.0.0.1") -> Iterator[Canary]:
    upstream = FakeUpstream("canary")
    with serve_in_thread(upstream.app, host=host) as port:
        yield Canary(upstream, port, host)


@pytest.fixture
def canary() -> Iterator[Canary]:
    with _canary() as served:
        yield served


@dataclass
class Guarded:
    """A management server and a gateway with loopback protected (the production default)."""

    connect: ConnectJsonCaller
    gateway_url: str
    admin: str


@pytest_asyncio.fixture(scope="module")
async def guarded(database: Database, server: Server, gateway: Gateway, fakes: Fakes) -> AsyncIterator[Guarded]:
    var_dir = server.settings.var_dir
    env = server_env(
        database, var_dir, SWITCHBOARD_EGRESS_ALLOW_LOOPBACK="false", SWITCHBOARD_MCP_NETWORK_POLICY_CACHE_SECONDS="0"
    )
    proc = await start_server(env)
    gw_env = {
        **gateway_env(database, var_dir, fakes),
        "SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "false",
        "SWITCHBOARD_MCP_NETWORK_POLICY_CACHE_SECONDS": "0",
    }
    gw = await start_gateway_process(gw_env, workers=1)
    try:
        settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
        admin = mint_token(settings, user_id="egress-admin", roles=PLATFORM_ROLES)
        yield Guarded(ConnectJsonCaller(f"http://127.0.0.1:{proc.listener_port}"), gw.base_url, admin)
    finally:
        gw.proc.send_signal(signal.SIGTERM)
        await gw.proc.wait()
        await proc.stop()


@pytest_asyncio.fixture(scope="module")
async def world(server: Server) -> World:
    return await make_world(server, ConnectJsonCaller(server.base_url))


_counter = iter(range(1, 1_000_000))


def _unique_model(base_url: str, **extra: Any) -> dict[str, Any]:
    tag = f"egress-{next(_counter)}-{socket.gethostname()[:8]}".lower().replace("_", "-")
    return {
        "name": tag,
        "publicModelId": tag,
        "providerModelId": "m",
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "baseUrl": base_url,
        **extra,
    }


def _deployment(endpoint_url: str, **extra: Any) -> dict[str, Any]:
    tag = f"egress-dep-{next(_counter)}-{socket.gethostname()[:8]}".lower().replace("_", "-")
    return {"name": tag, "publicModelId": tag, "endpointUrl": endpoint_url, **extra}


def _ssrf_targets(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/v1",
        f"http://localhost:{port}/v1",
        f"http://127.1:{port}/v1",
        f"http://2130706433:{port}/v1",
        f"http://0x7f.0.0.1:{port}/v1",
        f"http://[::1]:{port}/v1",
        f"http://[::ffff:127.0.0.1]:{port}/v1",
        "http://169.254.169.254/latest/meta-data",
        "http://[fd00:ec2::254]/latest",
        "http://[::ffff:169.254.169.254]/",
        "http://172.31.0.1/v1",
        "http://192.168.213.1/v1",
        "http://[fd55::1]/v1",
        "http://0.0.0.0:80/v1",
    ]


async def _chat(gateway_url: str, key: str, model: str) -> tuple[int, dict[str, Any]]:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{gateway_url}/chat/completions", json=body, headers={"Authorization": f"Bearer {key}"}) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


async def _personal_all_key(connect: ConnectJsonCaller, world: World, person: str) -> str:
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "egress"}
    return str(must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens[person]))["secret"])


async def test_tenant_models_cannot_be_registered_at_protected_or_private_addresses(
    guarded: Guarded, world: World, canary: Canary
) -> None:
    editor = world.tokens["editor"]
    create = f"{EXTERNAL}/CreateTenantExternalModel"
    for target in _ssrf_targets(canary.port):
        body = {"tenantId": world.tenant_id, "externalModel": _unique_model(target)}
        result = await guarded.connect.call(create, body, token=editor)
        assert result.code == "invalid_argument", (target, result)
        assert "base_url" in result.message, result
    # A name that does not resolve (yet) is accepted; moving it onto a protected address is refused.
    body = {"tenantId": world.tenant_id, "externalModel": _unique_model("http://models.invalid/v1")}
    created = must(await guarded.connect.call(create, body, token=editor))["externalModel"]
    for target in _ssrf_targets(canary.port):
        moved = {"name": created["name"], "baseUrl": target}
        result = await guarded.connect.call(f"{EXTERNAL}/UpdateExternalModel", {"externalModel": moved}, token=editor)
        assert result.code == "invalid_argument" and "base_url" in result.message, (target, result)
    got = must(await guarded.connect.call(f"{EXTERNAL}/GetExternalModel", {"name": created["name"]}, token=editor))
    assert got["externalModel"]["baseUrl"] == "http://models.invalid/v1"  # nothing half-written
    assert canary.upstream.received == []


async def test_operators_may_register_private_but_never_protected_upstreams(guarded: Guarded, canary: Canary) -> None:
    admin = guarded.admin
    for target in [t for t in _ssrf_targets(canary.port) if not any(p in t for p in ("172.31.", "192.168.", "fd55:"))]:
        deployment = _deployment(target)
        result = await guarded.connect.call(
            f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}, token=admin
        )
        assert result.code == "invalid_argument" and "endpoint_url" in result.message, (target, result)
        model = _unique_model(target)
        result = await guarded.connect.call(f"{EXTERNAL}/CreateExternalModel", {"externalModel": model}, token=admin)
        assert result.code == "invalid_argument" and "base_url" in result.message, (target, result)
    # In-cluster upstreams live on private addresses: platform-scoped registrations may use them.
    deployment = _deployment("http://10.0.0.1/v1")
    must(
        await guarded.connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}, token=admin)
    )
    model = _unique_model("http://10.0.0.1/v1")
    must(await guarded.connect.call(f"{EXTERNAL}/CreateExternalModel", {"externalModel": model}, token=admin))
    assert canary.upstream.received == []


async def test_invocation_refuses_protected_upstreams_at_connect_time(
    server: Server, gateway: Gateway, guarded: Guarded, world: World, canary: Canary
) -> None:
    """Models stored before this check (or whose name now resolves elsewhere) are refused when the gateway connects:
    the session's server (loopback open) registers them at the canary, the guarded gateway must not reach it."""
    connect = ConnectJsonCaller(server.base_url)
    body = {"tenantId": world.tenant_id, "externalModel": _unique_model(canary.url, apiKey="sk-canary")}
    tenant_model = must(
        await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=world.tokens["editor"])
    )["externalModel"]
    key = await _personal_all_key(connect, world, "editor")
    status, answer = await _chat(gateway.base_url, key, tenant_model["publicModelId"])  # the control: it answers
    assert status == 200, answer
    assert len(canary.upstream.received) == 1
    for _ in range(2):
        status, answer = await _chat(guarded.gateway_url, key, tenant_model["publicModelId"])
        assert status == 400, answer
        assert "127.0.0.1" in answer["error"]["message"] and "refused" in answer["error"]["message"]
    assert len(canary.upstream.received) == 1  # the guarded gateway sent nothing


def _local_private_address() -> str | None:
    probes = ((socket.AF_INET, "10.255.255.1"), (socket.AF_INET, "192.168.0.1"), (socket.AF_INET6, "fd00::1"))
    for family, probe in probes:
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe_socket:
                probe_socket.connect((probe, 9))
                address = str(probe_socket.getsockname()[0])
        except OSError:
            continue
        if classify(ip_address(address)).verdict == Verdict.PRIVATE:
            return address
    return None


async def test_a_private_address_needs_a_policy_for_tenant_models_only(
    server: Server, guarded: Guarded, world: World
) -> None:
    """On a private address of this machine: a tenant model is refused there unless a network policy allows it, at
    registration and at connect time; a platform deployment reaches it without one."""
    address = _local_private_address()
    if address is None:
        pytest.skip("this machine has no private non-loopback address")
    connect = guarded.connect
    admin = guarded.admin
    listed = must(await connect.call(f"{POLICIES}/ListMcpNetworkPolicies", {}, token=admin))
    approved = [ip_network(n) for p in listed.get("policies", []) for n in p["spec"].get("allowedNetworks", [])]
    if any(ip_address(address) in network for network in approved):
        pytest.skip(f"another test's policy already approves {address}")
    with _canary(address) as canary:
        editor = world.tokens["editor"]
        create = f"{EXTERNAL}/CreateTenantExternalModel"
        body = {"tenantId": world.tenant_id, "externalModel": _unique_model(canary.url)}
        refused = await connect.call(create, body, token=editor)
        assert refused.code == "invalid_argument" and "base_url" in refused.message, refused

        deployment = _deployment(canary.url, sharing={"shareToAll": True})
        dep = must(
            await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": deployment}, token=admin)
        )
        policy = must(
            await connect.call(
                f"{POLICIES}/CreateMcpNetworkPolicy", {"spec": {"allowedNetworks": [address]}}, token=admin
            )
        )["policy"]
        tenant_model = must(await connect.call(create, body, token=editor))["externalModel"]  # allowed by the policy
        key = await _personal_all_key(connect, world, "editor")
        status, answer = await _chat(guarded.gateway_url, key, tenant_model["publicModelId"])
        assert status == 200, answer
        delete = {"name": policy["name"], "uid": policy["uid"], "resourceVersion": policy["resourceVersion"]}
        must(await connect.call(f"{POLICIES}/DeleteMcpNetworkPolicy", delete, token=admin))
        reached = len(canary.upstream.received)
        status, answer = await _chat(guarded.gateway_url, key, tenant_model["publicModelId"])
        assert status == 400 and "refused" in answer["error"]["message"], answer
        assert len(canary.upstream.received) == reached
        status, answer = await _chat(guarded.gateway_url, key, dep["modelDeployment"]["publicModelId"])
        assert status == 200, answer  # the platform's deployment: private is fine
        assert len(canary.upstream.received) == reached + 1


async def test_a_stored_provider_key_never_follows_a_repointed_base_url(
    server: Server, gateway: Gateway, world: World
) -> None:
    connect = ConnectJsonCaller(server.base_url)
    editor, admin = world.tokens["editor"], world.tokens["admin"]
    with _canary() as original, _canary() as elsewhere:
        body = {"tenantId": world.tenant_id, "externalModel": _unique_model(original.url, apiKey="sk-stored-secret")}
        created = must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=editor))["externalModel"]
        update = f"{EXTERNAL}/UpdateExternalModel"
        for moved in (
            {"name": created["name"], "baseUrl": elsewhere.url},
            {"name": created["name"], "baseUrl": elsewhere.url, "displayName": "moved"},
            {"name": created["name"], "provider": "EXTERNAL_MODEL_PROVIDER_VENDOR_A", "baseUrl": ""},
        ):
            for token in (editor, admin):  # the tenant admin never saw the key either
                result = await connect.call(update, {"externalModel": moved}, token=token)
                assert result.code == "invalid_argument" and "api_key" in result.message, result
        # Unrelated edits keep the stored key, and the key still goes only where it was given for.
        must(
            await connect.call(update, {"externalModel": {"name": created["name"], "displayName": "kept"}}, token=admin)
        )
        key = await _personal_all_key(connect, world, "editor")
        assert (await _chat(gateway.base_url, key, created["publicModelId"]))[0] == 200
        assert original.upstream.last().headers["authorization"] == "Bearer sk-stored-secret"
        assert elsewhere.upstream.received == []
        # Given again, the move is accepted and the new key (only) goes to the new address.
        moved = {"name": created["name"], "baseUrl": elsewhere.url, "apiKey": "sk-new-key"}
        must(await connect.call(update, {"externalModel": moved}, token=admin))
        for _ in range(20):  # the gateway caches routes for at most SWITCHBOARD_API_KEY_CACHE_SECONDS (1 s here)
            assert (await _chat(gateway.base_url, key, created["publicModelId"]))[0] == 200
            if elsewhere.upstream.received:
                break
            await asyncio.sleep(0.2)
        assert [r.headers["authorization"] for r in elsewhere.upstream.received] == ["Bearer sk-new-key"]


async def test_mcp_registration_refuses_protected_urls(guarded: Guarded, world: World, canary: Canary) -> None:
    editor = world.tokens["editor"]
    for target in [*_ssrf_targets(canary.port), f"http://127.1:{canary.port}/mcp"]:
        body = {"tenantId": world.tenant_id, "externalMcpServer": {"name": f"s{next(_counter)}_", "serverUrl": target}}
        result = await guarded.connect.call(f"{MCP}/CreateExternalMcpServer", body, token=editor)
        assert result.code == "invalid_argument" and "server_url" in result.message, (target, result)
        platform = {"externalMcpServer": {"name": f"p{next(_counter)}_", "serverUrl": target}}
        result = await guarded.connect.call(f"{MCP}/CreatePlatformExternalMcpServer", platform, token=guarded.admin)
        assert result.code == "invalid_argument" and "server_url" in result.message, (target, result)
    for target in (f"http://127.1:{canary.port}/mcp", f"http://2130706433:{canary.port}/mcp"):
        # Probing names the refusal (it is loopback), never a misleading "retry shortly".
        body = {"tenantId": world.tenant_id, "serverUrl": target}
        result = await guarded.connect.call(f"{MCP}/DiscoverExternalMcpServer", body, token=editor)
        assert result.code == "failed_precondition", (target, result)
    assert canary.upstream.received == []


async def test_an_mcp_servers_stored_token_never_follows_a_repointed_url(server: Server, world: World) -> None:
    connect = ConnectJsonCaller(server.base_url)
    editor = world.tokens["editor"]
    body = {
        "tenantId": world.tenant_id,
        "externalMcpServer": {
            "name": f"bound{next(_counter)}_",
            "serverUrl": "http://mcp.invalid/mcp",
            "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_BEARER"},
        },
        "apiKey": "tok-stored",
    }
    created = must(await connect.call(f"{MCP}/CreateExternalMcpServer", body, token=editor))["externalMcpServer"]
    update = f"{MCP}/UpdateExternalMcpServer"
    moved = {"externalMcpServer": {"name": created["name"], "serverUrl": "http://elsewhere.invalid/mcp"}}
    result = await connect.call(update, moved, token=editor)
    assert result.code == "invalid_argument" and "api_key" in result.message, result
    got = must(await connect.call(f"{MCP}/GetExternalMcpServer", {"name": created["name"]}, token=editor))
    assert got["externalMcpServer"]["serverUrl"] == "http://mcp.invalid/mcp"
    must(await connect.call(update, {**moved, "apiKey": "tok-new"}, token=editor))
    same = {"externalMcpServer": {"name": created["name"], "serverUrl": "http://elsewhere.invalid/mcp"}}
    must(await connect.call(update, same, token=editor))  # not a move: the stored token stays
