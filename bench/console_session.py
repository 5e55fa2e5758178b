"""What the console's first call costs: ConsoleService/GetSession with the sb_session cookie, on SQLite and on
PostgreSQL (when reachable), against GetCurrentUser with the same session as a bearer token (the baseline: the
same authentication, one membership read). Cases: a user in 1 tenant, and a user in 200 tenants (each described
with its role and seven capabilities). The role cache's bound is 0 here, so every call reads the database: the cost
of a cold process, and on every replica within the bound after a membership change.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

import aiohttp

from bench._backends import backends, using
from bench.common import Measurement, measure, print_table, running_server
from server.store.db import Database
from server.store.models import TenantMemberRow, TenantRow
from server.tokens import mint_token

REQUESTS = 1000
CONCURRENCY = 8
MANY = 200


async def _cases(backend: str) -> list[Measurement]:
    os.environ["SWITCHBOARD_API_KEY_CACHE_SECONDS"] = "0"  # no role cache: each call reads its memberships
    try:
        async with running_server() as (base_url, _port, settings):
            db = Database(settings.database_url)
            run = secrets.token_hex(3)
            async with db.transaction() as s:
                s.add_all(TenantRow(id=f"{run}-{i}", name=f"bench-{run}-{i:03}") for i in range(MANY))
                await s.flush()
                s.add(TenantMemberRow(tenant_id=f"{run}-0", user_id="one-tenant", role=2))
                s.add_all(
                    TenantMemberRow(tenant_id=f"{run}-{i}", user_id="many-tenants", role=1 + i % 3) for i in range(MANY)
                )
            await db.close()
            one = mint_token(settings, user_id="one-tenant")
            many = mint_token(settings, user_id="many-tenants")
            async with aiohttp.ClientSession() as http:

                async def post(path: str, headers: dict[str, str], tenants: int | None = None) -> None:
                    headers = {"Content-Type": "application/json", "Connect-Protocol-Version": "1", **headers}
                    async with http.post(f"{base_url}/{path}", data=b"{}", headers=headers) as resp:
                        payload: dict[str, Any] = await resp.json()
                        assert resp.status == 200, payload
                        assert tenants is None or len(payload["tenants"]) == tenants

                async def whoami() -> None:
                    await post("platform.tenants.v1.UserService/GetCurrentUser", {"Authorization": f"Bearer {one}"})

                async def session_one() -> None:
                    await post("switchboard.console.v1.ConsoleService/GetSession", {"Cookie": f"sb_session={one}"}, 1)

                async def session_many() -> None:
                    cookie = {"Cookie": f"sb_session={many}"}
                    await post("switchboard.console.v1.ConsoleService/GetSession", cookie, MANY)

                return [
                    await measure(
                        f"GetCurrentUser, bearer [{backend}]", whoami, requests=REQUESTS, concurrency=CONCURRENCY
                    ),
                    await measure(
                        f"GetSession, cookie, 1 tenant [{backend}]",
                        session_one,
                        requests=REQUESTS,
                        concurrency=CONCURRENCY,
                    ),
                    await measure(
                        f"GetSession, cookie, {MANY} tenants [{backend}]",
                        session_many,
                        requests=REQUESTS // 5,
                        concurrency=CONCURRENCY,
                    ),
                ]
    finally:
        os.environ.pop("SWITCHBOARD_API_KEY_CACHE_SECONDS", None)


async def main() -> None:
    print(f"concurrency {CONCURRENCY}; ratio = req/s relative to GetCurrentUser with the same session")
    for backend in backends():
        with using(backend):
            rows = await _cases(backend)
        print_table(rows, rows[0])
