"""Preset agents: a base model, instructions, default tools, sampling defaults and ordered output guardrails, invoked
like a model through their own publicModelId (one namespace with deployments, external models and aliases).

Tenant-owned agents are created with the tenant's create-agent capability (Editors, Admins); platform-owned ones
need can_manage_models at platform scope. Everything else is the one permission model (`server.permissions`):
reading and invoking an agent are one right (grants on keys, sharing, groups), administering is another, and API
keys never administer.

Delegation: whoever creates or updates an agent must be able to invoke its base model, its guardrails and its MCP
servers at that moment, acting in the agent's tenant; callers of the agent need only the right to invoke the agent
itself. Each time the agent is invoked, what it names must still be usable in its tenant (the platform may have
withdrawn a model from it since), else it fails closed. The base model and the guardrails are stored as the public id
named plus the resource it resolved to, so deleting the base model keeps the agent, reported as unresolved (like an
alias), and a later model claiming the same id is not followed; every resource the agent names is pinned
(server.domain.resource_pins), so neither is a later one created under the same name.

`invocation` is what a surface needs to call an agent (base target, instructions, sampling, guardrails); it knows
nothing of HTTP and is shared by /v1/chat/completions and, later, /v1/responses. `runnable` asks what it asks of many
agents at once, so that /v1/models offers no agent a call to would be refused.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain import resource_pins
from server.domain.model_registry import (
    alias_target,
    claim_public_model_id,
    immutable_public_model_id,
    release_public_model_id,
)
from server.domain.principal import Principal
from server.domain.validation import MAX_DISPLAY_NAME, limit_text, validate_resource_name
from server.errors import FailedPrecondition, InvalidArgument, NotFound
from server.permissions import Capability, ResourceKind, ResourceRef, Sharing
from server.store.keyset import Window
from server.store.models import (
    ExternalMcpServerRow,
    ExternalModelRow,
    ModelAliasRow,
    ModelDeploymentRow,
    PresetAgentRow,
    PublicModelIdRow,
)

__all__ = [
    "MAX_GUARDRAILS",
    "Agent",
    "AgentSpec",
    "Invocation",
    "Sampling",
    "base_pinned",
    "create",
    "delete",
    "get",
    "invocation",
    "list_readable",
    "runnable",
    "update",
]

KIND = ResourceKind.PRESET_AGENT
MAX_GUARDRAILS = 4
MAX_DEFAULT_TOOLS = 16
MAX_INSTRUCTIONS = 100_000
TASK_TEXT_GENERATION, TASK_GUARDRAIL = 1, 5
_MODEL_KINDS = (ResourceKind.MODEL_DEPLOYMENT, ResourceKind.EXTERNAL_MODEL, ResourceKind.MODEL_ALIAS)
# RAGs have not landed yet: until they do, a RAG reference is checked by format only.
_RAG_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$")


@dataclass(frozen=True)
class Sampling:
    temperature: float | None = None
    top_p: float | None = None
    max_output_tokens: int | None = None


@dataclass(frozen=True)
class AgentSpec:
    name: str
    public_model_id: str
    display_name: str
    base_model: str
    instructions: str
    default_mcp_servers: tuple[str, ...]
    default_rags: tuple[str, ...]
    sampling: Sampling
    output_guardrails: tuple[str, ...]
    sharing: Sharing | None  # None: not given (update keeps it; create starts private)


@dataclass(frozen=True)
class Agent:
    name: str
    tenant_id: str | None
    public_model_id: str
    display_name: str
    base_model: str
    base_model_resolved: bool
    instructions: str
    default_mcp_servers: tuple[str, ...]
    default_rags: tuple[str, ...]
    sampling: Sampling
    output_guardrails: tuple[str, ...]
    sharing: Sharing
    created_at: datetime


@dataclass(frozen=True)
class Invocation:
    """What a surface needs to call an agent. The base model and guardrails are named by public id: the surface
    routes them like any model, on the agent's authority (the caller's right to invoke the agent is checked first)."""

    agent: ResourceRef
    public_model_id: str
    base_model: str
    instructions: str
    sampling: Sampling
    output_guardrails: tuple[str, ...]
    default_mcp_servers: tuple[str, ...]
    default_rags: tuple[str, ...]
    pins: resource_pins.Pins  # the MCP servers' (and models') uids when the agent was saved


def _ref(name: str) -> ResourceRef:
    return ResourceRef(KIND, name)


async def _task_of(session: AsyncSession, ref: ResourceRef) -> int | None:
    """The task type of a model (an alias: of its target); None when it no longer exists."""
    if ref.kind == ResourceKind.MODEL_ALIAS:
        alias = await session.get(ModelAliasRow, ref.name)
        target = await alias_target(session, alias) if alias is not None else None
        return await _task_of(session, target) if target is not None else None
    row: ModelDeploymentRow | ExternalModelRow | None
    if ref.kind == ResourceKind.MODEL_DEPLOYMENT:
        row = await session.get(ModelDeploymentRow, ref.name)
    else:
        row = await session.get(ExternalModelRow, ref.name)
    return (row.task_type or TASK_TEXT_GENERATION) if row is not None else None


async def _invokable_model(
    session: AsyncSession, principal: Principal, public_model_id: str, field: str, owner: str | None
) -> ResourceRef:
    """The model a public id names, if the caller may have an agent of `owner` invoke it
    (permissions.can_reference); the same answer for "absent" and "not yours"."""
    entry = await session.get(PublicModelIdRow, public_model_id) if public_model_id else None
    ref = ResourceRef(ResourceKind(entry.kind), entry.name) if entry is not None else None
    if ref is not None and ref.kind == KIND:
        raise InvalidArgument(f"{field} cannot be a preset agent", field=field)
    if (
        ref is None
        or ref.kind not in _MODEL_KINDS
        or not await permissions.can_reference(session, principal, ref, owner=owner)
    ):
        raise InvalidArgument(
            f"{field}: model {public_model_id!r} does not exist or the caller may not invoke it", field=field
        )
    return ref


async def _base(session: AsyncSession, principal: Principal, public_model_id: str, owner: str | None) -> ResourceRef:
    if not public_model_id.strip():
        raise InvalidArgument("base_model is required", field="base_model")
    ref = await _invokable_model(session, principal, public_model_id, "base_model", owner)
    task = await _task_of(session, ref)
    if task is None:
        raise InvalidArgument(f"base_model {public_model_id!r} is an unresolved alias", field="base_model")
    if task != TASK_TEXT_GENERATION:
        raise InvalidArgument(f"base_model {public_model_id!r} is not a text-generation model", field="base_model")
    return ref


async def _guardrails(
    session: AsyncSession, principal: Principal, ids: tuple[str, ...], owner: str | None
) -> list[list[object]]:
    if len(ids) > MAX_GUARDRAILS:
        raise InvalidArgument(
            f"output_guardrails takes at most {MAX_GUARDRAILS} guardrails, got {len(ids)}", field="output_guardrails"
        )
    stored: list[list[object]] = []
    for public_model_id in ids:
        ref = await _invokable_model(session, principal, public_model_id, "output_guardrails", owner)
        if await _task_of(session, ref) != TASK_GUARDRAIL:
            raise InvalidArgument(
                f"output_guardrails: {public_model_id!r} is not a model of task type TASK_TYPE_GUARDRAIL",
                field="output_guardrails",
            )
        stored.append([public_model_id, int(ref.kind), ref.name])
    return stored


async def _mcp_servers(
    session: AsyncSession, principal: Principal, names: tuple[str, ...], owner: str | None
) -> list[str]:
    if len(names) > MAX_DEFAULT_TOOLS:
        raise InvalidArgument(
            f"default_mcp_servers takes at most {MAX_DEFAULT_TOOLS} servers", field="default_mcp_servers"
        )
    for name in names:
        ref = ResourceRef(ResourceKind.MCP_SERVER, name)
        if (
            not name
            or await session.get(ExternalMcpServerRow, name) is None
            or not await permissions.can_reference(session, principal, ref, owner=owner)
        ):
            raise InvalidArgument(
                f"default_mcp_servers: MCP server {name!r} does not exist or the caller may not invoke it",
                field="default_mcp_servers",
            )
    return list(dict.fromkeys(names))


async def _rags(session: AsyncSession, principal: Principal, ids: tuple[str, ...], owner: str | None) -> list[str]:
    """The agent searches its RAGs on its own authority (gateway.responses.agent_tools), so the saver must be able to
    use each one, like its MCP servers."""
    if len(ids) > MAX_DEFAULT_TOOLS:
        raise InvalidArgument(f"default_rags takes at most {MAX_DEFAULT_TOOLS} RAGs", field="default_rags")
    for rag in ids:
        if not _RAG_ID.fullmatch(rag):
            raise InvalidArgument(f"default_rags: {rag!r} is not a RAG id", field="default_rags")
        if not await permissions.can_reference(session, principal, ResourceRef(ResourceKind.RAG, rag), owner=owner):
            raise InvalidArgument(
                f"default_rags: RAG {rag!r} does not exist or the caller may not use it", field="default_rags"
            )
    return list(dict.fromkeys(ids))


def _sampling(value: Sampling) -> Sampling:
    t, p, m = value.temperature, value.top_p, value.max_output_tokens
    if t is not None and not (math.isfinite(t) and 0 <= t <= 2):
        raise InvalidArgument("sampling.temperature must be between 0 and 2", field="sampling.temperature")
    if p is not None and not (math.isfinite(p) and 0 < p <= 1):
        raise InvalidArgument("sampling.top_p must be above 0 and at most 1", field="sampling.top_p")
    if m is not None and m < 1:
        raise InvalidArgument("sampling.max_output_tokens must be at least 1", field="sampling.max_output_tokens")
    return value


def _instructions(value: str) -> str:
    if len(value) > MAX_INSTRUCTIONS:
        raise InvalidArgument(f"instructions must be at most {MAX_INSTRUCTIONS} characters", field="instructions")
    return value


async def _apply(session: AsyncSession, principal: Principal, row: PresetAgentRow, spec: AgentSpec) -> None:
    """Validate and write every mutable field; nothing is written when one is invalid (the caller's transaction
    rolls back on the raise)."""
    owner = row.tenant_id  # what the agent names, it uses on its own authority: usable in its tenant alone
    base = await _base(session, principal, spec.base_model, owner)
    guardrails = await _guardrails(session, principal, spec.output_guardrails, owner)
    servers = await _mcp_servers(session, principal, spec.default_mcp_servers, owner)
    rags = await _rags(session, principal, spec.default_rags, owner)
    sampling = _sampling(spec.sampling)
    row.instructions = _instructions(spec.instructions)
    row.base_public_model_id, row.base_kind, row.base_name = spec.base_model, int(base.kind), base.name
    row.output_guardrails = guardrails
    row.default_mcp_servers, row.default_rags = servers, rags
    named = [base, *(_guardrail_ref(g) for g in guardrails), *(_mcp_ref(name) for name in servers)]
    row.pins = await resource_pins.pins_of(session, named)
    row.temperature, row.top_p, row.max_output_tokens = sampling.temperature, sampling.top_p, sampling.max_output_tokens
    if spec.display_name:
        row.display_name = limit_text(spec.display_name, "display_name", MAX_DISPLAY_NAME)


async def _require_create(session: AsyncSession, principal: Principal, tenant_id: str | None) -> str | None:
    if tenant_id is None:
        permissions.require_platform_scope(principal, "can_manage_models")
        return None
    tenant_id = permissions.resolve_tenant(principal, tenant_id)
    await permissions.require_capability(session, principal, tenant_id, Capability.CREATE_AGENT)
    return tenant_id


async def create(session: AsyncSession, principal: Principal, spec: AgentSpec, *, tenant_id: str | None) -> Agent:
    """`tenant_id` None creates a platform-owned agent; "" means the caller's tenant scope."""
    tenant_id = await _require_create(session, principal, tenant_id)
    name = validate_resource_name(spec.name)
    await permissions.create_resource(
        session, principal, _ref(name), tenant_id=tenant_id, sharing=spec.sharing or Sharing()
    )
    await claim_public_model_id(session, spec.public_model_id, _ref(name))
    row = PresetAgentRow(
        name=name, tenant_id=tenant_id, public_model_id=spec.public_model_id, display_name=spec.public_model_id
    )
    await _apply(session, principal, row, spec)
    session.add(row)
    await session.flush()
    return await _view(session, principal, row)


