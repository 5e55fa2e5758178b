"""Authorization matrix rows for PresetAgentService, and who may invoke an agent on the gateway."""

from __future__ import annotations

import secrets
from typing import Any

import openai
import pytest

from tests.clients import ConnectJsonCaller
from tests.gateway_fixtures import Fakes, Gateway
from tests.matrix import KINDS, UNUSABLE, Cast, Row, allow, build_cast, check_rows
from tests.world import must

AGENTS = "platform.agents.v1.PresetAgentService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
EVERYONE = tuple(k for k in KINDS if k not in UNUSABLE)
ADMINS = ("creator", "admin", "platform_admin")
# Keys never manage (server/permissions/credentials.py): every write is permission_denied for them; a read of an
# agent the key does not reach is not_found, as for sessions.
NOT_READERS = ("editor", "member", "group_member", "outsider")
NOT_READER_KEYS = ("key_personal", "key_granted", "key_sa")


async def _base_model(cast: Cast, connect: ConnectJsonCaller, endpoint: str = "http://127.0.0.1:9/v1") -> str:
    """A platform deployment shared with the cast's tenant; returns its public model id."""
    name = f"base-{secrets.token_hex(4)}"
    body = {
        "modelDeployment": {
            "name": name,
            "publicModelId": name,
            "endpointUrl": endpoint,
            "servedModelId": "echo",
            "sharing": {"sharedWith": [cast.tenant_id]},
        }
    }
    must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=cast.tokens["platform_admin"]))
    return name


def _agent(base: str, **extra: Any) -> dict[str, Any]:
    name = f"ag-{secrets.token_hex(4)}"
    return {"name": name, "publicModelId": name, "baseModel": base, **extra}


async def new_tenant_agent(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"tenantId": cast.tenant_id, "presetAgent": _agent(await _base_model(cast, connect))}


async def new_platform_agent(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"presetAgent": _agent(await _base_model(cast, connect))}


async def _creators_agent(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    body = await new_tenant_agent(cast, connect)
    created = must(await connect.call(f"{AGENTS}/CreatePresetAgent", body, token=cast.tokens["creator"]))
    return dict(created["presetAgent"])


async def creators_agent(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {"name": (await _creators_agent(cast, connect))["name"]}


async def group_agent(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    """The creator's agent, granted READER to the cast's group."""
    name = (await _creators_agent(cast, connect))["name"]
    grant = {
        "name": name,
        "subject": {"type": "SUBJECT_TYPE_GROUP", "id": cast.group_id},
        "role": "DEPLOYMENT_ROLE_READER",
    }
    must(await connect.call(f"{AGENTS}/AddPresetAgentPermission", grant, token=cast.tokens["creator"]))
    return {"name": name}


async def creators_agent_update(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    agent = await _creators_agent(cast, connect)
    return {"presetAgent": {**agent, "displayName": "renamed"}}


async def creators_agent_grant(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    name = (await _creators_agent(cast, connect))["name"]
    return {
        "name": name,
        "subject": {"type": "SUBJECT_TYPE_TENANT", "id": cast.tenant_id},
        "role": "DEPLOYMENT_ROLE_READER",
    }


async def nothing(cast: Cast, connect: ConnectJsonCaller) -> dict[str, Any]:
    return {}


ADMIN_ONLY = {**allow(*ADMINS), "key_all": "permission_denied", **allow(*NOT_READERS, code="not_found")}
ADMIN_ONLY_READ = {**ADMIN_ONLY, **allow(*NOT_READER_KEYS, code="not_found")}
ROWS = [
    Row(f"{AGENTS}/CreatePresetAgent", new_tenant_agent, allow("admin", "editor", "creator", "platform_admin")),
    Row(f"{AGENTS}/CreatePlatformPresetAgent", new_platform_agent, allow("platform_admin")),
    Row(
        f"{AGENTS}/GetPresetAgent",
        creators_agent,
        {**allow(*ADMINS, "key_all"), **allow(*NOT_READERS, *NOT_READER_KEYS, code="not_found")},
        get=True,
    ),
    Row(
        f"{AGENTS}/GetPresetAgent",
        group_agent,
        {
            **allow(*ADMINS, "key_all", "group_member"),
            **allow("editor", "member", "outsider", *NOT_READER_KEYS, code="not_found"),
        },
        get=True,
    ),
    Row(f"{AGENTS}/ListPresetAgents", nothing, allow(*EVERYONE), get=True),
    Row(f"{AGENTS}/UpdatePresetAgent", creators_agent_update, ADMIN_ONLY),
    Row(f"{AGENTS}/DeletePresetAgent", creators_agent, ADMIN_ONLY),
    Row(f"{AGENTS}/ListPresetAgentPermissions", creators_agent, ADMIN_ONLY_READ, get=True),
    Row(f"{AGENTS}/AddPresetAgentPermission", creators_agent_grant, ADMIN_ONLY),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_preset_agent_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)


KEY_KINDS = ("key_personal", "key_all", "key_sa", "key_disabled", "key_revoked", "key_expired")


async def test_preset_agent_invocation_matrix(
    connect: ConnectJsonCaller, cast: Cast, gateway: Gateway, fakes: Fakes
) -> None:
    """Invoking an agent is reading it: the admin's Personal (all resources) key reaches every tenant agent, keys
    without a grant reach none, unusable keys are refused before anything else."""
    base = await _base_model(cast, connect, fakes.openai_url)
    private = _agent(base)
    shared = _agent(base, sharing={"shareToAll": True})
    for agent in (private, shared):
        body = {"tenantId": cast.tenant_id, "presetAgent": agent}
        must(await connect.call(f"{AGENTS}/CreatePresetAgent", body, token=cast.tokens["creator"]))
    expected = {
        "key_personal": "not_found",
        "key_all": "ok",
        "key_sa": "not_found",
        "key_disabled": "unauthenticated",
        "key_revoked": "unauthenticated",
        "key_expired": "unauthenticated",
    }
    failures = []
    for agent in (private, shared):
        for kind in KEY_KINDS:
            sdk = openai.AsyncOpenAI(base_url=gateway.base_url, api_key=str(cast.tokens[kind]), max_retries=0)
            try:
                await sdk.chat.completions.create(
                    model=agent["publicModelId"], messages=[{"role": "user", "content": "x"}]
                )
                got = "ok"
            except openai.NotFoundError:
                got = "not_found"
            except openai.AuthenticationError:
                got = "unauthenticated"
            if got != expected[kind]:
                failures.append(f"invoke {agent['name']} as {kind}: expected {expected[kind]}, got {got}")
    assert failures == [], "\n".join(failures)
