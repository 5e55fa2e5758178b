"""The gateway's reads of the model registry: public model id -> `Route`, and the catalogue for /v1/models.

Reads the registry's tables (public_model_ids, model_deployments, external_models, model_aliases, resources) with
the registry's own rules: an alias follows its one direct target, and an alias whose target is gone is unresolved.
Provider keys are decrypted here (server.crypto) for the outbound call only. It is a read adapter shaped for the hot
path (one primary-key read per hop, answers the gateway caches); the rules it follows — what an alias may target,
what "unresolved" means — are the registry's (`server.domain.model_registry.alias_target`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.catalog import ModelInfo, Provider, Route, TaskType
from server.crypto import SecretBox
from server.domain import resource_pins
from server.domain.model_registry import alias_target, alias_target_among
from server.domain.networks import Reach
from server.domain.preset_agents import base_pinned
from server.permissions import ResourceKind, ResourceRef
from server.settings import Secret
from server.store.models import (
    ExternalModelRow,
    ModelAliasRow,
    ModelDeploymentRow,
    PresetAgentRow,
    PublicModelIdRow,
    ResourceRow,
)

__all__ = ["AgentEntry", "UnresolvedAlias", "list_models", "resolve"]


@dataclass(frozen=True)
class UnresolvedAlias:
    """The client named an alias whose target no longer exists."""

    alias_ref: ResourceRef


@dataclass(frozen=True)
class AgentEntry:
    """The client named a preset agent; `gateway.access` resolves its plan (server.domain.preset_agents)."""

    ref: ResourceRef


def _task(value: int) -> TaskType:
    try:
        return TaskType(value)
    except ValueError:
        return TaskType.TEXT_GENERATION


async def _direct(
    session: AsyncSession, box: SecretBox, public_model_id: str, ref: ResourceRef, alias: ResourceRef | None
) -> Route | None:
    if ref.kind == ResourceKind.MODEL_DEPLOYMENT:
        dep = await session.get(ModelDeploymentRow, ref.name)
        if dep is None:
            return None
        return Route(
            public_model_id=public_model_id,
            ref=ref,
            alias_ref=alias,
            provider=Provider.IN_CLUSTER,
            base_url=dep.endpoint_url,
            upstream_model_id=dep.served_model_id or dep.public_model_id,
            query_prefix=dep.query_prefix,
            task_type=_task(dep.task_type),
            reach=Reach.PLATFORM,  # in-cluster deployments are registered by platform operators only
        )
    if ref.kind == ResourceKind.EXTERNAL_MODEL:
        ext = await session.get(ExternalModelRow, ref.name)
        if ext is None:
            return None
        provider = Provider(ext.provider)
        # A tenant's model goes where the tenant said, except VENDOR_A's, whose base URL is platform configuration.
        tenant_chosen = ext.tenant_id is not None and provider != Provider.VENDOR_A
        return Route(
            public_model_id=public_model_id,
            ref=ref,
            alias_ref=alias,
            provider=provider,
            base_url=ext.base_url,
            upstream_model_id=ext.provider_model_id,
            api_version=ext.api_version,
            api_key=Secret(box.open(ext.api_key_encrypted) if ext.api_key_encrypted else ""),
            query_prefix=ext.query_prefix,
            task_type=_task(ext.task_type),
            reach=Reach.TENANT if tenant_chosen else Reach.PLATFORM,
            tenant_owned=ext.tenant_id is not None,
        )
    return None


async def _with_uid(route: Route | None, session: AsyncSession, entry: PublicModelIdRow) -> Route | None:
    """The route with the uid of the resource its public id names (the alias, when it names one)."""
    if route is None:
        return None
    uid = await resource_pins.uid_of(session, ResourceRef(ResourceKind(entry.kind), entry.name))
    return replace(route, uid=uid or "")


async def resolve(
    session: AsyncSession, box: SecretBox, public_model_id: str, pinned: ResourceRef | None = None
) -> Route | UnresolvedAlias | AgentEntry | None:
    """Where a public id routes now. `pinned`: where an alias it names goes instead of its target now (a RAG's
    embedding model as it resolved when the RAG was created); the route keeps the alias's public id, ref and uid,
    so access, limits and metering still go by what the RAG names."""
    entry = await session.get(PublicModelIdRow, public_model_id)
    if entry is None:
        return None
    kind = ResourceKind(entry.kind)
    if kind == ResourceKind.PRESET_AGENT:
        return AgentEntry(ResourceRef(kind, entry.name))
    if kind != ResourceKind.MODEL_ALIAS:
        return await _with_uid(
            await _direct(session, box, public_model_id, ResourceRef(kind, entry.name), None), session, entry
        )
    alias_ref = ResourceRef(ResourceKind.MODEL_ALIAS, entry.name)
    alias = await session.get(ModelAliasRow, entry.name)
    if alias is None:
        return None
    target = pinned or await alias_target(session, alias)
    route = await _direct(session, box, public_model_id, target, alias_ref) if target is not None else None
    return await _with_uid(route, session, entry) if route is not None else UnresolvedAlias(alias_ref)


async def list_models(session: AsyncSession) -> list[ModelInfo]:
    resources = (await session.scalars(select(ResourceRow))).all()
    created = {(row.kind, row.name): (row.created_at, row.tenant_id) for row in resources}
    uids = {resource_pins.key(ResourceRef(ResourceKind(row.kind), row.name)): row.uid for row in resources}

    def meta(kind: ResourceKind, name: str) -> tuple[int, str]:
        when, tenant = created.get((int(kind), name), (None, None))
        return (int(when.timestamp()) if when else 0, tenant or "switchboard")

    out: list[ModelInfo] = []
    targets: dict[tuple[int, str], ModelInfo] = {}
    for dep in await session.scalars(select(ModelDeploymentRow)):
        ref = ResourceRef(ResourceKind.MODEL_DEPLOYMENT, dep.name)
        ts, owner = meta(ref.kind, dep.name)
        info = ModelInfo(
            dep.public_model_id,
            ref,
            _task(dep.task_type),
            tuple(dep.input_modalities or ()),
            ts,
            owner,
        )
        out.append(info)
        targets[(int(ResourceKind.MODEL_DEPLOYMENT), dep.name)] = info
    for ext in await session.scalars(select(ExternalModelRow)):
        ref = ResourceRef(ResourceKind.EXTERNAL_MODEL, ext.name)
        ts, owner = meta(ref.kind, ext.name)
        info = ModelInfo(ext.public_model_id, ref, _task(ext.task_type), tuple(ext.input_modalities or ()), ts, owner)
        out.append(info)
        targets[(int(ResourceKind.EXTERNAL_MODEL), ext.name)] = info
    for alias in await session.scalars(select(ModelAliasRow)):
        target_ref = alias_target_among(alias, uids)
        target = targets.get((int(target_ref.kind), target_ref.name)) if target_ref is not None else None
        if target is None:
            continue  # unresolved aliases cannot be used, so they are not offered
        ref = ResourceRef(ResourceKind.MODEL_ALIAS, alias.name)
        ts, owner = meta(ref.kind, alias.name)
        info = ModelInfo(
            alias.public_model_id,
            ref,
            target.task_type,
            target.input_modalities,
            ts,
            owner,
            unlisted=alias.unlisted,
        )
        out.append(info)
        targets[(int(ResourceKind.MODEL_ALIAS), alias.name)] = info
    for agent in await session.scalars(select(PresetAgentRow)):
        base = targets.get((agent.base_kind, agent.base_name)) if base_pinned(agent, uids) else None
        if base is None:
            continue  # an unresolved agent cannot be used, so it is not offered
        ref = ResourceRef(ResourceKind.PRESET_AGENT, agent.name)
        ts, owner = meta(ref.kind, agent.name)
        # An agent generates text whatever it wraps, and accepts what its base model accepts (spec: /v1/models).
        out.append(
            ModelInfo(
                agent.public_model_id,
                ref,
                TaskType.TEXT_GENERATION,
                base.input_modalities,
                ts,
                owner,
            )
        )
    return out