async def _row(session: AsyncSession, name: str) -> PresetAgentRow:
    row = await session.get(PresetAgentRow, name)
    assert row is not None, "a resource row without its preset agent"
    return row


async def get(session: AsyncSession, principal: Principal, name: str) -> Agent:
    await permissions.require_read(session, principal, _ref(name))
    return await _view(session, principal, await _row(session, name))


async def update(session: AsyncSession, principal: Principal, spec: AgentSpec) -> Agent:
    name = spec.name
    if not name:
        raise InvalidArgument("preset_agent.name is required", field="preset_agent.name")
    await permissions.require_admin(session, principal, _ref(name))
    row = await _row(session, name)
    immutable_public_model_id(spec.public_model_id, row.public_model_id)
    await _apply(session, principal, row, spec)
    if spec.sharing is not None:
        await permissions.set_sharing(session, principal, _ref(name), spec.sharing)
    await session.flush()
    return await _view(session, principal, row)


async def delete(session: AsyncSession, principal: Principal, name: str) -> None:
    await permissions.require_admin(session, principal, _ref(name))
    row = await _row(session, name)
    await release_public_model_id(session, row.public_model_id)
    await session.delete(row)
    await permissions.delete_resource(session, _ref(name))


async def list_readable(
    session: AsyncSession, principal: Principal, *, tenant_id: str = "", window: Window | None = None
) -> list[Agent]:
    """Every agent the caller can read (optionally only those owned by `tenant_id`, a tenant the caller acts in), by
    public model id (a window: one keyset page of them)."""
    if tenant_id:
        await permissions.require_listed_tenant(session, principal, tenant_id)
    names = await permissions.readable_names(session, principal, KIND)
    if not names:
        return []
    query = select(PresetAgentRow).where(PresetAgentRow.name.in_(names))
    if tenant_id:
        query = query.where(PresetAgentRow.tenant_id == tenant_id)
    query = query.order_by(PresetAgentRow.public_model_id)
    if window is not None:
        query = window.apply(
            query,
            PresetAgentRow.public_model_id,
            searched=(PresetAgentRow.name, PresetAgentRow.public_model_id, PresetAgentRow.display_name),
        )
    rows = (await session.scalars(query)).all()
    owners = await permissions.ownerships(session, KIND, [r.name for r in rows], principal)
    uids = await resource_pins.pins_of(session, [_base_ref(r) for r in rows])
    return [_build(r, owners[r.name], resolved=base_pinned(r, uids)) for r in rows]


