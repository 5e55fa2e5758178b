"""What a publicModelId names, as the gateway would route it, and whether a principal may invoke it.

Used where a setting refers to a model by its client-facing id (a RAG's embedding and rerank models) and must be
checked at write time: the id must exist, resolve (an alias whose target is gone does not), be invokable by the
caller (the alias's right when the id is an alias, as in the gateway) and have the expected task type.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.model_registry import alias_target
from server.domain.principal import Principal
from server.errors import InvalidArgument
from server.permissions import ResourceKind, ResourceRef
from server.store.models import ExternalModelRow, ModelAliasRow, ModelDeploymentRow, PublicModelIdRow

__all__ = ["ModelTarget", "TaskType", "find_target", "require_invokable_model"]


class TaskType(IntEnum):
    """Numbers match platform.modelmanager.v1.TaskType."""

    TEXT_GENERATION = 1
    EMBEDDING = 2
    RERANK = 3
    SPEECH_TO_TEXT = 4
    GUARDRAIL = 5


@dataclass(frozen=True)
class ModelTarget:
    public_model_id: str
    invoked_ref: ResourceRef  # the alias when the id is an alias, else the direct target
    task_type: int
    direct_ref: ResourceRef  # the model itself: the alias's target now when the id is an alias


async def _direct_task(session: AsyncSession, ref: ResourceRef) -> int | None:
    if ref.kind == ResourceKind.MODEL_DEPLOYMENT:
        dep = await session.get(ModelDeploymentRow, ref.name)
        return dep.task_type if dep is not None else None
    if ref.kind == ResourceKind.EXTERNAL_MODEL:
        ext = await session.get(ExternalModelRow, ref.name)
        return ext.task_type if ext is not None else None
    return None


async def find_target(session: AsyncSession, public_model_id: str) -> ModelTarget | None:
    """The resolved model behind a publicModelId, or None when it does not exist or is an unresolved alias."""
    entry = await session.get(PublicModelIdRow, public_model_id)
    if entry is None:
        return None
    ref = ResourceRef(ResourceKind(entry.kind), entry.name)
    direct = ref
    if ref.kind == ResourceKind.MODEL_ALIAS:
        alias = await session.get(ModelAliasRow, entry.name)
        target = await alias_target(session, alias) if alias is not None else None
        if target is None:
            return None
        direct = target
    task = await _direct_task(session, direct)
    return ModelTarget(public_model_id, ref, task, direct) if task is not None else None


async def require_invokable_model(
    session: AsyncSession, principal: Principal, public_model_id: str, *, task: TaskType, field: str, owner: str | None
) -> ModelTarget:
    """The model, if it exists with the expected task type and the principal may have a resource of `owner` (a
    tenant; None: the platform) invoke it on its own authority (permissions.can_reference); else invalid_argument
    naming `field`. An unknown id and one the caller may not use get the same answer, so ids cannot be probed."""
    target = await find_target(session, public_model_id) if public_model_id else None
    if target is None or not await permissions.can_reference(session, principal, target.invoked_ref, owner=owner):
        raise InvalidArgument(f"{field} {public_model_id!r} does not exist or the caller cannot invoke it", field=field)
    if target.task_type != task:
        raise InvalidArgument(
            f"{field} {public_model_id!r} is not a model of task type {task.name.lower()}", field=field
        )
    return target
