"""RagQuotaService, all 13 methods: quotas per RAG, per tenant and the tenant default, echoed as set; usage reads;
gates; and what the enforcement (server.domain.rag_storage) reports back through them."""

from __future__ import annotations

from typing import Any

import pytest

from server.domain.rag_storage import reserve_storage
from server.errors import QuotaExceeded
from server.store.db import Database as Db
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Server
from tests.rag_helpers import QUOTAS, RAGS, model, new_rag
from tests.schema import only_request_fields
from tests.world import World, must


@pytest.fixture
async def rags(server: Server, connect: ConnectJsonCaller, world: World) -> list[str]:
    embedder = (await model(connect, server.admin_token))["publicModelId"]
    return [(await new_rag(connect, world.tokens["editor"], world.tenant_id, embedder))["id"] for _ in range(3)]


class Ops:
    def __init__(self, connect: ConnectJsonCaller, token: str) -> None:
        self.connect, self.token = connect, token

    async def __call__(self, method: str, body: dict[str, Any], *, token: str | None = None) -> Result:
        get = method.startswith(("Get", "List"))
        return await self.connect.call(f"{QUOTAS}/{method}", body, token=token or self.token, get=get)


@pytest.fixture
def ops(connect: ConnectJsonCaller, server: Server) -> Ops:
    return Ops(connect, server.admin_token)


async def _reserve(db: Db, rag_id: str, nbytes: int) -> None:
    async with db.transaction() as session:
        await reserve_storage(session, rag_id=rag_id, nbytes=nbytes)


async def test_rag_quota_set_get_unset_echoes_the_quantity(ops: Ops, world: World, rags: list[str]) -> None:
    t, rag = world.tenant_id, rags[0]
    assert must(await ops("GetQuota", {"tenantId": t, "id": rag})) == {"id": rag, "tenantId": t}
    must(await ops("SetQuota", {"tenantId": t, "id": rag, "quota": "1.5Gi"}))
    got = must(await ops("GetQuota", {"tenantId": t, "id": rag}))
    assert got == {"id": rag, "tenantId": t, "quotaBytes": str(3 * 2**29), "quota": "1.5Gi"}
    must(await ops("SetQuota", {"tenantId": t, "id": rag, "quota": "1e3"}))
    assert must(await ops("GetQuota", {"tenantId": t, "id": rag}))["quota"] == "1e3"
    must(await ops("UnsetQuota", {"tenantId": t, "id": rag}))
    must(await ops("UnsetQuota", {"tenantId": t, "id": rag}))  # removing what is not there is not an error
    assert "quota" not in must(await ops("GetQuota", {"tenantId": t, "id": rag}))


async def test_a_fractional_mantissa_with_a_large_exponent_is_computed_exactly(
    ops: Ops, world: World, rags: list[str]
) -> None:
    """The parser bounded the exponent before folding in the mantissa's fraction digits (found by probing): `0.<49
    zeros>1e65` (10^15 bytes) was stored as 10^14, and a value above int64 written that way was accepted."""
    t, rag = world.tenant_id, rags[0]
    quota = "0." + "0" * 49 + "1e65"  # 55 characters, within the 64-character bound
    must(await ops("SetQuota", {"tenantId": t, "id": rag, "quota": quota}))
    got = must(await ops("GetQuota", {"tenantId": t, "id": rag}))
    assert (got["quota"], got["quotaBytes"]) == (quota, str(10**15)), got
    too_large = await ops("SetQuota", {"tenantId": t, "id": rag, "quota": "0." + "0" * 49 + "1e69"})  # 10^19
    assert too_large.code == "invalid_argument" and "int64" in too_large.message, too_large
    assert must(await ops("GetQuota", {"tenantId": t, "id": rag}))["quota"] == quota


