"""A real read — ListGroups of a tenant with 50 groups — over Connect JSON and over gRPC, against the no-op
baseline served by the same process (grpc.health.v1.Health/Check, which answers from memory).

The load generator shares the machine with the server, so absolute req/s understate a dedicated server; compare the
ratios.
"""

from __future__ import annotations

import json

import aiohttp
import grpc

from bench.common import measure, print_table, running_server
from gen.grpc.health.v1.health_pb2 import HealthCheckRequest
from gen.grpc.health.v1.health_pb2_grpc import HealthStub
from gen.platform.tenants.v1.group_service_pb2 import ListGroupsRequest
from gen.platform.tenants.v1.group_service_pb2_grpc import GroupServiceStub
from server.tokens import PLATFORM_ROLES, mint_token

REQUESTS = 3000
CONCURRENCY = 16


async def main() -> None:
    async with running_server() as (base_url, port, settings):
        token = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
        auth = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        async with aiohttp.ClientSession(headers=auth) as http:
            async with http.post(
                f"{base_url}/platform.tenants.v1.TenantService/CreateTenant", json={"name": "bench"}
            ) as resp:
                tenant_id = (await resp.json())["tenant"]["id"]
            for i in range(50):
                async with http.post(
                    f"{base_url}/platform.tenants.v1.GroupService/CreateGroup",
                    json={"tenantId": tenant_id, "name": f"group-{i:02d}"},
                ) as resp:
                    assert resp.status == 200, await resp.text()

            list_url = f"{base_url}/platform.tenants.v1.GroupService/ListGroups"
            body = json.dumps({"tenantId": tenant_id})
            noop_url = f"{base_url}/grpc.health.v1.Health/Check"

            async def connect_list() -> None:
                async with http.post(list_url, data=body) as resp:
                    assert len((await resp.json())["groups"]) == 50

            async def connect_noop() -> None:
                async with http.post(noop_url, data="{}") as resp:
                    await resp.read()

            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                groups = GroupServiceStub(channel)
                health = HealthStub(channel)
                metadata = [("authorization", f"Bearer {token}")]

                async def grpc_list() -> None:
                    response = await groups.ListGroups(ListGroupsRequest(tenant_id=tenant_id), metadata=metadata)
                    assert len(response.groups) == 50

                async def grpc_noop() -> None:
                    await health.Check(HealthCheckRequest())

                noop_connect = await measure(
                    "no-op (Health/Check), Connect JSON", connect_noop, requests=REQUESTS, concurrency=CONCURRENCY
                )
                list_connect = await measure(
                    "ListGroups x50, Connect JSON", connect_list, requests=REQUESTS, concurrency=CONCURRENCY
                )
                noop_grpc = await measure(
                    "no-op (Health/Check), gRPC", grpc_noop, requests=REQUESTS, concurrency=CONCURRENCY
                )
                list_grpc = await measure("ListGroups x50, gRPC", grpc_list, requests=REQUESTS, concurrency=CONCURRENCY)
    print(f"concurrency {CONCURRENCY}, {REQUESTS} requests per case; ratio = req/s relative to the no-op")
    print_table([noop_connect, list_connect], noop_connect)
    print_table([noop_grpc, list_grpc], noop_grpc)
