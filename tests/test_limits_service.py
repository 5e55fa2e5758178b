"""LimitService (switchboard.limits.v1): policies set, echoed, listed and deleted; field errors; who may do what
(operators: platform tier; tenant admins: tenant tier within the operator's limits; never keys); usage reads."""

from __future__ import annotations

import base64
import secrets
from typing import Any

import orjson
import pytest

from tests.clients import Caller, ConnectJsonCaller, Result
from tests.conftest import Server
from tests.world import World, make_world, must

LIMITS = "switchboard.limits.v1.LimitService"
KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"
PLATFORM, TENANT = "LIMIT_TIER_PLATFORM", "LIMIT_TIER_TENANT"
TENANT_SCOPE = {"kind": "LIMIT_SCOPE_KIND_TENANT"}


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def call(connect: ConnectJsonCaller, method: str, body: dict[str, Any], token: str) -> Result:
    return await connect.call(f"{LIMITS}/{method}", body, token=token, get=method.startswith(("Get", "List")))


def policy(tenant: str, tier: str, scope: dict[str, str], **limits: Any) -> dict[str, Any]:
    return {"tenantId": tenant, "tier": tier, "scope": scope, "limits": limits}


async def personal_key(connect: ConnectJsonCaller, world: World, person: str) -> tuple[str, str]:
    """(key id, secret) of a Personal (all resources) key of `person`."""
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": f"k-{person}"}
    created = must(await connect.call(f"{KEYS}/CreateApiKey", body, token=world.tokens[person]))
    return created["apiKey"]["id"], created["secret"]