async def test_tenant_and_default_quotas(ops: Ops, world: World, rags: list[str]) -> None:
    t = world.tenant_id
    assert must(await ops("GetTenantQuota", {"tenantId": t})) == {"tenantId": t}
    assert must(await ops("GetDefaultQuota", {"tenantId": t})) == {"tenantId": t}
    must(await ops("SetTenantQuota", {"tenantId": t, "quota": "10G"}))
    must(await ops("SetDefaultQuota", {"tenantId": t, "defaultQuota": "512Mi"}))
    assert must(await ops("GetTenantQuota", {"tenantId": t})) == {
        "tenantId": t,
        "quotaBytes": str(10**10),
        "quota": "10G",
    }
    assert must(await ops("GetDefaultQuota", {"tenantId": t})) == {
        "tenantId": t,
        "defaultQuotaBytes": str(512 * 2**20),
        "defaultQuota": "512Mi",
    }
    # The default applies to RAGs without a quota of their own; their own wins.
    must(await ops("SetQuota", {"tenantId": t, "id": rags[1], "quota": "1Gi"}))
    assert must(await ops("GetQuota", {"tenantId": t, "id": rags[0]}))["quota"] == "512Mi"
    assert must(await ops("GetQuota", {"tenantId": t, "id": rags[1]}))["quota"] == "1Gi"
    must(await ops("UnsetDefaultQuota", {"tenantId": t}))
    must(await ops("UnsetTenantQuota", {"tenantId": t}))
    assert must(await ops("GetTenantQuota", {"tenantId": t})) == {"tenantId": t}
    assert must(await ops("GetDefaultQuota", {"tenantId": t})) == {"tenantId": t}
    assert "quota" not in must(await ops("GetQuota", {"tenantId": t, "id": rags[0]}))


async def test_batch_set_and_unset_are_all_or_nothing(ops: Ops, world: World, rags: list[str]) -> None:
    t = world.tenant_id
    must(await ops("BatchSetQuota", {"tenantId": t, "ids": rags[:2], "quota": "2Mi"}))
    for rag, expected in ((rags[0], "2Mi"), (rags[1], "2Mi"), (rags[2], None)):
        assert must(await ops("GetQuota", {"tenantId": t, "id": rag})).get("quota") == expected
    unknown = await ops("BatchSetQuota", {"tenantId": t, "ids": [rags[2], "rag_nope"], "quota": "1Mi"})
    assert unknown.code == "not_found" and "rag_nope" in unknown.message
    assert "quota" not in must(await ops("GetQuota", {"tenantId": t, "id": rags[2]}))
    other = await ops("BatchUnsetQuota", {"tenantId": world.other_tenant_id, "ids": rags[:1]})
    assert other.code == "not_found"  # a RAG of another tenant is not addressable through this one
    must(await ops("BatchUnsetQuota", {"tenantId": t, "ids": rags[:2]}))
    for rag in rags:
        assert "quota" not in must(await ops("GetQuota", {"tenantId": t, "id": rag}))


BAD_REQUESTS = [
    ("SetQuota", {"quota": "-1"}, "invalid_argument", "quota"),
    ("SetQuota", {"quota": "1KB"}, "invalid_argument", "quota"),
    ("SetQuota", {"quota": ""}, "invalid_argument", "quota"),
    ("SetQuota", {"quota": "8Ei"}, "invalid_argument", "quota"),
    ("SetQuota", {"id": "", "quota": "1"}, "invalid_argument", "id"),
    ("SetQuota", {"id": "rag_missing", "quota": "1"}, "not_found", "rag_missing"),
    ("SetTenantQuota", {"quota": "ten"}, "invalid_argument", "quota"),
    ("SetDefaultQuota", {"defaultQuota": "1.5.5"}, "invalid_argument", "default_quota"),
    ("BatchSetQuota", {"ids": [], "quota": "1"}, "invalid_argument", "ids"),
    ("BatchSetQuota", {"quota": "x1"}, "invalid_argument", "quota"),
    ("BatchUnsetQuota", {"ids": [""]}, "invalid_argument", "ids"),
    ("GetQuota", {"id": "rag_missing"}, "not_found", "rag_missing"),
    ("SetTenantQuota", {"tenantId": "ten_missing", "quota": "1"}, "not_found", "ten_missing"),
    ("GetTenantUsage", {"tenantId": "ten_missing"}, "not_found", "ten_missing"),
]


@pytest.mark.parametrize("case", BAD_REQUESTS)
async def test_bad_requests_name_the_field(
    ops: Ops, world: World, rags: list[str], case: tuple[str, dict[str, Any], str, str]
) -> None:
    method, fields, code, named = case
    context = {"tenantId": world.tenant_id, "id": rags[0], "ids": rags[:1], **fields}
    result = await ops(method, only_request_fields(f"{QUOTAS}/{method}", context))
    assert result.code == code and named in result.message, result
    assert "quota" not in must(await ops("GetQuota", {"tenantId": world.tenant_id, "id": rags[0]}))
    assert "quota" not in must(await ops("GetTenantQuota", {"tenantId": world.tenant_id}))


