"""The demo `switchboard serve --demo` (what `make run` starts) leaves behind: development only.

Through the management API, as the bootstrap platform admin: a tenant `demo` (the admin becomes its admin), two
platform-scoped in-cluster deployments shared with every tenant and served by `switchboard dev-models` (a stand-in
chat model and real multilingual-e5-small embeddings), and a personal API key of the admin's granted both. The ids
and the key's secret go to `var/demo.env` (0600) as shell `export` lines, which the README sources; a restart on
the same database reuses them.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

import aiohttp

from server.dev.models import CHAT_MODEL, EMBEDDING_MODEL, QUERY_PREFIX
from server.settings import Settings
from server.varfiles import replace

__all__ = ["CHAT_PUBLIC_ID", "EMBEDDING_PUBLIC_ID", "Demo", "ensure_demo"]

CHAT_PUBLIC_ID = "dev/stand-in-chat"
EMBEDDING_PUBLIC_ID = "intfloat/multilingual-e5-small"


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


async def ensure_demo(settings: Settings, *, api_url: str, gateway_url: str, dev_models_url: str, token: str) -> Demo:
    """The demo's ids and key, seeded on first use (idempotent across restarts on the same database)."""
    async with aiohttp.ClientSession() as http:
        api = _Api(http, api_url, token)
        known = _read_env(settings)
        if known.get("TENANT"):
            status, _ = await api.call("platform.tenants.v1.TenantService/GetTenant", {"tenantId": known["TENANT"]})
            if status == 200:  # the same demo; the addresses are this start's
                demo = Demo({**known, "API": api_url, "OPENAI_BASE_URL": gateway_url, "DEV_MODELS": dev_models_url})
                replace(settings.demo_env_path, demo.env_text().encode())
                return demo
        tenant = (
            await api.ok("platform.tenants.v1.TenantService/CreateTenant", {"name": "demo", "displayName": "Demo"})
        )["tenant"]["id"]
        await api.ok(
            "platform.tenants.v1.TenantService/AddTenantMember",
            {"tenantId": tenant, "userId": settings.bootstrap_admin, "role": "TENANT_ROLE_ADMIN"},
        )
        deployments = (
            ("dev-chat", CHAT_PUBLIC_ID, CHAT_MODEL, "TASK_TYPE_TEXT_GENERATION", "Development stand-in (not a model)"),
            ("dev-embeddings", EMBEDDING_PUBLIC_ID, EMBEDDING_MODEL, "TASK_TYPE_EMBEDDING", "multilingual-e5-small"),
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
            status, answer = await api.call(
                "platform.modelmanager.v1.ModelDeploymentService/CreateModelDeployment", {"modelDeployment": deployment}
            )
            if status != 200 and answer.get("code") != "already_exists":
                raise DemoError(f"CreateModelDeployment {name} failed: {answer.get('message', status)}")
        key = await api.ok(
            "platform.tenants.v1.ApiKeyService/CreateApiKey",
            {
                "tenantId": tenant,
                "type": "API_KEY_TYPE_PERSONAL",
                "name": "demo",
                "grants": [
                    {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "dev-chat"},
                    {"kind": "RESOURCE_KIND_MODEL_DEPLOYMENT", "name": "dev-embeddings"},
                ],
            },
        )
    demo = Demo(
        {
            "API": api_url,
            "TENANT": tenant,
            "OPENAI_BASE_URL": gateway_url,
            "OPENAI_API_KEY": key["secret"],
            "DEV_MODELS": dev_models_url,
            "CHAT_MODEL": CHAT_PUBLIC_ID,
            "EMBEDDING_MODEL": EMBEDDING_PUBLIC_ID,
        }
    )
    replace(settings.demo_env_path, demo.env_text().encode())
    return demo
