"""The contract as served: every spec method exists and is routed over Connect and gRPC, with the spec's names."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc
import pytest

from server.app import generated_services
from tests.clients import _BUF, http_json
from tests.schema import all_messages, service_desc
from tests.spec_fields import (
    CONTRACT_ADDITIONS,
    SPEC_GET_METHODS,
    SPEC_MESSAGE_FIELDS,
    SPEC_METHODS,
    SPEC_OPTIONAL_FIELDS,
)

MESSAGES = all_messages()
SERVICES = {s.full_name: s for s in generated_services()}


def _methods(service: str) -> dict[str, Any]:
    return {m.name: m for m in service_desc(SERVICES[service]).methods}


@pytest.mark.parametrize("service", sorted(SPEC_METHODS))
def test_every_spec_method_exists_with_its_own_messages(service: str) -> None:
    methods = _methods(service)
    assert list(methods) == SPEC_METHODS[service]
    for name, method in methods.items():
        assert method.input.type_name.endswith(f".{name}Request")
        assert method.output.type_name.endswith(f".{name}Response")
        read = name in SPEC_GET_METHODS.get(service, [])
        assert (str(method.idempotency) == "NO_SIDE_EFFECTS") == read, name


@pytest.mark.parametrize("message", sorted(SPEC_MESSAGE_FIELDS))
def test_spec_field_names_are_the_json_names(message: str) -> None:
    assert message in MESSAGES, f"{message} is missing from the contract"
    json_names = [f.json_name for f in MESSAGES[message].fields]
    assert sorted(json_names) == sorted(SPEC_MESSAGE_FIELDS[message] + CONTRACT_ADDITIONS.get(message, []))


@pytest.mark.parametrize("message", sorted(SPEC_OPTIONAL_FIELDS))
def test_spec_optional_fields_have_presence(message: str) -> None:
    fields = {f.json_name: f for f in MESSAGES[message].fields}
    for name in SPEC_OPTIONAL_FIELDS[message]:
        field = fields[name]
        assert field.proto.proto3_optional or field.proto.type_name, f"{message}.{name} has no presence"


def _every_method() -> list[str]:
    return [f"{service}/{m.name}" for service in sorted(SERVICES) for m in service_desc(SERVICES[service]).methods]


async def test_every_method_is_routed_over_connect_and_grpc(server: Any) -> None:
    """Unauthenticated calls are refused by the auth interceptor, which only a routed method reaches."""
    spec = {f"{s}/{m}" for s, ms in SPEC_METHODS.items() for m in ms}
    paths = _every_method()
    assert spec <= set(paths)

    async def connect(path: str) -> tuple[str, int, Any]:
        status, body = await http_json("POST", f"{server.base_url}/{path}", body={})
        return path, status, body

    for path, status, body in await asyncio.gather(*(connect(p) for p in paths)):
        assert (status, body.get("code")) == (401, "unauthenticated"), path

    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        for path in paths:
            call = channel.unary_unary(f"/{path}", request_serializer=bytes, response_deserializer=bytes)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await call(b"", timeout=10)
            assert err.value.code() == grpc.StatusCode.UNAUTHENTICATED, path


async def test_unbuilt_methods_answer_unimplemented_naming_the_method() -> None:
    # Every service has a handler now; the fallback still serves any service added to the contract before its
    # handler, and the error interceptor names the method.
    from types import SimpleNamespace

    from connectrpc.code import Code
    from connectrpc.errors import ConnectError

    from gen.platform.ragmanager.v1.rag_quota_service_pb2 import GetTenantQuotaRequest
    from server.app import _unimplemented
    from server.interceptors import to_connect_error

    service = next(s for s in generated_services() if s.full_name == "platform.ragmanager.v1.RagQuotaService")
    stub: Any = _unimplemented(service.protocol)
    with pytest.raises(ConnectError) as err:
        await stub.get_tenant_quota(GetTenantQuotaRequest(), None)
    ctx: Any = SimpleNamespace(method=SimpleNamespace(service_name=service.full_name, name="GetTenantQuota"))
    mapped = to_connect_error(err.value, ctx)
    assert mapped.code == Code.UNIMPLEMENTED
    assert "/platform.ragmanager.v1.RagQuotaService/GetTenantQuota" in mapped.message


async def test_unknown_paths_are_not_found(server: Any) -> None:
    status, _ = await http_json("POST", f"{server.base_url}/platform.tenants.v1.GroupService/Nope", body={})
    assert status == 404


async def test_health_checking_and_readiness(server: Any) -> None:
    from gen.grpc.health.v1.health_pb2 import HealthCheckRequest, HealthCheckResponse
    from gen.grpc.health.v1.health_pb2_grpc import HealthStub

    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        response = await HealthStub(channel).Check(HealthCheckRequest(), timeout=10)
    assert response.status == HealthCheckResponse.ServingStatus.SERVING
    assert (await http_json("GET", f"{server.base_url}/readyz"))[0] == 200
    assert (await http_json("GET", f"{server.base_url}/healthz"))[0] == 200


async def test_reflection_lists_every_service(server: Any) -> None:
    proc = await asyncio.create_subprocess_exec(
        _BUF,
        "curl",
        "--protocol",
        "grpc",
        "--http2-prior-knowledge",
        "--list-services",
        server.base_url,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err
    listed = set(out.decode().split())
    assert set(SPEC_METHODS) <= listed
    assert "grpc.health.v1.Health" in listed


async def test_binary_connect_requests(server: Any) -> None:
    """Connect's binary (application/proto) encoding is served too."""
    import aiohttp

    from gen.platform.tenants.v1.tenant_service_pb2 import ListTenantsRequest, ListTenantsResponse

    headers = {"Content-Type": "application/proto", "Authorization": f"Bearer {server.admin_token}"}
    url = f"{server.base_url}/platform.tenants.v1.TenantService/ListTenants"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=ListTenantsRequest().SerializeToString(), headers=headers) as resp,
    ):
        assert resp.status == 200
        ListTenantsResponse.FromString(await resp.read())


async def test_errors_never_carry_internal_detail(server: Any) -> None:
    """Malformed input gets a clear Connect error, never a Python exception text."""
    status, body = await http_json(
        "POST",
        f"{server.base_url}/platform.tenants.v1.GroupService/CreateGroup",
        body={"tenantId": 42, "name": {"nested": True}},
        headers={"Authorization": f"Bearer {server.admin_token}"},
    )
    assert status == 400
    assert "Traceback" not in json.dumps(body)


async def test_grpc_web_is_served(server: Any) -> None:
    proc = await asyncio.create_subprocess_exec(
        _BUF,
        "curl",
        "--protocol",
        "grpcweb",
        "-H",
        f"Authorization: Bearer {server.admin_token}",
        "-d",
        "{}",
        f"{server.base_url}/platform.tenants.v1.TenantService/ListTenants",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode == 0, err
    assert isinstance(json.loads(out or b"{}"), dict)