async def test_usage_is_reported_exactly(
    ops: Ops, connect: ConnectJsonCaller, world: World, rags: list[str], db: Db
) -> None:
    t = world.tenant_id
    for rag, nbytes in zip(rags, (5, 7_000_000_000, 0), strict=True):
        await _reserve(db, rag, nbytes)
    must(await ops("SetTenantQuota", {"tenantId": t, "quota": "1e12"}))
    must(await ops("SetQuota", {"tenantId": t, "id": rags[0], "quota": "1Ki"}))
    usage = must(await ops("GetTenantUsage", {"tenantId": t}))
    assert usage["tenantTotalUsedBytes"] == "7000000005"
    assert usage["tenantQuotaBytes"] == str(10**12) and usage["tenantQuota"] == "1e12"
    services = {s["id"]: s for s in usage["services"]}
    assert set(services) == set(rags)
    assert services[rags[0]] == {"id": rags[0], "tenantId": t, "quotaBytes": "1024", "usedBytes": "5", "quota": "1Ki"}
    assert services[rags[1]] == {"id": rags[1], "tenantId": t, "usedBytes": "7000000000"}
    assert int(services[rags[2]].get("usedBytes", "0")) == 0
    tenants = {s["tenantId"]: s for s in must(await ops("ListTenantsUsage", {}))["tenants"]}
    mine, other = tenants[t], tenants[world.other_tenant_id]
    assert mine["serviceCount"] == 3 and mine["totalUsedBytes"] == "7000000005"
    assert mine["tenantQuota"] == "1e12" and mine["tenantQuotaBytes"] == str(10**12)
    assert mine["tenantName"].startswith("acme-")
    assert other.get("serviceCount", 0) == 0 and "tenantQuota" not in other
    # Deleting a RAG deletes its content and frees its usage.
    must(await connect.call(f"{RAGS}/DeleteRag", {"id": rags[1]}, token=world.tokens["editor"]))
    after = must(await ops("GetTenantUsage", {"tenantId": t}))
    assert after["tenantTotalUsedBytes"] == "5" and len(after["services"]) == 2


async def test_quotas_are_enforced_as_set(ops: Ops, world: World, rags: list[str], db: Db) -> None:
    t = world.tenant_id
    must(await ops("SetDefaultQuota", {"tenantId": t, "defaultQuota": "100"}))
    must(await ops("SetQuota", {"tenantId": t, "id": rags[1], "quota": "250"}))
    await _reserve(db, rags[0], 100)
    with pytest.raises(QuotaExceeded, match="default RAG quota of 100"):
        await _reserve(db, rags[0], 1)
    await _reserve(db, rags[1], 250)
    with pytest.raises(QuotaExceeded, match="storage quota of 250"):
        await _reserve(db, rags[1], 1)
    must(await ops("SetTenantQuota", {"tenantId": t, "quota": "400"}))
    must(await ops("UnsetDefaultQuota", {"tenantId": t}))
    await _reserve(db, rags[2], 50)
    with pytest.raises(QuotaExceeded, match="tenant's RAG storage quota of 400"):
        await _reserve(db, rags[2], 1)
    usage = must(await ops("GetTenantUsage", {"tenantId": t}))
    assert usage["tenantTotalUsedBytes"] == "400"  # refusals stored nothing
    # Lowering a quota below usage refuses further uploads but keeps what is stored.
    must(await ops("SetQuota", {"tenantId": t, "id": rags[1], "quota": "10"}))
    assert must(await ops("GetQuota", {"tenantId": t, "id": rags[1]}))["usedBytes"] == "250"


async def test_gates(ops: Ops, world: World, rags: list[str]) -> None:
    t = world.tenant_id
    for person in ("admin", "editor", "member", "outsider"):
        for method, body in (
            ("SetQuota", {"tenantId": t, "id": rags[0], "quota": "1"}),
            ("SetTenantQuota", {"tenantId": t, "quota": "1"}),
            ("SetDefaultQuota", {"tenantId": t, "defaultQuota": "1"}),
            ("ListTenantsUsage", {}),
        ):
            assert (await ops(method, body, token=world.tokens[person])).code == "permission_denied", (person, method)
    must(await ops("GetTenantUsage", {"tenantId": t}, token=world.tokens["admin"]))
    must(await ops("GetQuota", {"tenantId": t, "id": rags[0]}, token=world.tokens["admin"]))
    for person in ("editor", "member", "outsider"):
        result = await ops("GetTenantUsage", {"tenantId": t}, token=world.tokens[person])
        assert result.code == "permission_denied", person
