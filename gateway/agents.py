"""Preset agents in the gateway: the resolved `AgentRoute` (base model and guardrails routed like any model) and how
an agent shapes a Chat Completions request (its instructions first, its sampling defaults unless the caller set them).

The plan comes from `server.domain.preset_agents.invocation`; this module only adapts it to routes and to the Chat
Completions wire format, so /v1/responses can reuse the same resolution with its own shaping.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.catalog import Route
from server.domain.preset_agents import Invocation
from server.permissions import ResourceRef

__all__ = ["AgentRoute", "shape_chat_request"]


@dataclass(frozen=True)
class AgentRoute:
    """An agent the caller may invoke: its plan, the route of its base model and those of its guardrails (in order)."""

    plan: Invocation
    base: Route
    guardrails: tuple[Route, ...]

    @property
    def public_model_id(self) -> str:
        return self.plan.public_model_id

    @property
    def ref(self) -> ResourceRef:
        return self.plan.agent


def _unset(payload: dict[str, Any], *names: str) -> bool:
    return all(payload.get(name) is None for name in names)


def shape_chat_request(agent: AgentRoute, payload: dict[str, Any]) -> dict[str, Any]:
    """The request the base model receives: the agent's instructions as the first (system) message, then the
    caller's messages; the agent's sampling defaults where the caller left the parameter unset."""
    shaped = dict(payload)
    plan = agent.plan
    if plan.instructions:
        shaped["messages"] = [{"role": "system", "content": plan.instructions}, *payload["messages"]]
    sampling = plan.sampling
    if sampling.temperature is not None and _unset(payload, "temperature"):
        shaped["temperature"] = sampling.temperature
    if sampling.top_p is not None and _unset(payload, "top_p"):
        shaped["top_p"] = sampling.top_p
    if sampling.max_output_tokens is not None and _unset(payload, "max_tokens", "max_completion_tokens"):
        shaped["max_completion_tokens"] = sampling.max_output_tokens
    return shaped
