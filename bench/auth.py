"""What authentication and authorization cost.

1. Over HTTP, on SQLite and on PostgreSQL (when reachable): a no-auth request (grpc.health.v1.Health/Check) as
   the baseline, then GetCurrentUser with a session token, with an API key whose lookup is cached (warm), and — on a
   second server whose key cache is disabled — with a key looked up in the database on every request (cold).
2. In process: permissions.can_read and readable_names for a user on a tenant with 1,000 resources and 100 groups,
   against a trivial query on the same session as the baseline.
"""

from __future__ import annotations

import os
import secrets
import time
from typing import Any

import aiohttp

from bench._backends import backends, using
from bench.common import Measurement, measure, print_table, running_server
from server import permissions
from server.domain.principal import Principal
from server.store.db import Database
from server.store.models import GroupMemberRow, GroupRow, ResourcePermissionRow, TenantMemberRow, TenantRow
from server.tokens import PLATFORM_ROLES, mint_token

REQUESTS = 2000
CONCURRENCY = 16


async def _http_cases(cache_seconds: str, backend: str) -> dict[str, Measurement]:
    os.environ["SWITCHBOARD_API_KEY_CACHE_SECONDS"] = cache_seconds
    results: dict[str, Measurement] = {}
    async with running_server() as (base_url, _port, settings):
        admin = mint_token(settings, user_id="bench-admin", roles=PLATFORM_ROLES)
        user = mint_token(settings, user_id="bench-user")
        async with aiohttp.ClientSession() as http:

            async def post(path: str, body: dict[str, Any], token: str | None) -> dict[str, Any]:
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with http.post(f"{base_url}/{path}", json=body, headers=headers) as resp:
                    payload: dict[str, Any] = await resp.json()
                    assert resp.status == 200, payload
                    return payload

            tenant = (await post("platform.tenants.v1.TenantService/CreateTenant", {"name": "bench"}, admin))["tenant"]
            await post(
                "platform.tenants.v1.TenantService/AddTenantMember",
                {"tenantId": tenant["id"], "userId": "bench-user"},
                admin,
            )
            key = await post(
                "platform.tenants.v1.ApiKeyService/CreateApiKey",
                {"tenantId": tenant["id"], "type": "API_KEY_TYPE_PERSONAL", "name": "bench"},
                user,
            )
            whoami = "platform.tenants.v1.UserService/GetCurrentUser"

            async def noop() -> None:
                await post("grpc.health.v1.Health/Check", {}, None)

            async def with_session() -> None:
                await post(whoami, {}, user)

            async def with_key() -> None:
                await post(whoami, {}, key["secret"])

            label = "warm" if float(cache_seconds) > 0 else "cold"
            if label == "warm":
                results["noop"] = await measure(
                    f"no auth (Health/Check) [{backend}]", noop, requests=REQUESTS, concurrency=CONCURRENCY
                )
                results["session"] = await measure(
                    f"session token (JWT) [{backend}]", with_session, requests=REQUESTS, concurrency=CONCURRENCY
                )
            results[label] = await measure(
                f"API key, {label} (cache {'hit' if label == 'warm' else 'miss'}) [{backend}]",
                with_key,
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            )
    return results


async def _permission_cases() -> None:
    url = os.environ.get("SWITCHBOARD_BENCH_DATABASE_URL", "")
    async with running_server() as (_base, _port, settings):
        db = Database(url or settings.database_url)
        tenant = f"t-{secrets.token_hex(3)}"
        reader = Principal(user_id="reader")
        async with db.transaction() as s:
            s.add(TenantRow(id=tenant, name=tenant))
            await s.flush()
            s.add(TenantMemberRow(tenant_id=tenant, user_id="reader", role=2))
            s.add_all(GroupRow(id=f"{tenant}-g{i}", tenant_id=tenant, name=f"g{i}") for i in range(100))
            await s.flush()
            s.add_all(GroupMemberRow(group_id=f"{tenant}-g{i}", user_id="reader") for i in range(0, 100, 10))
            creator = Principal(user_id="creator")
            for i in range(1000):
                ref = permissions.ResourceRef(permissions.ResourceKind.RAG, f"{tenant}-r{i}")
                await permissions.create_resource(
                    s, creator, ref, tenant_id=tenant, sharing=permissions.Sharing(share_to_all=i % 7 == 0)
                )
                if i % 5 == 0:
                    s.add(
                        ResourcePermissionRow(
                            kind=int(ref.kind), name=ref.name, subject_type=2, subject_id=f"{tenant}-g{i % 100}", role=1
                        )
                    )
        target = permissions.ResourceRef(permissions.ResourceKind.RAG, f"{tenant}-r500")
        rounds = 300

        async def timed(label: str, body: Any) -> float:
            start = time.perf_counter()
            for _ in range(rounds):
                async with db.read() as s:
                    await body(s)
            per_op = (time.perf_counter() - start) / rounds * 1e6
            return per_op

        from sqlalchemy import text

        baseline = await timed("SELECT 1", lambda s: s.execute(text("SELECT 1")))
        single = await timed("can_read", lambda s: permissions.can_read(s, reader, target))

        async def listing(s: Any) -> None:
            names = await permissions.readable_names(s, reader, permissions.ResourceKind.RAG)
            assert 0 < len(names) < 1000

        readable = await timed("readable_names", listing)
        await db.close()
    print(f"{'permission check (1,000 resources, 100 groups)':<48} {'µs/op':>9} {'vs SELECT 1':>12}")
    for label, value in (
        ("SELECT 1 on a fresh session (baseline)", baseline),
        ("can_read, one resource", single),
        ("readable_names, all 1,000 (one query)", readable),
    ):
        print(f"{label:<48} {value:>9.0f} {value / baseline:>11.2f}x")


async def main() -> None:
    print(f"concurrency {CONCURRENCY}, {REQUESTS} requests per case; ratio = req/s relative to no auth")
    for backend in backends():
        with using(backend):
            warm = await _http_cases("5", backend)
        with using(backend):
            cold = await _http_cases("0", backend)
        os.environ.pop("SWITCHBOARD_API_KEY_CACHE_SECONDS", None)
        print_table([warm["noop"], warm["session"], warm["warm"], cold["cold"]], warm["noop"])
    await _permission_cases()