async def test_set_list_echo_and_delete_through_every_client(
    caller: Caller, server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    admin, t = server.admin_token, world.tenant_id
    ceiling = policy(t, PLATFORM, TENANT_SCOPE, requestsPerMinute="600", tokensPerMinute="1M")
    got = await caller.call(f"{LIMITS}/SetLimitPolicy", ceiling, token=admin)
    assert got.ok, got
    stored = got.body["policy"]
    assert stored["limits"] == {"requestsPerMinute": "600", "tokensPerMinute": "1M"}
    assert stored["tier"] == PLATFORM and stored["scope"] == TENANT_SCOPE and "updateTime" in stored
    key_id, _ = await personal_key(connect, world, "member")
    mine = policy(
        t,
        TENANT,
        {"kind": "LIMIT_SCOPE_KIND_API_KEY", "id": key_id},
        requestsPerMinute="10",
        concurrentRequests="2",
        tokenBudget="2.5M",
        budgetPeriod="BUDGET_PERIOD_MONTH",
        softBudget="2M",
    )
    assert (await caller.call(f"{LIMITS}/SetLimitPolicy", mine, token=world.tokens["admin"])).ok
    listed = await caller.call(f"{LIMITS}/ListLimitPolicies", {"tenantId": t}, token=world.tokens["admin"], get=True)
    assert listed.ok, listed
    assert [(p["tier"], p["scope"].get("id", "")) for p in listed.body["policies"]] == [
        (PLATFORM, ""),
        (TENANT, key_id),
    ]
    assert listed.body["policies"][1]["limits"]["tokenBudget"] == "2.5M"
    gone = {"tenantId": t, "tier": TENANT, "scope": mine["scope"]}
    assert (await caller.call(f"{LIMITS}/DeleteLimitPolicy", gone, token=world.tokens["admin"])).ok
    again = await caller.call(f"{LIMITS}/DeleteLimitPolicy", gone, token=world.tokens["admin"])
    assert again.code == "not_found"
    listed = must(await call(connect, "ListLimitPolicies", {"tenantId": t}, world.tokens["admin"]))
    assert len(listed["policies"]) == 1


async def test_list_of_one_scope_for_the_same_readers(server: Server, connect: ConnectJsonCaller, world: World) -> None:
    """What the console's panel beside a key, a service account, a tenant or a model asks for: the policies set on
    exactly that scope, both tiers, and not the rest of the tenant's; who may list is who may list them all."""
    t, admin, operator = world.tenant_id, world.tokens["admin"], server.admin_token
    body = {"tenantId": t, "name": f"sa-{secrets.token_hex(3)}"}
    account = must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=admin))
    account_scope = {"kind": "LIMIT_SCOPE_KIND_SERVICE_ACCOUNT", "id": account["serviceAccount"]["id"]}
    key_id, secret = await personal_key(connect, world, "member")
    key_scope = {"kind": "LIMIT_SCOPE_KIND_API_KEY", "id": key_id}
    must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, TENANT_SCOPE, requestsPerMinute="600"), operator))
    must(await call(connect, "SetLimitPolicy", policy(t, TENANT, account_scope, requestsPerMinute="60"), admin))
    must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, account_scope, tokensPerMinute="9k"), operator))
    must(await call(connect, "SetLimitPolicy", policy(t, TENANT, key_scope, concurrentRequests="2"), admin))
    for token in (admin, operator):
        got = must(await call(connect, "ListLimitPolicies", {"tenantId": t, "scope": account_scope}, token))
        assert [(p["tier"], p["scope"], p["limits"]) for p in got["policies"]] == [
            (PLATFORM, account_scope, {"tokensPerMinute": "9k"}),
            (TENANT, account_scope, {"requestsPerMinute": "60"}),
        ]
    got = must(await call(connect, "ListLimitPolicies", {"tenantId": t, "scope": TENANT_SCOPE}, admin))
    assert [(p["tier"], p["scope"]) for p in got["policies"]] == [(PLATFORM, TENANT_SCOPE)]
    got = must(await call(connect, "ListLimitPolicies", {"tenantId": t, "scope": key_scope}, admin))
    assert [(p["tier"], p["scope"]) for p in got["policies"]] == [(TENANT, key_scope)]
    # A scope with no policy lists nothing: a model's here, and the same key named in another tenant (its admin's).
    model_scope = {"kind": "LIMIT_SCOPE_KIND_MODEL", "id": "no-limits-here"}
    assert must(await call(connect, "ListLimitPolicies", {"tenantId": t, "scope": model_scope}, admin)) == {}
    elsewhere = {"tenantId": world.other_tenant_id, "scope": key_scope}
    assert must(await call(connect, "ListLimitPolicies", elsewhere, world.tokens["outsider"])) == {}
    # Without a scope, every policy of the tenant, as before.
    assert len(must(await call(connect, "ListLimitPolicies", {"tenantId": t}, admin))["policies"]) == 4
    ask = {"tenantId": t, "scope": account_scope}
    for token in (world.tokens["member"], world.tokens["editor"], world.tokens["outsider"], secret):
        assert (await call(connect, "ListLimitPolicies", ask, token)).code == "permission_denied"
    for scope, field in (
        ({"kind": "LIMIT_SCOPE_KIND_TENANT", "id": "x"}, "scope.id"),
        ({"kind": "LIMIT_SCOPE_KIND_API_KEY"}, "scope.id"),
        ({"kind": "LIMIT_SCOPE_KIND_UNSPECIFIED"}, "scope.kind"),
    ):
        refused = await call(connect, "ListLimitPolicies", {"tenantId": t, "scope": scope}, admin)
        assert refused.code == "invalid_argument" and field in refused.message, (scope, refused)


async def _walk(connect: ConnectJsonCaller, token: str, size: int, **body: Any) -> tuple[list[dict[str, Any]], int]:
    """Every page of ListLimitPolicies of `size`, and how many calls that took."""
    items: list[dict[str, Any]] = []
    page_token, calls = "", 0
    while True:
        page = {"pageSize": size, "pageToken": page_token}
        answer = must(await call(connect, "ListLimitPolicies", {**body, "page": page}, token))
        calls += 1
        assert len(answer.get("policies", [])) <= size
        items += answer.get("policies", [])
        page_token = answer.get("nextPageToken", "")
        if not page_token:
            return items, calls
        assert calls < 100


def _named(policies: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(p["tier"], p["scope"]["kind"], p["scope"].get("id", "")) for p in policies]


