"""Models, keys and grants for gateway tests.

Everything goes through the public management API (Connect JSON): model deployments, external models (with a
provider key, stored encrypted), aliases, sharing, service accounts, API keys and grants.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any

from server.permissions import ResourceKind
from tests.clients import ConnectJsonCaller
from tests.world import World, make_world, must


@dataclass
class ModelSpec:
    public_id: str
    kind: str = "deployment"  # deployment | external | alias
    upstream: str = ""  # deployments: endpoint_url; externals: base_url
    upstream_model: str = ""
    provider: int = 0
    api_version: str = ""
    task: int = 1
    modalities: tuple[int, ...] = (1,)
    query_prefix: str | None = None
    target: str = ""  # aliases: the public id of the target
    unlisted: bool = False
    shared: bool = True


@dataclass
class GatewayWorld:
    tenant_id: str
    tag: str
    names: dict[str, tuple[ResourceKind, str]] = field(default_factory=dict)  # public id -> ref
    keys: dict[str, str] = field(default_factory=dict)  # label -> secret
    key_ids: dict[str, str] = field(default_factory=dict)  # label -> key id
    tokens: dict[str, str] = field(default_factory=dict)  # person -> session token
    user_ids: dict[str, str] = field(default_factory=dict)  # person -> user id

    def model(self, public_id: str) -> str:
        return f"{public_id}-{self.tag}"


DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
EXTERNALS = "platform.modelmanager.v1.ExternalModelService"
ALIASES = "platform.modelmanager.v1.ModelAliasService"
TASKS = {
    1: "TASK_TYPE_TEXT_GENERATION",
    2: "TASK_TYPE_EMBEDDING",
    3: "TASK_TYPE_RERANK",
    4: "TASK_TYPE_SPEECH_TO_TEXT",
    5: "TASK_TYPE_GUARDRAIL",
}
MODALITIES = {1: "MODALITY_TEXT", 2: "MODALITY_IMAGE", 3: "MODALITY_AUDIO"}
PROVIDERS = {
    1: "EXTERNAL_MODEL_PROVIDER_VENDOR_A",
    2: "EXTERNAL_MODEL_PROVIDER_VENDOR_B",
    3: "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
}
PROVIDER_KEY = "sk-provider-SECRET-9d2e"  # every external model's provider key in these tests


def _capabilities(spec: ModelSpec) -> dict[str, Any]:
    return {"taskType": TASKS[spec.task], "inputModalities": [MODALITIES[m] for m in spec.modalities]}


async def _create(connect: ConnectJsonCaller, token: str, world: GatewayWorld, spec: ModelSpec) -> None:
    public_id = world.model(spec.public_id)
    name = f"m-{spec.public_id}-{world.tag}"
    sharing = {"shareToAll": True} if spec.shared else {}
    prefix = {"queryPrefix": spec.query_prefix} if spec.query_prefix is not None else {}
    if spec.kind in ("deployment", "external"):
        if spec.kind == "deployment":
            service, kind, message = DEPLOYMENTS, ResourceKind.MODEL_DEPLOYMENT, "modelDeployment"
            body: dict[str, Any] = {"endpointUrl": spec.upstream, "servedModelId": spec.upstream_model}
        else:
            service, kind, message = EXTERNALS, ResourceKind.EXTERNAL_MODEL, "externalModel"
            body = {
                "provider": PROVIDERS[spec.provider],
                "providerModelId": spec.upstream_model,
                "apiKey": PROVIDER_KEY,
                "baseUrl": spec.upstream,
                "apiVersion": spec.api_version,
            }
        body |= {"name": name, "publicModelId": public_id, "capabilities": _capabilities(spec), **prefix}
        noun = message[0].upper() + message[1:]
        must(await connect.call(f"{service}/Create{noun}", {message: body}, token=token))
        if spec.shared:
            body = {"name": name, "sharing": sharing}
            must(await connect.call(f"{service}/Update{noun}Sharing", body, token=token))
        world.names[public_id] = (kind, name)
    else:
        kind, target = world.names[world.model(spec.target)]
        target_kind = "MODEL_ALIAS_TARGET_KIND_" + kind.name
        alias = {
            "publicModelId": public_id,
            "targetRef": {"kind": target_kind, "name": target},
            "unlisted": spec.unlisted,
            "sharing": sharing,
        }
        created = must(await connect.call(f"{ALIASES}/CreateModelAlias", {"alias": alias}, token=token))
        world.names[public_id] = (ResourceKind.MODEL_ALIAS, created["name"])


async def create_models(connect: ConnectJsonCaller, token: str, world: GatewayWorld, specs: list[ModelSpec]) -> None:
    """Register every model through the management API (platform-owned, shared with all tenants unless not
    `shared`); an alias whose target is "doomed" has that target deleted afterwards, leaving it unresolved."""
    for spec in specs:
        await _create(connect, token, world, spec)
    doomed = world.names.get(world.model("doomed"))
    if doomed is not None and any(spec.public_id == "doomed" for spec in specs):
        must(await connect.call(f"{DEPLOYMENTS}/DeleteModelDeployment", {"name": doomed[1]}, token=token))


KEYS = "platform.tenants.v1.ApiKeyService"
ACCOUNTS = "platform.tenants.v1.ServiceAccountService"
_KIND_NAMES = {
    ResourceKind.MODEL_DEPLOYMENT: "RESOURCE_KIND_MODEL_DEPLOYMENT",
    ResourceKind.EXTERNAL_MODEL: "RESOURCE_KIND_EXTERNAL_MODEL",
    ResourceKind.MODEL_ALIAS: "RESOURCE_KIND_MODEL_ALIAS",
}


async def platform_models(connect: ConnectJsonCaller, token: str, specs: list[ModelSpec]) -> GatewayWorld:
    """`specs` registered as platform models (shared with every tenant) under a fresh tag, so a module's models never
    collide with another module's on the same server."""
    world = GatewayWorld(tenant_id="", tag=secrets.token_hex(3))
    await create_models(connect, token, world, specs)
    return world


