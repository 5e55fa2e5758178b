"""Authorization matrix rows for RagService and RagQuotaService (every method of both)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import KINDS, UNUSABLE, Cast, Row, allow, build_cast, check_rows
from tests.rag_helpers import QUOTAS, RAGS, model
from tests.world import must

_MODELS: dict[int, str] = {}
NOT_ADMINS = ("editor", "member", "group_member", "outsider", "key_personal", "key_sa")
MANAGERS = ("creator", "admin", "platform_admin")


async def _embedder(cast: Cast, connect: ConnectJsonCaller) -> str:
    if id(cast) not in _MODELS:
        _MODELS[id(cast)] = (await model(connect, str(cast.tokens["platform_admin"])))["publicModelId"]
    return _MODELS[id(cast)]


async def _rag(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"name": f"r-{secrets.token_hex(4)}", "embeddingModel": await _embedder(cast, connect)}


async def new_tenant_rag(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "rag": await _rag(cast, connect)}


async def new_platform_rag(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"rag": await _rag(cast, connect)}


async def creators_rag(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    created = must(
        await connect.call(f"{RAGS}/CreateRag", await new_tenant_rag(cast, connect), token=cast.tokens["creator"])
    )
    return {"id": created["rag"]["id"]}


async def creators_rag_update(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"rag": {**(await creators_rag(cast, connect)), "displayName": "Renamed"}}


async def member_grant(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    user = {"type": "SUBJECT_TYPE_USER", "id": cast.world.user_ids["member"]}
    return {**(await creators_rag(cast, connect)), "subject": user, "role": "DEPLOYMENT_ROLE_READER"}


async def granted_member(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    body = await member_grant(cast, connect)
    must(await connect.call(f"{RAGS}/AddRagPermission", body, token=cast.tokens["creator"]))
    return body


async def nothing(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {}


# Personal keys reach only what they are granted: the admin's key passes the create gate, but cannot invoke the
# embedding model it names (no grant on it), which is a refusal of the request, not of the caller.
ROWS = [
    Row(
        f"{RAGS}/CreateRag",
        new_tenant_rag,
        {
            **allow("admin", "editor", "creator", "platform_admin"),
            **allow("key_personal", code="invalid_argument"),
        },
    ),
    Row(f"{RAGS}/CreatePlatformRag", new_platform_rag, allow("platform_admin")),
    Row(
        f"{RAGS}/GetRag",
        creators_rag,
        {**allow(*MANAGERS, "key_all"), **allow(*NOT_ADMINS, code="not_found")},
        get=True,
    ),
    Row(
        f"{RAGS}/UpdateRag",
        creators_rag_update,
        {**allow(*MANAGERS), **allow("key_all", code="permission_denied"), **allow(*NOT_ADMINS, code="not_found")},
    ),
    Row(
        f"{RAGS}/DeleteRag",
        creators_rag,
        {**allow(*MANAGERS), **allow("key_all", code="permission_denied"), **allow(*NOT_ADMINS, code="not_found")},
    ),
    Row(f"{RAGS}/ListRags", nothing, allow(*(k for k in KINDS if k not in UNUSABLE)), get=True),
    Row(
        f"{RAGS}/ListRagPermissions",
        creators_rag,
        {**allow(*MANAGERS), **allow("key_all", code="permission_denied"), **allow(*NOT_ADMINS, code="not_found")},
        get=True,
    ),
    Row(
        f"{RAGS}/AddRagPermission",
        member_grant,
        {**allow(*MANAGERS), **allow("key_all", code="permission_denied"), **allow(*NOT_ADMINS, code="not_found")},
    ),
    Row(
        f"{RAGS}/RemoveRagPermission",
        granted_member,
        {
            **allow(*MANAGERS),
            **allow("key_all", code="permission_denied"),
            **allow("member", code="permission_denied"),  # the grant lets the member read it, not manage it
            **allow("editor", "group_member", "outsider", "key_personal", "key_sa", code="not_found"),
        },
    ),
]


async def tenant_rag(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, **(await creators_rag(cast, connect))}


async def tenant_rag_quota(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {**(await tenant_rag(cast, connect)), "quota": "10Mi"}


async def tenant_rags_quota(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    found = await tenant_rag(cast, connect)
    return {"tenantId": cast.tenant_id, "ids": [found["id"]], "quota": "1Gi"}


async def tenant_rags(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    found = await tenant_rag(cast, connect)
    return {"tenantId": cast.tenant_id, "ids": [found["id"]]}


def tenant(**values: Any) -> Any:
    async def build(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
        return {"tenantId": cast.tenant_id, **values}

    return build


# Quota writes: platform operators (can_manage_tenants); tenant reads: tenant admins (the admin's personal key acts
# as the admin) and platform operators; the cross-tenant list: platform operators.
OPERATORS = allow("platform_admin")
TENANT_ADMINS = allow("admin", "key_personal", "platform_admin")
QUOTA_ROWS = [
    Row(f"{QUOTAS}/SetQuota", tenant_rag_quota, OPERATORS),
    Row(f"{QUOTAS}/GetQuota", tenant_rag, TENANT_ADMINS, get=True),
    Row(f"{QUOTAS}/UnsetQuota", tenant_rag, OPERATORS),
    Row(f"{QUOTAS}/SetTenantQuota", tenant(quota="10G"), OPERATORS),
    Row(f"{QUOTAS}/GetTenantQuota", tenant(), TENANT_ADMINS, get=True),
    Row(f"{QUOTAS}/UnsetTenantQuota", tenant(), OPERATORS),
    Row(f"{QUOTAS}/BatchSetQuota", tenant_rags_quota, OPERATORS),
    Row(f"{QUOTAS}/BatchUnsetQuota", tenant_rags, OPERATORS),
    Row(f"{QUOTAS}/SetDefaultQuota", tenant(defaultQuota="512Mi"), OPERATORS),
    Row(f"{QUOTAS}/GetDefaultQuota", tenant(), TENANT_ADMINS, get=True),
    Row(f"{QUOTAS}/UnsetDefaultQuota", tenant(), OPERATORS),
    Row(f"{QUOTAS}/GetTenantUsage", tenant(), TENANT_ADMINS, get=True),
    Row(f"{QUOTAS}/ListTenantsUsage", nothing, OPERATORS, get=True),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_rag_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)


async def test_rag_quota_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, QUOTA_ROWS)
    assert failures == [], "\n".join(failures)
