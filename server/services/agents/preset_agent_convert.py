"""PresetAgent messages <-> server.domain.preset_agents values."""

from __future__ import annotations

from gen.platform.agents.v1 import preset_agent_pb2 as pb
from server.domain.preset_agents import Agent, AgentSpec, Sampling
from server.services.modelmanager.convert import sharing, sharing_in

__all__ = ["agent", "spec"]


def _sampling_in(value: pb.PresetAgentSampling | None) -> Sampling:
    if value is None:
        return Sampling()
    return Sampling(
        temperature=value.temperature if value.HasField("temperature") else None,
        top_p=value.top_p if value.HasField("top_p") else None,
        max_output_tokens=value.max_output_tokens if value.HasField("max_output_tokens") else None,
    )


def spec(value: pb.PresetAgent | None) -> AgentSpec:
    value = value or pb.PresetAgent()
    return AgentSpec(
        name=value.name,
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        base_model=value.base_model,
        instructions=value.instructions,
        default_mcp_servers=tuple(value.default_mcp_servers),
        default_rags=tuple(value.default_rags),
        sampling=_sampling_in(value.sampling if value.HasField("sampling") else None),
        output_guardrails=tuple(value.output_guardrails),
        sharing=sharing_in(value.sharing) if value.HasField("sharing") else None,
    )


def agent(value: Agent) -> pb.PresetAgent:
    s = value.sampling
    return pb.PresetAgent(
        name=value.name,
        public_model_id=value.public_model_id,
        display_name=value.display_name,
        base_model=value.base_model,
        base_model_resolved=value.base_model_resolved,
        instructions=value.instructions,
        default_mcp_servers=list(value.default_mcp_servers),
        default_rags=list(value.default_rags),
        sampling=pb.PresetAgentSampling(
            temperature=s.temperature, top_p=s.top_p, max_output_tokens=s.max_output_tokens
        ),
        output_guardrails=list(value.output_guardrails),
        sharing=sharing(value.sharing),
        tenant_id=value.tenant_id or "",
    )