async def test_policies_a_page_at_a_time(server: Server, connect: ConnectJsonCaller, world: World) -> None:
    """Walking the pages answers the whole list, by tier, scope kind and id, for every page size (also sizes that
    divide it evenly: a full last page carries no token); policies deleted or set between pages never make the walk
    repeat or skip one that stayed; bad sizes and tokens are refused naming their field."""
    t, admin, operator = world.tenant_id, world.tokens["admin"], server.admin_token
    accounts = []
    for i in range(5):
        body = {"tenantId": t, "name": f"sa-{i}-{secrets.token_hex(3)}"}
        created = must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=admin))
        accounts.append({"kind": "LIMIT_SCOPE_KIND_SERVICE_ACCOUNT", "id": created["serviceAccount"]["id"]})
    must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, TENANT_SCOPE, requestsPerMinute="600"), operator))
    must(await call(connect, "SetLimitPolicy", policy(t, TENANT, TENANT_SCOPE, requestsPerMinute="500"), admin))
    for scope in accounts:
        must(await call(connect, "SetLimitPolicy", policy(t, TENANT, scope, requestsPerMinute="60"), admin))
    sa = "LIMIT_SCOPE_KIND_SERVICE_ACCOUNT"
    ids = sorted(scope["id"] for scope in accounts)  # hex after one prefix: the same order in every collation
    for account_id in ids[:2]:
        scope = {"kind": sa, "id": account_id}
        must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, scope, requestsPerMinute="70"), operator))
    own = {"tenantId": t}
    whole = must(await call(connect, "ListLimitPolicies", {**own, "page": {"pageSize": 500}}, admin))["policies"]
    assert _named(whole) == [
        (PLATFORM, "LIMIT_SCOPE_KIND_TENANT", ""),
        *[(PLATFORM, sa, i) for i in ids[:2]],
        (TENANT, "LIMIT_SCOPE_KIND_TENANT", ""),
        *[(TENANT, sa, i) for i in ids],
    ]
    assert must(await call(connect, "ListLimitPolicies", own, admin)) == {"policies": whole}  # the default page: 50
    for size in (1, 2, 3, len(whole), len(whole) + 1, 500):
        items, calls = await _walk(connect, admin, size, **own)
        assert items == whole, size
        assert calls == -(-len(whole) // size), size
    # One scope's policies page too (both tiers of an account, one at a time).
    assert _named((await _walk(connect, admin, 1, **own, scope={"kind": sa, "id": ids[0]}))[0]) == [
        (PLATFORM, sa, ids[0]),
        (TENANT, sa, ids[0]),
    ]

    # Three policies into a walk of pages of three (up to the platform's on ids[1]): one of them and one still ahead
    # deleted, one set ahead (the platform's on ids[-1]).
    first = must(await call(connect, "ListLimitPolicies", {**own, "page": {"pageSize": 3}}, admin))
    passed, ahead = first["policies"][0], whole[5]
    for gone in (passed, ahead):
        body = {"tenantId": t, "tier": gone["tier"], "scope": gone["scope"]}
        must(await call(connect, "DeleteLimitPolicy", body, admin if gone["tier"] == TENANT else operator))
    added = {"kind": sa, "id": ids[-1]}
    must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, added, requestsPerMinute="80"), operator))
    rest: list[dict[str, Any]] = []
    page_token = first["nextPageToken"]
    while page_token:
        page = {"pageSize": 3, "pageToken": page_token}
        answer = must(await call(connect, "ListLimitPolicies", {**own, "page": page}, admin))
        rest += answer.get("policies", [])
        page_token = answer.get("nextPageToken", "")
    walked = _named(first["policies"] + rest)
    now = _named(must(await call(connect, "ListLimitPolicies", {**own, "page": {"pageSize": 500}}, admin))["policies"])
    mark = _named(first["policies"])[-1]  # still there: the rest of the walk is what follows it now
    assert walked == _named(first["policies"]) + now[now.index(mark) + 1 :]
    assert len(walked) == len(set(walked)) == len(whole)  # one gone, one new; none twice
    assert _named([ahead])[0] not in walked
    assert (PLATFORM, sa, ids[-1]) in walked  # set after the walk's position: reached

    for size in (-1, 501):
        refused = await call(connect, "ListLimitPolicies", {**own, "page": {"pageSize": size}}, admin)
        assert refused.code == "invalid_argument" and "page_size" in refused.message, size
    other = await connect.call(
        "switchboard.tenants.v1.TenantListService/ListServiceAccounts",
        {**own, "page": {"pageSize": 1}},
        token=admin,
        get=True,
    )
    not_a_tier = base64.urlsafe_b64encode(orjson.dumps(["limit_policies", "x", "1", ""])).decode()
    for forged in (must(other)["nextPageToken"], "not-a-token", "W10", not_a_tier):
        refused = await call(connect, "ListLimitPolicies", {**own, "page": {"pageToken": forged}}, admin)
        assert refused.code == "invalid_argument" and "page_token" in refused.message, forged


