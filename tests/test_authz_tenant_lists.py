"""Lists narrowed to one tenant (`tenantId` on ListRags and ListPresetAgents) answer only callers acting in it.

Naming a tenant the caller does not act in is `permission_denied`, as for every other tenant-scoped request, never
an empty list that would read as "this tenant has none": a session must belong to the tenant (a platform tenant
manager: any tenant), a key only ever names its own.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import KINDS, UNUSABLE, Cast, Row, allow, build_cast, check_rows
from tests.test_authz_agents import new_tenant_agent
from tests.world import must

RAGS = "platform.ragmanager.v1.RagService"
AGENTS = "platform.agents.v1.PresetAgentService"
IN_TENANT = tuple(k for k in KINDS if k not in UNUSABLE and k != "outsider")


async def own_tenant(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id}


async def foreign_tenant(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.world.other_tenant_id}  # the outsider's tenant (an admin there)


ROWS = [
    Row(f"{service}/{method}", body, expect, get=True)
    for service, method in ((RAGS, "ListRags"), (AGENTS, "ListPresetAgents"))
    for body, expect in (
        (own_tenant, allow(*IN_TENANT)),
        (foreign_tenant, allow("outsider", "platform_admin")),
    )
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_naming_a_tenant_outside_reach_is_refused(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)


async def test_agents_narrowed_to_a_tenant(server: Any, connect: ConnectJsonCaller, cast: Cast) -> None:
    body = await new_tenant_agent(cast, connect)
    created = must(await connect.call(f"{AGENTS}/CreatePresetAgent", body, token=cast.tokens["creator"]))
    name = created["presetAgent"]["name"]

    async def listed(tenant_id: str, token: str | None) -> list[dict[str, Any]]:
        found = must(await connect.call(f"{AGENTS}/ListPresetAgents", {"tenantId": tenant_id}, token=token, get=True))
        return list(found.get("presetAgents", []))

    mine = await listed(cast.tenant_id, cast.tokens["creator"])
    assert name in [a["name"] for a in mine] and {a["tenantId"] for a in mine} == {cast.tenant_id}
    theirs = await listed(cast.world.other_tenant_id, server.admin_token)
    assert name not in [a["name"] for a in theirs]
    assert {a.get("tenantId") for a in theirs} <= {cast.world.other_tenant_id}
    gone = await connect.call(f"{AGENTS}/ListPresetAgents", {"tenantId": "no-such-tenant"}, token=server.admin_token)
    assert gone.code == "not_found"
