"""A real read — ListGroups of a tenant with 50 groups — and a JWT-authenticated read (GetCurrentUser with a session
token), over Connect JSON and over gRPC, against the no-op baseline served by the same process
(grpc.health.v1.Health/Check, which answers from memory without authentication), on SQLite and on PostgreSQL.

The goal is at least half the no-op's rate. The load generator shares the machine with the server, so absolute
req/s understate a dedicated server; compare the ratios.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping

import aiohttp
import grpc

from bench._backends import backends, using
from bench.common import Measurement, measure, print_table, running_server
from gen.grpc.health.v1.health_pb2 import HealthCheckRequest
from gen.grpc.health.v1.health_pb2_grpc import HealthStub
from gen.platform.tenants.v1.group_service_pb2 import ListGroupsRequest
from gen.platform.tenants.v1.group_service_pb2_grpc import GroupServiceStub
from gen.platform.tenants.v1.user_service_pb2 import GetCurrentUserRequest
from gen.platform.tenants.v1.user_service_pb2_grpc import UserServiceStub
from server.tokens import PLATFORM_ROLES, mint_token

REQUESTS = 3000
CONCURRENCY = 16
ROUNDS = 3


async def _rounds(cases: Mapping[str, Callable[[], Awaitable[None]]], backend: str) -> list[Measurement]:
    """Each case measured in ROUNDS interleaved rounds; the median round of each. A shared machine's load drifts
    within seconds, and interleaving gives every case the same drift."""
    runs: dict[str, list[Measurement]] = {label: [] for label in cases}
    for _ in range(ROUNDS):
        for label, call in cases.items():
            runs[label].append(await measure(f"{label} [{backend}]", call, requests=REQUESTS, concurrency=CONCURRENCY))
    return [sorted(found, key=lambda m: m.rps)[len(found) // 2] for found in runs.values()]


async def _run(backend: str) -> tuple[list[Measurement], list[Measurement]]:
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
            whoami_url = f"{base_url}/platform.tenants.v1.UserService/GetCurrentUser"
            noop_url = f"{base_url}/grpc.health.v1.Health/Check"

            async def connect_list() -> None:
                async with http.post(list_url, data=body) as resp:
                    assert len((await resp.json())["groups"]) == 50

            async def connect_whoami() -> None:
                async with http.post(whoami_url, data="{}") as resp:
                    assert (await resp.json())["user"]["userId"] == "bench-admin"

            async def connect_noop() -> None:
                async with http.post(noop_url, data="{}") as resp:
                    await resp.read()

            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                groups = GroupServiceStub(channel)
                users = UserServiceStub(channel)
                health = HealthStub(channel)
                metadata = [("authorization", f"Bearer {token}")]

                async def grpc_list() -> None:
                    response = await groups.ListGroups(ListGroupsRequest(tenant_id=tenant_id), metadata=metadata)
                    assert len(response.groups) == 50

                async def grpc_whoami() -> None:
                    await users.GetCurrentUser(GetCurrentUserRequest(), metadata=metadata)

                async def grpc_noop() -> None:
                    await health.Check(HealthCheckRequest())

                connect_cases = {
                    "no-op (Health/Check), Connect JSON": connect_noop,
                    "ListGroups x50, Connect JSON": connect_list,
                    "GetCurrentUser (JWT), Connect JSON": connect_whoami,
                }
                grpc_cases = {
                    "no-op (Health/Check), gRPC": grpc_noop,
                    "ListGroups x50, gRPC": grpc_list,
                    "GetCurrentUser (JWT), gRPC": grpc_whoami,
                }
                connect = await _rounds(connect_cases, backend)
                over_grpc = await _rounds(grpc_cases, backend)
    return connect, over_grpc


async def main() -> None:
    print(
        f"concurrency {CONCURRENCY}, {REQUESTS} requests per case and round, median of {ROUNDS} interleaved rounds; "
        "ratio = req/s relative to the same run's no-op"
    )
    for backend in backends():
        with using(backend):
            connect, over_grpc = await _run(backend)
        print_table(connect, connect[0])
        print_table(over_grpc, over_grpc[0])