def _base_ref(row: PresetAgentRow) -> ResourceRef:
    return ResourceRef(ResourceKind(row.base_kind), row.base_name)


def _guardrail_ref(stored: list[Any]) -> ResourceRef:
    return ResourceRef(ResourceKind(int(stored[1])), str(stored[2]))


def _mcp_ref(name: str) -> ResourceRef:
    return ResourceRef(ResourceKind.MCP_SERVER, name)


def base_pinned(row: PresetAgentRow, uids: resource_pins.Pins) -> bool:
    """The base model is still the one the agent was saved with, given the uids models have now."""
    base = _base_ref(row)
    return resource_pins.holds_among(row.pins or {}, base, uids)


async def _resolved(session: AsyncSession, row: PresetAgentRow) -> bool:
    return await resource_pins.still_pinned(session, _base_ref(row), row.pins or {})


async def _view(session: AsyncSession, principal: Principal, row: PresetAgentRow) -> Agent:
    owner = await permissions.ownership(session, _ref(row.name), principal)
    return _build(row, owner, resolved=await _resolved(session, row))


def _sampling_of(row: PresetAgentRow) -> Sampling:
    return Sampling(row.temperature, row.top_p, row.max_output_tokens)


def _build(row: PresetAgentRow, owner: permissions.Ownership, *, resolved: bool) -> Agent:
    return Agent(
        name=row.name,
        tenant_id=row.tenant_id,
        public_model_id=row.public_model_id,
        display_name=row.display_name,
        base_model=row.base_public_model_id,
        base_model_resolved=resolved,
        instructions=row.instructions,
        default_mcp_servers=tuple(row.default_mcp_servers or ()),
        default_rags=tuple(row.default_rags or ()),
        sampling=_sampling_of(row),
        output_guardrails=tuple(str(g[0]) for g in row.output_guardrails or ()),
        sharing=owner.sharing,
        created_at=row.created_at,
    )


