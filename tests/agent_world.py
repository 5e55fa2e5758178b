"""Preset agents for gateway tests, built through the public management API on top of the gateway world: an echo
base model (answers with the caller's last message), fake guardrails (tests.fakes.upstream) and agents using them."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from tests.clients import ConnectJsonCaller
from tests.gateway_world import GatewayWorld, ModelSpec, create_models
from tests.world import must

AGENTS = "platform.agents.v1.PresetAgentService"
INSTRUCTIONS = "You are terse. Never reveal secrets."


@dataclass
class AgentWorld:
    gw: GatewayWorld
    agents: dict[str, str] = field(default_factory=dict)  # label -> agent public model id
    names: dict[str, str] = field(default_factory=dict)  # label -> agent resource name

    def model(self, label: str) -> str:
        return self.gw.model(label)


def agent_body(world: AgentWorld, label: str, base: str, guardrails: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "name": f"{label}-{world.gw.tag}",
        "publicModelId": world.gw.model(f"agent-{label}"),
        "baseModel": world.gw.model(base),
        "outputGuardrails": [world.gw.model(g) for g in guardrails],
        **extra,
    }


async def create_agent(
    connect: ConnectJsonCaller, token: str, world: AgentWorld, label: str, body: dict[str, Any]
) -> dict[str, Any]:
    request = {"tenantId": world.gw.tenant_id, "presetAgent": body}
    created: dict[str, Any] = must(await connect.call(f"{AGENTS}/CreatePresetAgent", request, token=token))[
        "presetAgent"
    ]
    world.agents[label], world.names[label] = created["publicModelId"], created["name"]
    return created


async def build_agent_world(
    connect: ConnectJsonCaller, admin_token: str, gw: GatewayWorld, openai_url: str
) -> AgentWorld:
    text, image = 1, 2
    specs = [
        ModelSpec("echo", upstream=openai_url, upstream_model="echo", modalities=(text, image)),
        ModelSpec("echo-text", upstream=openai_url, upstream_model="echo", modalities=(text,)),
        ModelSpec("g-llama", upstream=openai_url, upstream_model="guard-llama", task=5),
        ModelSpec("g-json", upstream=openai_url, upstream_model="guard-json", task=5),
        ModelSpec("g-garbage", upstream=openai_url, upstream_model="guard-garbage", task=5),
        ModelSpec("g-down", upstream=openai_url, upstream_model="fail-500", task=5),
        ModelSpec("g-private", upstream=openai_url, upstream_model="guard-json", task=5, shared=False),
    ]
    await create_models(connect, admin_token, gw, specs)
    world = AgentWorld(gw)
    editor = gw.tokens["editor"]
    shared = {"sharing": {"shareToAll": True}}
    sampling = {"temperature": 0.3, "topP": 0.5, "maxOutputTokens": 50}
    plain = agent_body(world, "plain", "echo", [], instructions=INSTRUCTIONS, sampling=sampling, **shared)
    await create_agent(connect, editor, world, "plain", plain)
    await create_agent(
        connect, editor, world, "guarded", agent_body(world, "guarded", "echo-text", ["g-llama", "g-json"], **shared)
    )
    await create_agent(
        connect, editor, world, "garbage", agent_body(world, "garbage", "echo-text", ["g-garbage"], **shared)
    )
    await create_agent(connect, editor, world, "down", agent_body(world, "down", "echo-text", ["g-down"], **shared))
    await create_agent(connect, editor, world, "unshared", agent_body(world, "unshared", "echo", []))
    # The gateway may have cached what the shared keys can use (a models list of an earlier module) for up to
    # SWITCHBOARD_API_KEY_CACHE_SECONDS (1 s in tests): the new agents are promised only after that bound.
    await asyncio.sleep(1.2)
    return world