@pytest.mark.parametrize(
    ("limits", "field"),
    [
        ({"requestsPerMinute": "ten"}, "limits.requests_per_minute"),
        ({"tokensPerMinute": "-5"}, "limits.tokens_per_minute"),
        ({"concurrentRequests": "0"}, "limits.concurrent_requests"),
        ({"tokenBudget": "1M"}, "limits.budget_period"),
        ({"softBudget": "1M"}, "limits.token_budget"),
        ({"tokenBudget": "1M", "budgetPeriod": "BUDGET_PERIOD_DAY", "softBudget": "2M"}, "limits.soft_budget"),
        # Reached before any call is made, so no call could be recorded crossing it: refused as a limit of 0 is.
        ({"tokenBudget": "1M", "budgetPeriod": "BUDGET_PERIOD_DAY", "softBudget": "0"}, "limits.soft_budget"),
        ({}, "limits"),
    ],
)
async def test_bad_limits_name_their_field(
    server: Server, connect: ConnectJsonCaller, world: World, limits: dict[str, str], field: str
) -> None:
    got = await call(
        connect, "SetLimitPolicy", policy(world.tenant_id, PLATFORM, TENANT_SCOPE, **limits), server.admin_token
    )
    assert got.code == "invalid_argument", got
    assert field in got.message
    listed = must(await call(connect, "ListLimitPolicies", {"tenantId": world.tenant_id}, server.admin_token))
    assert listed.get("policies", []) == []  # nothing half-written


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({"tier": "LIMIT_TIER_UNSPECIFIED", "scope": TENANT_SCOPE}, "invalid_argument", "tier"),
        ({"tier": PLATFORM, "scope": {"kind": "LIMIT_SCOPE_KIND_UNSPECIFIED"}}, "invalid_argument", "scope.kind"),
        ({"tier": PLATFORM, "scope": {"kind": "LIMIT_SCOPE_KIND_TENANT", "id": "x"}}, "invalid_argument", "scope.id"),
        ({"tier": PLATFORM, "scope": {"kind": "LIMIT_SCOPE_KIND_API_KEY"}}, "invalid_argument", "scope.id"),
        ({"tier": PLATFORM, "scope": {"kind": "LIMIT_SCOPE_KIND_API_KEY", "id": "nope"}}, "not_found", "API key"),
        ({"tier": PLATFORM, "scope": {"kind": "LIMIT_SCOPE_KIND_MODEL", "id": "no-such-model"}}, "not_found", "model"),
        (
            {"tier": PLATFORM, "scope": {"kind": "LIMIT_SCOPE_KIND_SERVICE_ACCOUNT", "id": "nope"}},
            "not_found",
            "service account",
        ),
    ],
)
async def test_bad_scopes_are_refused(
    server: Server, connect: ConnectJsonCaller, world: World, *, body: dict[str, Any], code: str, field: str
) -> None:
    full = {"tenantId": world.tenant_id, "limits": {"requestsPerMinute": "5"}, **body}
    got = await call(connect, "SetLimitPolicy", full, server.admin_token)
    assert got.code == code, got
    assert field in got.message