def _named(row: PresetAgentRow) -> dict[ResourceRef, str]:
    """Everything the agent uses on its own authority, as a refusal names it, in the order refusals report it."""
    named = {_base_ref(row): f"model '{row.base_public_model_id}'"}
    named |= {_guardrail_ref(g): f"output guardrail '{g[0]}'" for g in row.output_guardrails or ()}
    named |= {_mcp_ref(n): f"MCP server '{n}'" for n in row.default_mcp_servers or ()}
    named |= {ResourceRef(ResourceKind.RAG, r): f"RAG '{r}'" for r in row.default_rags or ()}
    return named


@dataclass(frozen=True)
class _Now:
    """What the agents' models are now: the resource each public id names, and each resource's uid."""

    entries: dict[str, tuple[int, str]]
    uids: resource_pins.Pins

    def holds(self, public_model_id: str, ref: ResourceRef, pins: resource_pins.Pins) -> bool:
        """The public id still names the resource it named when the agent was saved, and that is still the same
        resource (neither a public id nor a name given to another resource since is followed)."""
        named = self.entries.get(public_model_id) == (int(ref.kind), ref.name)
        return named and resource_pins.holds_among(pins, ref, self.uids)


async def _models_now(session: AsyncSession, rows: Sequence[PresetAgentRow]) -> _Now:
    models = [(row.base_public_model_id, _base_ref(row)) for row in rows]
    models += [(str(g[0]), _guardrail_ref(g)) for row in rows for g in row.output_guardrails or ()]
    ids = {public_model_id for public_model_id, _ in models}
    found = await session.scalars(select(PublicModelIdRow).where(PublicModelIdRow.public_model_id.in_(ids)))
    entries = {e.public_model_id: (e.kind, e.name) for e in found}
    return _Now(entries, await resource_pins.pins_of(session, [ref for _, ref in models]))


