"""DeleteTenant: who may, and that nothing of the tenant outlives it. Rows naming the tenant go by foreign key; what
names its resources by (kind, name) — grants, API-key grants, public model ids — or lives beside the rows (a RAG's
full-text table) must go too, or it passes to whatever another tenant later creates under the freed name."""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from sqlalchemy import text

from server.store.db import Database as Store
from server.store.db import new_id
from server.store.models import RagDeploymentRow, RagFileRow
from server.store.rag_index import ChunkInput, chunk_index_for
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server
from tests.matrix import shared_model
from tests.world import TENANTS, World, make_world, must

EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
AGENTS = "platform.agents.v1.PresetAgentService"


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


def _name(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(4)}"


def _external_model(name: str, public_model_id: str) -> dict[str, Any]:
    return {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "m",
        "baseUrl": "https://models.example.test/v1",
        "publicModelId": public_model_id,
    }


async def _agent(
    connect: ConnectJsonCaller, server: Server, tenant_id: str, token: str, *, name: str, public: str
) -> None:
    agent = {"name": name, "publicModelId": public, "baseModel": await shared_model(server, connect, tenant_id)}
    body = {"tenantId": tenant_id, "presetAgent": agent}
    must(await connect.call(f"{AGENTS}/CreatePresetAgent", body, token=token))


async def _delete(connect: ConnectJsonCaller, server: Server, tenant_id: str) -> None:
    must(await connect.call(f"{TENANTS}/DeleteTenant", {"tenantId": tenant_id}, token=server.admin_token))


async def test_a_session_scoped_to_one_tenant_cannot_delete_another(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """A session scoped with X-Platform-Tenant-Id acts on that tenant only, DeleteTenant included."""
    result = await connect.call(
        f"{TENANTS}/DeleteTenant", {"tenantId": world.other_tenant_id}, token=server.admin_token, tenant=world.tenant_id
    )
    still_there = await connect.call(
        f"{TENANTS}/GetTenant", {"tenantId": world.other_tenant_id}, token=server.admin_token
    )
    assert (result.code, still_there.code) == ("permission_denied", "ok"), (result, still_there)


async def test_grants_on_a_deleted_tenants_resources_do_not_pass_to_their_namesakes(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """A member of two tenants granted ADMIN on tenant A's model and agent: once A is deleted and tenant B creates a
    private model and agent under the freed names, the user (a plain Member of B) reaches neither."""
    user = world.user_ids["member"]
    joined = {"tenantId": world.other_tenant_id, "userId": user, "role": "TENANT_ROLE_MEMBER"}
    must(await connect.call(f"{TENANTS}/AddTenantMember", joined, token=server.admin_token))
    model, agent = _name("shr"), _name("agent")
    body = {"tenantId": world.tenant_id, "externalModel": _external_model(model, model)}
    must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=world.tokens["editor"]))
    await _agent(connect, server, world.tenant_id, world.tokens["editor"], name=agent, public=agent)
    subject = {"type": "SUBJECT_TYPE_USER", "id": user}
    for service, name in (
        (f"{EXTERNAL}/AddExternalModelPermission", model),
        (f"{AGENTS}/AddPresetAgentPermission", agent),
    ):
        grant = {"name": name, "subject": subject, "role": "DEPLOYMENT_ROLE_ADMIN"}
        must(await connect.call(service, grant, token=world.tokens["editor"]))
    await _delete(connect, server, world.tenant_id)

    body = {"tenantId": world.other_tenant_id, "externalModel": _external_model(model, _name("pub"))}
    must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=world.tokens["outsider"]))
    await _agent(connect, server, world.other_tenant_id, world.tokens["outsider"], name=agent, public=_name("pub"))
    member = world.tokens["member"]
    got_model = await connect.call(f"{EXTERNAL}/GetExternalModel", {"name": model}, token=member)
    got_agent = await connect.call(f"{AGENTS}/GetPresetAgent", {"name": agent}, token=member, get=True)
    listed = must(await connect.call(f"{EXTERNAL}/ListExternalModels", {}, token=member))
    assert (got_model.code, got_agent.code) == ("not_found", "not_found"), (got_model, got_agent)
    assert model not in [m["name"] for m in listed.get("externalModels", [])]


async def test_a_deleted_tenants_public_model_ids_are_free_again(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """The one namespace of client-facing ids: a deleted tenant's external model and agent give theirs back."""
    model_id, agent_id = _name("pub"), _name("pub")
    body = {"tenantId": world.tenant_id, "externalModel": _external_model(model_id, model_id)}
    must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", body, token=world.tokens["editor"]))
    await _agent(connect, server, world.tenant_id, world.tokens["editor"], name=_name("agent"), public=agent_id)
    await _delete(connect, server, world.tenant_id)
    for public_id in (model_id, agent_id):
        again = {"tenantId": world.other_tenant_id, "externalModel": _external_model(_name("new"), public_id)}
        must(await connect.call(f"{EXTERNAL}/CreateTenantExternalModel", again, token=world.tokens["outsider"]))


async def test_a_deleted_tenants_rag_leaves_no_full_text_table_behind(
    database: Database, server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    """SQLite keeps each RAG's documents' text in a full-text table of its own, which no foreign key ties to the
    tenant: deleting the tenant drops it, as DeleteRagDeployment does."""
    if database.backend != "sqlite":
        pytest.skip("PostgreSQL keeps a small RAG's text in rows only (they go by foreign key)")
    store = Store(database.url)
    rag_id, file_id = new_id("rag"), new_id("rf")
    try:
        async with store.transaction() as session:
            session.add(
                RagDeploymentRow(
                    id=rag_id,
                    tenant_id=world.tenant_id,
                    name=rag_id.replace("_", "-"),
                    embedding_model="e5",
                    chunk_size_tokens=256,
                    chunk_overlap_tokens=0,
                    top_k=10,
                )
            )
            session.add(RagFileRow(id=file_id, rag_id=rag_id, filename="a.txt", status="ready", chunk_count=1))
            await session.flush()
            chunk = ChunkInput(text="the tenant's confidential notes", token_count=4, vector=[1.0] + [0.0] * 383)
            await (await chunk_index_for(store.engine)).add(session, rag_id=rag_id, file_id=file_id, chunks=[chunk])
        tables = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE :p"
        pattern = {"p": f"%{rag_id}%"}
        async with store.read() as session:
            assert (await session.scalars(text(tables), pattern)).all()
        await _delete(connect, server, world.tenant_id)
        async with store.read() as session:
            assert not (await session.scalars(text(tables), pattern)).all()
    finally:
        await store.close()