async def test_who_may_set_limits(server: Server, connect: ConnectJsonCaller, world: World) -> None:
    t = world.tenant_id
    ceiling = policy(t, PLATFORM, TENANT_SCOPE, requestsPerMinute="100")
    for person in ("admin", "editor", "member", "outsider"):  # the platform tier is the operator's alone
        assert (await call(connect, "SetLimitPolicy", ceiling, world.tokens[person])).code == "permission_denied"
    must(await call(connect, "SetLimitPolicy", ceiling, server.admin_token))
    narrower = policy(t, TENANT, TENANT_SCOPE, requestsPerMinute="50")
    for person in ("editor", "member", "outsider"):
        assert (await call(connect, "SetLimitPolicy", narrower, world.tokens[person])).code == "permission_denied"
    must(await call(connect, "SetLimitPolicy", narrower, world.tokens["admin"]))
    # A tenant admin cannot widen what the operator set for the tenant.
    wider = policy(t, TENANT, TENANT_SCOPE, requestsPerMinute="101")
    got = await call(connect, "SetLimitPolicy", wider, world.tokens["admin"])
    assert got.code == "invalid_argument" and "limits.requests_per_minute" in got.message
    # Keys never set limits, not even a tenant admin's own key (refused before the body is read).
    _, secret = await personal_key(connect, world, "admin")
    assert (await call(connect, "SetLimitPolicy", narrower, secret)).code == "permission_denied"
    gone = {"tenantId": t, "tier": TENANT, "scope": TENANT_SCOPE}
    assert (await call(connect, "DeleteLimitPolicy", gone, secret)).code == "permission_denied"
    assert (
        await call(connect, "ListLimitPolicies", {"tenantId": t}, world.tokens["member"])
    ).code == "permission_denied"
    assert (await call(connect, "ListLimitPolicies", {"tenantId": t}, secret)).code == "permission_denied"


async def test_usage_reads_for_the_keys_holder_and_admins(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    t = world.tenant_id
    key_id, secret = await personal_key(connect, world, "member")
    body = {"tenantId": t, "name": f"sa-{secrets.token_hex(3)}"}
    account = must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=world.tokens["admin"]))
    account_id = account["serviceAccount"]["id"]
    must(
        await call(
            connect, "SetLimitPolicy", policy(t, PLATFORM, TENANT_SCOPE, requestsPerMinute="600"), server.admin_token
        )
    )
    scoped = {"kind": "LIMIT_SCOPE_KIND_API_KEY", "id": key_id}
    budget = {"tokenBudget": "1M", "budgetPeriod": "BUDGET_PERIOD_DAY", "softBudget": "800k", "concurrentRequests": "4"}
    must(await call(connect, "SetLimitPolicy", policy(t, TENANT, scoped, **budget), world.tokens["admin"]))
    other = {"kind": "LIMIT_SCOPE_KIND_SERVICE_ACCOUNT", "id": account_id}  # does not apply to the member's key
    must(await call(connect, "SetLimitPolicy", policy(t, TENANT, other, requestsPerMinute="1"), world.tokens["admin"]))
    for token, ask in ((secret, ""), (world.tokens["member"], key_id), (world.tokens["admin"], key_id)):
        got = must(await call(connect, "GetLimitUsage", {"tenantId": t, "apiKeyId": ask}, token))
        rows = {(r["scope"].get("id", ""), r["metric"]): r for r in got["limits"]}
        assert set(rows) == {
            ("", "LIMIT_METRIC_REQUESTS_PER_MINUTE"),
            (key_id, "LIMIT_METRIC_CONCURRENT_REQUESTS"),
            (key_id, "LIMIT_METRIC_TOKEN_BUDGET"),
        }
        budget_row = rows[(key_id, "LIMIT_METRIC_TOKEN_BUDGET")]
        assert budget_row["limit"] == "1000000" and budget_row["softLimit"] == "800000"
        assert budget_row["budgetPeriod"] == "BUDGET_PERIOD_DAY" and "resetTime" in budget_row
        # No shared counter store for this server: use is absent, never a made-up zero.
        assert "used" not in budget_row and "remaining" not in budget_row
        assert "resetTime" not in rows[(key_id, "LIMIT_METRIC_CONCURRENT_REQUESTS")]
    for person in ("editor", "outsider"):
        got = await call(connect, "GetLimitUsage", {"tenantId": t, "apiKeyId": key_id}, world.tokens[person])
        assert got.code == "permission_denied", (person, got)
    got = await call(connect, "GetLimitUsage", {"tenantId": t, "apiKeyId": "nope"}, world.tokens["admin"])
    assert got.code == "not_found"