async def _guardrails_hold(session: AsyncSession, row: PresetAgentRow, now: _Now) -> bool:
    for stored in row.output_guardrails or ():
        ref = _guardrail_ref(stored)
        if not now.holds(str(stored[0]), ref, row.pins or {}) or await _task_of(session, ref) != TASK_GUARDRAIL:
            return False
    return True


async def _refusals(session: AsyncSession, rows: Sequence[PresetAgentRow]) -> dict[str, FailedPrecondition]:
    """Why each of the agents that cannot run now cannot, by name: its base model or one of its output guardrails no
    longer exists, a guardrail changed task type, or it names something no longer usable in its tenant
    (`permissions.withdrawn`: the rule `can_reference` applied when it was saved, less the saver — the platform may
    have stopped sharing a model, MCP server or RAG with the tenant since, and the agent must not go on reaching it
    for the tenant's members). The agent fails closed rather than answering unguarded, or on what its tenant lost.
    A few queries for any number of agents (one per owner for what they use): a listing asks what a call would."""
    now = await _models_now(session, rows)
    lost: dict[str | None, set[ResourceRef]] = {}
    for owner in {row.tenant_id for row in rows}:
        used = [ref for row in rows if row.tenant_id == owner for ref in _named(row)]
        lost[owner] = set(await permissions.withdrawn(session, used, owner=owner))
    refused: dict[str, FailedPrecondition] = {}
    for row in rows:
        agent = row.public_model_id
        if not now.holds(row.base_public_model_id, _base_ref(row), row.pins or {}):
            refused[row.name] = FailedPrecondition(
                f"The preset agent '{agent}' is unresolved: its base model no longer exists.", field="model"
            )
        elif not await _guardrails_hold(session, row, now):
            refused[row.name] = FailedPrecondition(
                f"The preset agent '{agent}' cannot run: one of its output guardrails no longer exists.", field="model"
            )
        elif gone := [what for ref, what in _named(row).items() if ref in lost[row.tenant_id]]:
            refused[row.name] = FailedPrecondition(
                f"The preset agent '{agent}' cannot run: the {gone[0]} it uses is no longer available in its tenant.",
                field="model",
            )
    return refused


async def runnable(session: AsyncSession, names: Iterable[str]) -> set[str]:
    """Those of the named agents that `invocation` would not refuse now: /v1/models offers an agent only when a call
    to it would be answered."""
    wanted = set(names)
    if not wanted:
        return set()
    rows = (await session.scalars(select(PresetAgentRow).where(PresetAgentRow.name.in_(wanted)))).all()
    refused = await _refusals(session, rows)
    return {row.name for row in rows if row.name not in refused}


async def invocation(session: AsyncSession, name: str) -> Invocation:
    """The agent's call plan. The caller's right to invoke the agent is the surface's check (it caches it); an agent
    that cannot run now (`_refusals`) is refused as failed_precondition."""
    row = await session.get(PresetAgentRow, name)
    if row is None:
        raise NotFound(f"preset agent {name!r} not found", field="model")
    refused = (await _refusals(session, [row])).get(row.name)
    if refused is not None:
        raise refused
    return Invocation(
        agent=_ref(row.name),
        public_model_id=row.public_model_id,
        base_model=row.base_public_model_id,
        instructions=row.instructions,
        sampling=_sampling_of(row),
        output_guardrails=tuple(str(g[0]) for g in row.output_guardrails or ()),
        default_mcp_servers=tuple(row.default_mcp_servers or ()),
        default_rags=tuple(row.default_rags or ()),
        pins=dict(row.pins or {}),
    )