def tenant_view(models: GatewayWorld, people: World) -> GatewayWorld:
    """The platform models of `platform_models` as seen by a tenant's people (tests.world.make_world)."""
    return GatewayWorld(
        tenant_id=people.tenant_id,
        tag=models.tag,
        names=dict(models.names),
        tokens=dict(people.tokens),
        user_ids=dict(people.user_ids),
    )


def _remember(world: GatewayWorld, label: str, created: dict[str, Any]) -> str:
    world.keys[label] = str(created["secret"])
    world.key_ids[label] = str(created["apiKey"]["id"])
    return world.keys[label]


async def all_resources_key(connect: ConnectJsonCaller, world: GatewayWorld, token: str, label: str) -> str:
    """A Personal (all resources) key of the person holding `token`, through the management API."""
    body = {"tenantId": world.tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": label}
    return _remember(world, label, must(await connect.call(f"{KEYS}/CreateApiKey", body, token=token)))


async def service_account_key(
    connect: ConnectJsonCaller, world: GatewayWorld, token: str, label: str, grants: list[str]
) -> str:
    """A service-account key granted exactly these models, through the management API."""
    body: dict[str, Any] = {"tenantId": world.tenant_id, "name": f"sa-{secrets.token_hex(3)}"}
    account = must(await connect.call(f"{ACCOUNTS}/CreateServiceAccount", body, token=token))["serviceAccount"]
    refs = []
    for public_id in grants:
        kind, name = world.names[world.model(public_id)]
        refs.append({"kind": _KIND_NAMES[kind], "name": name})
    body = {
        "tenantId": world.tenant_id,
        "type": "API_KEY_TYPE_SERVICE_ACCOUNT",
        "name": "sa-key",
        "serviceAccountId": account["id"],
        "grants": refs,
    }
    return _remember(world, label, must(await connect.call(f"{KEYS}/CreateApiKey", body, token=token)))


def default_specs(openai_url: str, azure_url: str, closed_url: str) -> list[ModelSpec]:
    text, image = 1, 2
    return [
        ModelSpec("chat", upstream=openai_url, upstream_model="served-chat", modalities=(text, image)),
        ModelSpec("chat-default-id", upstream=openai_url),
        ModelSpec("sigterm", upstream=openai_url, upstream_model="sigterm"),
        ModelSpec("embed", upstream=openai_url, upstream_model="served-embed", task=2, query_prefix="query: "),
        ModelSpec("embed-noprefix", upstream=openai_url, upstream_model="served-embed", task=2, query_prefix=""),
        ModelSpec("embed-floats", upstream=openai_url, upstream_model="floats-only", task=2),
        ModelSpec("rerank", upstream=openai_url, upstream_model="served-rerank", task=3, query_prefix="q: "),
        ModelSpec("whisper", upstream=openai_url, upstream_model="served-whisper", task=4, modalities=(3,)),
        ModelSpec("va-chat", kind="external", provider=1, upstream_model="gpt-va"),
        ModelSpec(
            "vb-chat",
            kind="external",
            provider=2,
            upstream=azure_url,
            upstream_model="vb-deploy",
            api_version="2024-06-01",
        ),
        ModelSpec(
            "vb-embed",
            kind="external",
            provider=2,
            upstream=azure_url,
            upstream_model="vb-embed-deploy",
            api_version="2024-06-01",
            task=2,
        ),
        ModelSpec("cc-chat", kind="external", provider=3, upstream=openai_url, upstream_model="cc-upstream"),
        ModelSpec("f500", upstream=openai_url, upstream_model="fail-500"),
        ModelSpec("f400", upstream=openai_url, upstream_model="fail-400"),
        ModelSpec("f429", upstream=openai_url, upstream_model="fail-429"),
        ModelSpec("broken", upstream=openai_url, upstream_model="break-stream"),
        ModelSpec("errstream", upstream=openai_url, upstream_model="error-stream"),
        ModelSpec("crlf", upstream=openai_url, upstream_model="crlf-stream"),
        ModelSpec("snapshot", upstream=openai_url, upstream_model="snapshot-stream"),
        ModelSpec("down", upstream=closed_url, upstream_model="down"),
        ModelSpec("alias-chat", kind="alias", target="chat"),
        ModelSpec("hidden", kind="alias", target="chat", unlisted=True),
        ModelSpec("doomed", upstream=openai_url, upstream_model="doomed"),
        ModelSpec("dangling", kind="alias", target="doomed"),
        ModelSpec("private", upstream=openai_url, upstream_model="private", shared=False),
    ]


async def one_model_and_key(server: Any, upstream: str, upstream_model: str) -> tuple[str, str, str]:
    """A tenant of its own with one model (served by the stand-in's `upstream_model`, see tests/fakes/upstream.py)
    and a key that may call it: (model id, key secret, key id)."""
    connect = ConnectJsonCaller(server.base_url)
    people = await make_world(server, connect)
    world = GatewayWorld(tenant_id=people.tenant_id, tag=secrets.token_hex(3), tokens=dict(people.tokens))
    spec = ModelSpec("model", upstream=upstream, upstream_model=upstream_model)
    await create_models(connect, server.admin_token, world, [spec])
    secret = await all_resources_key(connect, world, people.tokens["member"], "all")
    return world.model("model"), secret, world.key_ids["all"]


async def share_model(
    connect: ConnectJsonCaller, admin_token: str, gw: GatewayWorld, public_id: str, sharing: Any
) -> None:
    """Replace the sharing of the world's platform deployment `public_id` (an empty `sharing` withdraws it)."""
    body = {"name": gw.names[public_id][1], "sharing": sharing}
    must(await connect.call(f"{DEPLOYMENTS}/UpdateModelDeploymentSharing", body, token=admin_token))
