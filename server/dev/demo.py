"""The demo `switchboard serve --demo` (what `make run` starts) leaves behind: development only.

Through the management API, as the bootstrap platform admin:
- a tenant `demo` (the admin becomes its admin);
- four platform-scoped in-cluster deployments shared with every tenant and served by `switchboard dev-models`: a
  stand-in chat model that calls offered tools, real multilingual-e5-small embeddings, a stand-in guardrail that
  refuses anything mentioning TRIGGER_WORD, and a stand-in speech-to-text model (the console's audio attachments);
- in the tenant: the MCP server `demo-tools` (dev-models' `/mcp`: `get_weather`, `add`), the RAG `demo-handbook`
  with a few short documents (uploaded through its `/files/content` API with the demo key and indexed with the e5
  deployment before the demo is announced), and the preset agent `demo/assistant` (the chat model as base, the
  guardrail, the MCP server and the RAG as defaults);
- a personal API key of the admin's granted all of them.
The ids and the key's secret go to `var/demo.env` (0600) as shell `export` lines, which the docs source; a restart on
the same database reuses them, and a demo seeded by an older version (fewer variables) is completed in place.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import aiohttp

from server import waiting
from server.dev.demo_documents import DEMO_DOCUMENTS
from server.dev.models import CHAT_MODEL, EMBEDDING_MODEL, GUARDRAIL_MODEL, MCP_PATH, QUERY_PREFIX, SPEECH_MODEL
from server.dev.stand_in import TRIGGER_WORD
from server.settings import Settings
from server.varfiles import replace

__all__ = [
    "AGENT_PUBLIC_ID",
    "CHAT_PUBLIC_ID",
    "EMBEDDING_PUBLIC_ID",
    "GUARDRAIL_PUBLIC_ID",
    "MCP_SERVER",
    "SPEECH_PUBLIC_ID",
    "TRIGGER_WORD",
    "Demo",
    "ensure_demo",
]

CHAT_PUBLIC_ID = "dev/stand-in-chat"
EMBEDDING_PUBLIC_ID = "intfloat/multilingual-e5-small"
GUARDRAIL_PUBLIC_ID = "dev/stand-in-guardrail"
SPEECH_PUBLIC_ID = "dev/stand-in-speech"
AGENT_PUBLIC_ID = "demo/assistant"
MCP_SERVER = "demo-tools"
_AGENT = "demo-assistant"
_RAG = "demo-handbook"
_REQUEST_SECONDS = 60
_INDEXING_SECONDS = 60  # bounds the wait for the handful of documents (well under a second once e5 is loaded)
_VARIABLES = (
    "API",
    "TENANT",
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "DEV_MODELS",
    "CHAT_MODEL",
    "EMBEDDING_MODEL",
    "GUARDRAIL_MODEL",
    "SPEECH_MODEL",
    "MCP_SERVER",
    "RAG",
    "RAG_URL",
    "AGENT",
)
_AGENT_INSTRUCTIONS = (
    "You are the Switchboard demo assistant. Use the demo tools for weather and arithmetic and the handbook for "
    "questions about the platform."
)


class DemoError(RuntimeError):
    pass


@dataclass(frozen=True)
class Demo:
    lines: dict[str, str]  # variable -> value, in print order

    def env_text(self) -> str:
        return "".join(f"export {name}={shlex.quote(value)}\n" for name, value in self.lines.items())


class _Api:
    def __init__(self, http: aiohttp.ClientSession, base: str, token: str) -> None:
        self._http, self._base, self._token = http, base, token

    async def call(self, method: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        headers = {"Authorization": f"Bearer {self._token}", "Content-Type": "application/json"}
        async with self._http.post(f"{self._base}/{method}", json=body, headers=headers) as resp:
            return resp.status, await resp.json(content_type=None)

    async def ok(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        status, answer = await self.call(method, body)
        if status != 200:
            raise DemoError(f"{method.rsplit('/', 1)[1]} failed: {answer.get('message', status)}")
        return answer

    async def created(self, method: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """The answer of a create, or None when the resource already exists (a demo completed in place)."""
        status, answer = await self.call(method, body)
        if status == 200:
            return answer
        if answer.get("code") == "already_exists":
            return None
        raise DemoError(f"{method.rsplit('/', 1)[1]} failed: {answer.get('message', status)}")


def _read_env(settings: Settings) -> dict[str, str]:
    path = settings.demo_env_path
    if not path.exists():
        return {}
    found = {}
    for line in path.read_text().splitlines():
        name, _, value = line.removeprefix("export ").partition("=")
        parsed = shlex.split(value)
        found[name] = parsed[0] if parsed else ""
    return found


@dataclass(frozen=True)
class _Where:
    api_url: str
    gateway_url: str  # …/v1
    dev_models_url: str  # …/v1

    @property
    def mcp_url(self) -> str:
        return self.dev_models_url.removesuffix("/v1") + MCP_PATH

    def rag_url(self, rag_id: str) -> str:
        # The gateway this start serves (the RAG's own rag_url uses the configured public URL, which a development
        # run on other ports does not change).
        return f"{self.gateway_url.removesuffix('/v1')}/rag/{rag_id}"


async def ensure_demo(settings: Settings, *, api_url: str, gateway_url: str, dev_models_url: str, token: str) -> Demo:
    """The demo's ids and key, seeded on first use (idempotent across restarts on the same database)."""
    where = _Where(api_url, gateway_url, dev_models_url)
    # Each request bounded (aiohttp's default is 5 minutes): the slowest, the documents' upload, embeds a handful of
    # short texts inline.
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=_REQUEST_SECONDS)) as http:
        api = _Api(http, api_url, token)
        known = _read_env(settings)
        tenant = known.get("TENANT", "")
        if tenant:
            status, _ = await api.call("platform.tenants.v1.TenantService/GetTenant", {"tenantId": tenant})
            tenant = tenant if status == 200 else ""
        if tenant and all(known.get(name) for name in _VARIABLES):  # the same demo; the addresses are this start's
            demo = Demo({**known, **_addresses(where), "RAG_URL": where.rag_url(known["RAG"])})
        else:
            demo = await _seed(http, api, settings, where, tenant)
    replace(settings.demo_env_path, demo.env_text().encode())
    return demo


