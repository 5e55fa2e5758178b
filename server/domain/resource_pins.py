"""A reference to a resource pins the one resource it named, not its name.

Names are one namespace a kind (public model ids one namespace for every model), and both are free again once a
resource is deleted: any tenant's admin may then create a resource under the same name. Followed by name, a
platform alias shared with every tenant routed their prompts to that tenant's model, and an agent's MCP server or
a RAG's embedding model could be taken over the same way. So what refers to a resource keeps the uid it had
(`ResourceRow.uid`, random, never reused) when the reference was saved, and a reference whose resource no longer
has that uid is unresolved, as when the resource is simply gone. Only a write by someone allowed to name the new
resource (repointing the alias, saving the agent or the RAG again) pins it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from server.permissions import ResourceRef
from server.store.models import ResourceRow

__all__ = ["Pins", "holds", "holds_among", "key", "pins_of", "still_pinned", "uid_of"]

Pins = Mapping[str, str]  # key(ref) -> uid


def key(ref: ResourceRef) -> str:
    return f"{int(ref.kind)}:{ref.name}"


async def uid_of(session: AsyncSession, ref: ResourceRef) -> str | None:
    """The uid of the resource that now has this name; None when there is none."""
    found = await session.get(ResourceRow, (int(ref.kind), ref.name))
    return found.uid if found is not None else None


async def pins_of(session: AsyncSession, refs: Iterable[ResourceRef]) -> dict[str, str]:
    """The pins of the resources named (those that exist), to store beside the references."""
    wanted = {(int(ref.kind), ref.name) for ref in refs}
    if not wanted:
        return {}
    rows = await session.execute(
        select(ResourceRow.kind, ResourceRow.name, ResourceRow.uid).where(
            tuple_(ResourceRow.kind, ResourceRow.name).in_(wanted)
        )
    )
    return {f"{kind}:{name}": uid for kind, name, uid in rows}


def holds(pins: Pins, ref: ResourceRef, uid_now: str | None) -> bool:
    """The resource named, whose uid is now `uid_now` (None: there is none), is the one the reference pinned."""
    pinned = pins.get(key(ref))
    return pinned is not None and uid_now == pinned


def holds_among(pins: Pins, ref: ResourceRef, uids_now: Pins) -> bool:
    """`holds`, given the uids many resources have now (`pins_of` of them)."""
    return holds(pins, ref, uids_now.get(key(ref)))


async def still_pinned(session: AsyncSession, ref: ResourceRef, pins: Pins) -> bool:
    return holds(pins, ref, await uid_of(session, ref))
