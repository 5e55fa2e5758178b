"""What the three kinds of model target share: capabilities, and the one namespace of public model ids.

publicModelId is unique across model deployments, external models and model aliases. The `public_model_ids` table's
primary key enforces it, so two concurrent creates of one id cannot both succeed on PostgreSQL: the loser's insert
fails and becomes AlreadyExists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy import delete, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain import resource_pins
from server.domain.principal import Principal
from server.domain.validation import validate_public_model_id
from server.errors import AlreadyExists, InvalidArgument
from server.permissions import Ownership, ResourceKind, ResourceRef
from server.store.db import integrity_as
from server.store.keyset import Window
from server.store.models import ExternalModelRow, ModelAliasRow, ModelDeploymentRow, PublicModelIdRow

__all__ = [
    "ALIAS_TARGET_KINDS",
    "TASK_TEXT_GENERATION",
    "Capabilities",
    "alias_target",
    "alias_target_among",
    "alias_target_named",
    "capabilities_of",
    "claim_public_model_id",
    "immutable_public_model_id",
    "readable_targets",
    "referenced_alias",
    "release_and_delete",
    "release_public_model_id",
]

TASK_TEXT_GENERATION = 1
_TASK_TYPES = range(1, 6)
_MODALITIES = range(1, 4)


@dataclass(frozen=True)
class Capabilities:
    """Numbers match platform.modelmanager.v1.TaskType and Modality."""

    task_type: int = TASK_TEXT_GENERATION
    input_modalities: tuple[int, ...] = field(default_factory=tuple)


def capabilities_of(task_type: int, input_modalities: list[int] | tuple[int, ...]) -> Capabilities:
    """Validate capabilities; an unset task type means text generation."""
    task = task_type or TASK_TEXT_GENERATION
    if task not in _TASK_TYPES:
        raise InvalidArgument("capabilities.task_type is not a known task type", field="capabilities.task_type")
    modalities = tuple(dict.fromkeys(int(m) for m in input_modalities))
    if any(m not in _MODALITIES for m in modalities):
        raise InvalidArgument(
            "capabilities.input_modalities has an unknown modality", field="capabilities.input_modalities"
        )
    return Capabilities(task, modalities)


Row = TypeVar("Row", ModelDeploymentRow, ExternalModelRow)

# platform.modelmanager.v1.ModelAliasTargetKind -> the resource kind it names (numbered alike)
ALIAS_TARGET_KINDS = {1: ResourceKind.MODEL_DEPLOYMENT, 2: ResourceKind.EXTERNAL_MODEL}


def alias_target_named(alias: ModelAliasRow) -> ResourceRef | None:
    """The target the alias names, whether or not it still exists (its view keeps showing it)."""
    kind = ALIAS_TARGET_KINDS.get(alias.target_kind)
    return ResourceRef(kind, alias.target_name) if kind is not None else None


async def alias_target(session: AsyncSession, alias: ModelAliasRow) -> ResourceRef | None:
    """The model the alias routes to: the one it was pointed at, while that one exists; not a model created later
    under its name (server.domain.resource_pins)."""
    ref = alias_target_named(alias)
    return ref if ref is not None and await resource_pins.still_pinned(session, ref, alias.pins or {}) else None


def alias_target_among(alias: ModelAliasRow, uids: resource_pins.Pins) -> ResourceRef | None:
    """`alias_target` of one of many aliases, given the uids their targets have now (`resource_pins.pins_of`)."""
    ref = alias_target_named(alias)
    if ref is None or not resource_pins.holds_among(alias.pins or {}, ref, uids):
        return None
    return ref


async def readable_targets(
    session: AsyncSession, principal: Principal, kind: ResourceKind, table: type[Row], window: Window | None = None
) -> list[tuple[Row, Ownership]]:
    """The rows of one model kind the caller may read, by name, with their ownership, in three queries whatever the
    count (a window: one keyset page of them)."""
    names = await permissions.readable_names(session, principal, kind)
    if not names:
        return []
    query = select(table).where(table.name.in_(names)).order_by(table.name)
    if window is not None:
        query = window.apply(query, table.name, searched=(table.name, table.public_model_id, table.display_name))
    rows = (await session.scalars(query)).all()
    owners = await permissions.ownerships(session, kind, [row.name for row in rows], principal)
    return [(row, owners[row.name]) for row in rows]


async def release_and_delete(
    session: AsyncSession, ref: ResourceRef, row: ModelDeploymentRow | ExternalModelRow
) -> None:
    """Delete a direct model target: its public id, its row and its access record (aliases to it are kept)."""
    await release_public_model_id(session, row.public_model_id)
    await session.delete(row)
    await permissions.delete_resource(session, ref)


async def claim_public_model_id(session: AsyncSession, public_model_id: str, ref: ResourceRef) -> str:
    validate_public_model_id(public_model_id)
    if await session.get(PublicModelIdRow, public_model_id) is not None:
        raise AlreadyExists(f"publicModelId {public_model_id!r} is already in use", field="public_model_id")
    session.add(PublicModelIdRow(public_model_id=public_model_id, kind=int(ref.kind), name=ref.name))
    with integrity_as(f"publicModelId {public_model_id!r} is already in use", field="public_model_id"):
        await session.flush()
    return public_model_id


async def release_public_model_id(session: AsyncSession, public_model_id: str) -> None:
    await session.execute(delete(PublicModelIdRow).where(PublicModelIdRow.public_model_id == public_model_id))


async def release_tenant_public_model_ids(session: AsyncSession, tenant_id: str) -> None:
    """A deleted tenant's external models and agents give their ids back: their rows go by foreign key with the
    tenant, their claims on the one namespace of ids have none."""
    owned = permissions.owned_by(tenant_id)
    await session.execute(
        delete(PublicModelIdRow).where(tuple_(PublicModelIdRow.kind, PublicModelIdRow.name).in_(owned))
    )


async def referenced_alias(session: AsyncSession, ref: ResourceRef) -> ResourceRef:
    """An alias named by its handle or by its publicModelId, as its handle (what grants store).

    People know an alias by the publicModelId they chose; the `alias_…` handle is the server's. A handle wins, so an
    existing grant keeps meaning what it meant. Other kinds, and names that are neither, are returned unchanged.
    """
    if ref.kind != ResourceKind.MODEL_ALIAS or await session.get(ModelAliasRow, ref.name) is not None:
        return ref
    claimed = await session.get(PublicModelIdRow, ref.name)
    if claimed is not None and claimed.kind == int(ResourceKind.MODEL_ALIAS):
        return ResourceRef(ResourceKind.MODEL_ALIAS, claimed.name)
    return ref


def immutable_public_model_id(requested: str, current: str) -> None:
    if requested and requested != current:
        raise InvalidArgument("public_model_id is immutable", field="public_model_id")