def _addresses(where: _Where) -> dict[str, str]:
    return {"API": where.api_url, "OPENAI_BASE_URL": where.gateway_url, "DEV_MODELS": where.dev_models_url}


async def _seed(http: aiohttp.ClientSession, api: _Api, settings: Settings, where: _Where, tenant: str) -> Demo:
    tenant = tenant or await _tenant(api, settings)
    await _deployments(api, where.dev_models_url)
    await api.created(
        "platform.agents.v1.ExternalMcpServerService/CreateExternalMcpServer",
        {
            "tenantId": tenant,
            "externalMcpServer": {
                "name": MCP_SERVER,
                "displayName": "Demo tools (dev-models)",
                "serverUrl": where.mcp_url,
                "auth": {"type": "EXTERNAL_MCP_AUTH_TYPE_NONE"},
            },
        },
    )
    rag = await _rag(api, tenant)
    await api.created(
        "platform.agents.v1.PresetAgentService/CreatePresetAgent",
        {
            "tenantId": tenant,
            "presetAgent": {
                "name": _AGENT,
                "publicModelId": AGENT_PUBLIC_ID,
                "displayName": "Demo assistant (stand-in base model)",
                "baseModel": CHAT_PUBLIC_ID,
                "instructions": _AGENT_INSTRUCTIONS,
                "defaultMcpServers": [MCP_SERVER],
                "defaultRags": [rag],
                "outputGuardrails": [GUARDRAIL_PUBLIC_ID],
            },
        },
    )
    key = await api.ok(
        "platform.tenants.v1.ApiKeyService/CreateApiKey",
        {
            "tenantId": tenant,
            "type": "API_KEY_TYPE_PERSONAL",
            "name": "demo",
            "grants": [
                {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "dev-chat"},
                {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "dev-embeddings"},
                {"kind": "RESOURCE_KIND_MCP_SERVER", "name": MCP_SERVER},
                {"kind": "RESOURCE_KIND_RAG", "name": rag},
                {"kind": "RESOURCE_KIND_PRESET_AGENT", "name": _AGENT},
            ],
        },
    )
    await _documents(http, where.rag_url(rag), key["secret"])
    values = {
        **_addresses(where),
        "TENANT": tenant,
        "OPENAI_API_KEY": key["secret"],
        "CHAT_MODEL": CHAT_PUBLIC_ID,
        "EMBEDDING_MODEL": EMBEDDING_PUBLIC_ID,
        "GUARDRAIL_MODEL": GUARDRAIL_PUBLIC_ID,
        "SPEECH_MODEL": SPEECH_PUBLIC_ID,
        "MCP_SERVER": MCP_SERVER,
        "RAG": rag,
        "RAG_URL": where.rag_url(rag),
        "AGENT": AGENT_PUBLIC_ID,
    }
    return Demo({name: values[name] for name in _VARIABLES})


