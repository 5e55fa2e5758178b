"""Authorization matrix rows for the model registry (deployments, external models, aliases)."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import KINDS, UNUSABLE, Cast, Row, allow, build_cast, check_rows
from tests.world import must

DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"
EVERYONE = tuple(k for k in KINDS if k not in UNUSABLE)
TENANT_USERS = ("admin", "editor", "member", "group_member", "creator")
# Who cannot even read the creator's external model (key_all reads as its admin owner, so it is refused instead).
NOT_READERS = ("editor", "member", "group_member", "outsider", "key_personal", "key_granted", "key_sa")


def _name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


async def new_deployment(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    name = _name("dep")
    return {"modelDeployment": {"name": name, "publicModelId": name, "endpointUrl": "http://127.0.0.1:9/v1"}}


async def shared_deployment(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    body = await new_deployment(cast, connect)
    body["modelDeployment"]["sharing"] = {"sharedWith": [cast.tenant_id]}
    created = must(
        await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=cast.tokens["platform_admin"])
    )
    return {"name": created["modelDeployment"]["name"]}


def _external() -> dict[str, Any]:
    name = _name("ext")
    return {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "m",
        "baseUrl": "http://127.0.0.1:9/v1",
        "publicModelId": name,
        "apiKey": "sk-x",
    }


async def new_tenant_external(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "externalModel": _external()}


async def creators_external(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    created = must(
        await connect.call(
            f"{EXTERNAL}/CreateTenantExternalModel",
            await new_tenant_external(cast, connect),
            token=cast.tokens["creator"],
        )
    )
    return {"name": created["externalModel"]["name"]}


async def nothing(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {}


ROWS = [
    Row(f"{DEPLOYMENTS}/CreateModelDeployment", new_deployment, allow("platform_admin")),
    Row(f"{DEPLOYMENTS}/ListModelDeployments", nothing, allow(*EVERYONE), get=True),
    Row(
        f"{DEPLOYMENTS}/GetModelDeployment",
        shared_deployment,
        {
            **allow(*TENANT_USERS, "platform_admin", "key_all"),
            **allow("outsider", "key_personal", "key_granted", "key_sa", code="not_found"),  # not their grant
        },
        get=True,
    ),
    Row(
        f"{DEPLOYMENTS}/DeleteModelDeployment",
        shared_deployment,
        {**allow("platform_admin"), **allow("outsider", code="not_found")},  # keys: refused before the body
    ),
    Row(
        f"{EXTERNAL}/CreateTenantExternalModel",
        new_tenant_external,
        allow("admin", "editor", "creator", "platform_admin"),  # never a key, whoever owns it
    ),
    Row(f"{EXTERNAL}/CreateExternalModel", lambda c, k: _wrap({"externalModel": _external()}), allow("platform_admin")),
    Row(
        f"{EXTERNAL}/GetExternalModel",
        creators_external,
        {
            **allow("creator", "admin", "platform_admin"),
            **allow(*NOT_READERS, code="not_found"),
        },
        get=True,
    ),
    Row(
        f"{EXTERNAL}/GetExternalModelMetrics",
        creators_external,
        {
            **allow("creator", "admin", "platform_admin"),
            **allow(*NOT_READERS, code="not_found"),
        },
        get=True,
    ),
    Row(f"{EXTERNAL}/ListExternalModels", nothing, allow(*EVERYONE), get=True),
    Row(
        f"{EXTERNAL}/DeleteExternalModel",
        creators_external,
        {
            **allow("creator", "admin", "platform_admin"),
            **allow("editor", "member", "group_member", "outsider", code="not_found"),  # keys: refused
        },
    ),
    Row(f"{ALIASES}/ListModelAliases", nothing, allow(*EVERYONE), get=True),  # logged-in; items by can_read
]


async def _wrap(body: dict[str, Any]) -> dict[str, Any]:
    return body


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_registry_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)