async def test_a_usage_read_in_a_session_must_name_the_key(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """An empty apiKeyId means the calling key, which a signed-in session does not have: whoever could read a key's
    limits in the tenant is told to name one (invalid_argument: nothing was looked up, so nothing is "not found");
    anyone else is refused as when they name a key, so the missing field never answers before the gate."""
    ask = {"tenantId": world.tenant_id}
    for token in (world.tokens["admin"], world.tokens["member"], server.admin_token):
        got = await call(connect, "GetLimitUsage", ask, token)
        assert got.code == "invalid_argument" and "api_key_id" in got.message, got
    got = await call(connect, "GetLimitUsage", ask, world.tokens["outsider"])
    assert got.code == "permission_denied", got


async def test_usage_reads_of_one_scope_for_admins_and_operators(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """What the console shows beside a service account, a tenant or a model: the limits set on that scope only,
    both tiers, whichever key calls."""
    t = world.tenant_id
    body = {"tenantId": t, "name": f"sa-{secrets.token_hex(3)}"}
    account = must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=world.tokens["admin"]))
    account_scope = {"kind": "LIMIT_SCOPE_KIND_SERVICE_ACCOUNT", "id": account["serviceAccount"]["id"]}
    admin, operator = world.tokens["admin"], server.admin_token
    must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, TENANT_SCOPE, requestsPerMinute="600"), operator))
    must(await call(connect, "SetLimitPolicy", policy(t, PLATFORM, account_scope, tokensPerMinute="9k"), operator))
    budget = {"tokenBudget": "1M", "budgetPeriod": "BUDGET_PERIOD_WEEK", "softBudget": "800k"}
    must(await call(connect, "SetLimitPolicy", policy(t, TENANT, account_scope, **budget), admin))
    ask = {"tenantId": t, "scope": account_scope}
    for token in (admin, operator):
        got = must(await call(connect, "GetLimitUsage", ask, token))
        rows = {(r["tier"], r["metric"]): r for r in got["limits"]}
        assert set(rows) == {(PLATFORM, "LIMIT_METRIC_TOKENS_PER_MINUTE"), (TENANT, "LIMIT_METRIC_TOKEN_BUDGET")}
        assert all(r["scope"] == account_scope for r in got["limits"])
        assert rows[(TENANT, "LIMIT_METRIC_TOKEN_BUDGET")]["softLimit"] == "800000"
    got = must(await call(connect, "GetLimitUsage", {"tenantId": t, "scope": TENANT_SCOPE}, admin))
    assert [(r["scope"], r["metric"]) for r in got["limits"]] == [(TENANT_SCOPE, "LIMIT_METRIC_REQUESTS_PER_MINUTE")]
    model_scope = {"kind": "LIMIT_SCOPE_KIND_MODEL", "id": "no-limits-here"}
    assert must(await call(connect, "GetLimitUsage", {"tenantId": t, "scope": model_scope}, admin)) == {}
    for person in ("member", "editor", "outsider"):
        got = await call(connect, "GetLimitUsage", ask, world.tokens[person])
        assert got.code == "permission_denied", (person, got)
    key_id, _ = await personal_key(connect, world, "member")
    for extra, field in (({"apiKeyId": key_id}, "api_key_id"), ({"model": "m"}, "model")):
        got = await call(connect, "GetLimitUsage", {**ask, **extra}, admin)
        assert got.code == "invalid_argument" and field in got.message, got
    got = await call(
        connect, "GetLimitUsage", {"tenantId": t, "scope": {"kind": "LIMIT_SCOPE_KIND_TENANT", "id": "x"}}, admin
    )
    assert got.code == "invalid_argument" and "scope.id" in got.message, got