async def _tenant(api: _Api, settings: Settings) -> str:
    """The tenant `demo` (found again when var/demo.env was lost), with the admin as its admin."""
    created = await api.created(
        "platform.tenants.v1.TenantService/CreateTenant", {"name": "demo", "displayName": "Demo"}
    )
    if created is not None:
        tenant = str(created["tenant"]["id"])
    else:
        listed = await api.ok("platform.tenants.v1.TenantService/ListTenants", {})
        tenant = next(str(t["id"]) for t in listed.get("tenants", ()) if t.get("name") == "demo")
    status, answer = await api.call(
        "platform.tenants.v1.TenantService/AddTenantMember",
        {"tenantId": tenant, "userId": settings.bootstrap_admin, "role": "TENANT_ROLE_ADMIN"},
    )
    if status != 200 and answer.get("code") != "already_exists":
        raise DemoError(f"AddTenantMember failed: {answer.get('message', status)}")
    return tenant


async def _deployments(api: _Api, dev_models_url: str) -> None:
    deployments = (
        ("dev-chat", CHAT_PUBLIC_ID, CHAT_MODEL, "TASK_TYPE_TEXT_GENERATION", "Development stand-in (not a model)"),
        ("dev-embeddings", EMBEDDING_PUBLIC_ID, EMBEDDING_MODEL, "TASK_TYPE_EMBEDDING", "multilingual-e5-small"),
        (
            "dev-guardrail",
            GUARDRAIL_PUBLIC_ID,
            GUARDRAIL_MODEL,
            "TASK_TYPE_GUARDRAIL",
            f"Development stand-in guardrail (refuses '{TRIGGER_WORD}')",
        ),
        (
            "dev-speech",
            SPEECH_PUBLIC_ID,
            SPEECH_MODEL,
            "TASK_TYPE_SPEECH_TO_TEXT",
            "Development stand-in (not a speech model)",
        ),
    )
    for name, public_id, served, task, label in deployments:
        deployment: dict[str, Any] = {
            "name": name,
            "publicModelId": public_id,
            "displayName": label,
            "endpointUrl": dev_models_url,
            "servedModelId": served,
            "capabilities": {"taskType": task},
            "sharing": {"shareToAll": True},
        }
        if task == "TASK_TYPE_EMBEDDING":
            deployment["queryPrefix"] = QUERY_PREFIX  # dev-models turns it into e5's query mode
        await api.created(
            "platform.modelmanager.v1.ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment}
        )


async def _rag(api: _Api, tenant: str) -> str:
    rag = {"name": _RAG, "displayName": "Demo handbook", "embeddingModel": EMBEDDING_PUBLIC_ID}
    created = await api.created("platform.ragmanager.v1.RagService/CreateRag", {"tenantId": tenant, "rag": rag})
    if created is not None:
        return str(created["rag"]["id"])
    listed = await api.ok("platform.ragmanager.v1.RagService/ListRags", {"tenantId": tenant})
    return next(str(r["id"]) for r in listed.get("rags", ()) if r.get("name") == _RAG)


async def _statuses(http: aiohttp.ClientSession, rag_url: str, headers: dict[str, str]) -> list[str]:
    async with http.get(f"{rag_url}/files", params={"limit": "100"}, headers=headers) as resp:
        if resp.status != 200:
            raise DemoError(f"the demo RAG's files could not be listed (HTTP {resp.status})")
        return [str(f.get("status")) for f in (await resp.json(content_type=None)).get("data", ())]


async def _documents(http: aiohttp.ClientSession, rag_url: str, key: str) -> None:
    """Upload the handbook (unless the RAG has files already) and wait until every file is indexed."""
    headers = {"Authorization": f"Bearer {key}"}
    if not await _statuses(http, rag_url, headers):
        batch = {"files": [{"filename": name, "content": text} for name, text in DEMO_DOCUMENTS]}
        async with http.post(f"{rag_url}/files/content", json=batch, headers=headers) as resp:
            if resp.status != 201:
                raise DemoError(f"the demo documents could not be uploaded (HTTP {resp.status})")

    async def indexed() -> bool:
        statuses = await _statuses(http, rag_url, headers)
        if "failed" in statuses:
            raise DemoError("a demo document could not be indexed")
        return bool(statuses) and all(s == "ready" for s in statuses)

    if not await waiting.until(indexed, _INDEXING_SECONDS, every=0.2):
        raise DemoError(f"the demo documents were not indexed within {_INDEXING_SECONDS} s")
