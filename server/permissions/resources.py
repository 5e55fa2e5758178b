"""One permission model for every resource kind (model deployments, external models, preset agents, MCP servers,
RAGs, model aliases).

Ownership
    Platform-scoped (tenant_id NULL): administered only from platform scope — a user session holding the kind's
    platform role and not scoped to a tenant — and shared read-only with every tenant (share_to_all) or chosen
    tenants (shared_with). Tenant-scoped: administered by the tenant's admins, the creator and ADMIN grants; read by
    them, by the whole tenant when share_to_all, and by READER grants to a user, their groups, the tenant, a service
    account or an API key.
API keys
    Never administer. Personal (all resources) keys read what their owner reads in the key's tenant. Personal keys
    reach only what they are granted (directly, through the groups the key is attached to, or by a grant to the key
    itself) and never beyond their owner's read access; service-account keys reach what they are granted among
    what the key's tenant may use (its own, and platform resources shared with it or granted to it, its groups or
    its members).

Reading and invoking are the same right. Every check is one SQL condition (`_visible`) over `resources`, so a single
check and "list everything this principal can read" share the rule and cost one query each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import IntEnum

from sqlalchemy import ColumnElement, Select, and_, delete, exists, false, or_, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from server.audit.calls import CallRecorder
from server.domain.principal import ApiKeyType, Principal
from server.errors import AlreadyExists, InvalidArgument, NotFound, PermissionDenied
from server.permissions.tenancy import Capability, TenantRole, has_capability
from server.store.db import integrity_as
from server.store.models import (
    ApiKeyGrantRow,
    ApiKeyGroupRow,
    ApiKeyRow,
    GroupMemberRow,
    GroupRow,
    ResourcePermissionRow,
    ResourceRow,
    ResourceShareRow,
    ServiceAccountRow,
    TenantMemberRow,
    TenantRow,
)

__all__ = [
    "Ownership",
    "Permission",
    "ResourceKind",
    "ResourceRef",
    "Role",
    "Sharing",
    "SubjectType",
    "add_permission",
    "can_admin",
    "can_invoke",
    "can_read",
    "create_resource",
    "delete_resource",
    "forget_subject",
    "list_permissions",
    "ownership",
    "ownerships",
    "permission_of",
    "readable_names",
    "remove_permission",
    "require_admin",
    "require_read",
    "set_sharing",
    "withdrawn",
]


class ResourceKind(IntEnum):
    """Numbers match platform.tenants.v1.ResourceKind."""

    MODEL_DEPLOYMENT = 1
    EXTERNAL_MODEL = 2
    PRESET_AGENT = 3
    MCP_SERVER = 4
    RAG = 5
    MODEL_ALIAS = 6


class SubjectType(IntEnum):
    """Numbers match platform.modelmanager.v1.SubjectType."""

    USER = 1
    GROUP = 2
    SERVICE_ACCOUNT = 3
    TENANT = 4
    API_KEY = 5


class Role(IntEnum):
    """Numbers match platform.modelmanager.v1.DeploymentRole."""

    READER = 1
    ADMIN = 2


@dataclass(frozen=True)
class ResourceRef:
    kind: ResourceKind
    name: str


@dataclass(frozen=True)
class Sharing:
    share_to_all: bool = False
    shared_with: tuple[str, ...] = ()


@dataclass(frozen=True)
class Permission:
    subject_type: SubjectType
    subject_id: str
    role: Role


@dataclass(frozen=True)
class Ownership:
    tenant_id: str | None
    created_by: str | None
    sharing: Sharing


_PLATFORM_ROLE = {
    ResourceKind.MODEL_DEPLOYMENT: "can_manage_models",
    ResourceKind.EXTERNAL_MODEL: "can_manage_models",
    ResourceKind.MODEL_ALIAS: "can_manage_models",
    ResourceKind.PRESET_AGENT: "can_manage_models",
    ResourceKind.MCP_SERVER: "can_manage_tenants",
    ResourceKind.RAG: "can_manage_tenants",
}


@dataclass(frozen=True)
class _Reach:
    """Everything about a principal the visibility rule needs, gathered once per transaction."""

    user_id: str | None
    tenants: tuple[str, ...]  # tenants in whose name the principal reads
    admin_tenants: tuple[str, ...]
    admin_of_every_tenant: bool
    platform_roles: frozenset[str]  # only for unscoped user sessions: "platform scope"
    subjects: tuple[tuple[int, str], ...]  # grant subjects that stand for the principal (users: self, groups, tenants)
    key: tuple[str, ApiKeyType] | None
    key_subjects: tuple[tuple[int, str], ...]  # grant subjects that stand for an API key (key, its groups, its SA)


async def _user_reach(session: AsyncSession, user_id: str, only_tenant: str | None) -> tuple[list[str], list[str]]:
    query = select(TenantMemberRow.tenant_id, TenantMemberRow.role).where(TenantMemberRow.user_id == user_id)
    if only_tenant is not None:
        query = query.where(TenantMemberRow.tenant_id == only_tenant)
    rows = (await session.execute(query)).all()
    return [t for t, _ in rows], [t for t, r in rows if r == TenantRole.ADMIN]


async def _groups_of(session: AsyncSession, user_id: str, tenants: list[str]) -> list[str]:
    if not tenants:
        return []
    query = (
        select(GroupMemberRow.group_id)
        .join(GroupRow, GroupRow.id == GroupMemberRow.group_id)
        .where(GroupMemberRow.user_id == user_id, GroupRow.tenant_id.in_(tenants))
    )
    return list(await session.scalars(query))


async def _compute_reach(session: AsyncSession, principal: Principal) -> _Reach:
    key = principal.api_key
    only_tenant = key.tenant_id if key is not None else principal.scoped_tenant_id
    tenants: list[str] = []
    admin_tenants: list[str] = []
    groups: list[str] = []
    if principal.user_id is not None and (key is None or key.type != ApiKeyType.SERVICE_ACCOUNT):
        tenants, admin_tenants = await _user_reach(session, principal.user_id, only_tenant)
        groups = await _groups_of(session, principal.user_id, tenants)
    admin_of_every_tenant = False
    if key is None and principal.can_manage_tenants:
        if only_tenant is None:
            admin_of_every_tenant = True
        else:
            tenants = sorted({*tenants, only_tenant})
            admin_tenants = sorted({*admin_tenants, only_tenant})
    if key is not None and key.type == ApiKeyType.SERVICE_ACCOUNT:
        tenants = [key.tenant_id]
    subjects: list[tuple[int, str]] = [(SubjectType.TENANT, t) for t in tenants]
    if principal.user_id is not None and (key is None or key.type != ApiKeyType.SERVICE_ACCOUNT):
        subjects.append((SubjectType.USER, principal.user_id))
        subjects.extend((SubjectType.GROUP, g) for g in groups)
    key_subjects: list[tuple[int, str]] = []
    if key is not None:
        key_groups = await session.scalars(
            select(ApiKeyGroupRow.group_id).where(ApiKeyGroupRow.api_key_id == key.key_id)
        )
        key_subjects = [(SubjectType.API_KEY, key.key_id), *((SubjectType.GROUP, g) for g in key_groups)]
        if key.service_account_id:
            key_subjects.append((SubjectType.SERVICE_ACCOUNT, key.service_account_id))
    roles: frozenset[str] = frozenset()
    if key is None and principal.scoped_tenant_id is None:
        roles = frozenset(r for r in ("can_manage_tenants", "can_manage_models") if getattr(principal, r))
    return _Reach(
        user_id=principal.user_id,
        tenants=tuple(tenants),
        admin_tenants=tuple(admin_tenants),
        admin_of_every_tenant=admin_of_every_tenant,
        platform_roles=roles,
        subjects=tuple(subjects),
        key=(key.key_id, key.type) if key is not None else None,
        key_subjects=tuple(key_subjects),
    )


async def _reach(session: AsyncSession, principal: Principal) -> _Reach:
    cache: dict[Principal, _Reach] = session.info.setdefault("switchboard_reach", {})
    if principal not in cache:
        cache[principal] = await _compute_reach(session, principal)
    return cache[principal]


def _granted(subjects: Iterable[tuple[int, str]], roles: Iterable[Role]) -> ColumnElement[bool]:
    pairs = list(subjects)
    if not pairs:
        return false()
    perm = ResourcePermissionRow
    return exists().where(
        perm.kind == ResourceRow.kind,
        perm.name == ResourceRow.name,
        perm.role.in_([int(r) for r in roles]),
        or_(*(and_(perm.subject_type == int(t), perm.subject_id == i) for t, i in pairs)),
    )


def _shared_with_any(tenants: tuple[str, ...]) -> ColumnElement[bool]:
    if not tenants:
        return false()
    share = ResourceShareRow
    in_share = exists().where(
        share.kind == ResourceRow.kind, share.name == ResourceRow.name, share.tenant_id.in_(tenants)
    )
    return and_(ResourceRow.tenant_id.is_(None), or_(ResourceRow.share_to_all, in_share))


def _admin(reach: _Reach, kind: ResourceKind) -> ColumnElement[bool]:
    if reach.key is not None:
        return false()
    platform = ResourceRow.tenant_id.is_(None) if _PLATFORM_ROLE[kind] in reach.platform_roles else false()
    tenant_admin = ResourceRow.tenant_id.is_not(None) if reach.admin_of_every_tenant else false()
    in_tenants = ResourceRow.tenant_id.in_(reach.tenants)
    return or_(
        platform,
        tenant_admin,
        ResourceRow.tenant_id.in_(reach.admin_tenants),
        and_(in_tenants, ResourceRow.created_by == (reach.user_id or "")),
        and_(in_tenants, _granted(reach.subjects, [Role.ADMIN])),
    )


def _user_visible(reach: _Reach, kind: ResourceKind) -> ColumnElement[bool]:
    in_tenants = ResourceRow.tenant_id.in_(reach.tenants)
    platform = ResourceRow.tenant_id.is_(None) if _PLATFORM_ROLE[kind] in reach.platform_roles else false()
    tenant_admin = ResourceRow.tenant_id.is_not(None) if reach.admin_of_every_tenant else false()
    return or_(
        platform,
        tenant_admin,
        _shared_with_any(reach.tenants),
        ResourceRow.tenant_id.in_(reach.admin_tenants),
        and_(in_tenants, or_(ResourceRow.share_to_all, ResourceRow.created_by == (reach.user_id or ""))),
        and_(or_(ResourceRow.tenant_id.is_(None), in_tenants), _granted(reach.subjects, list(Role))),
    )


def _visible(reach: _Reach, kind: ResourceKind) -> ColumnElement[bool]:
    if reach.key is None:
        return _user_visible(reach, kind)
    _, key_type = reach.key
    if key_type == ApiKeyType.PERSONAL_ALL_RESOURCES:
        return _user_visible(reach, kind)
    key_id = reach.key[0]
    direct = exists().where(
        ApiKeyGrantRow.api_key_id == key_id,
        ApiKeyGrantRow.resource_kind == ResourceRow.kind,
        ApiKeyGrantRow.resource_name == ResourceRow.name,
    )
    granted = or_(direct, _granted(reach.key_subjects, list(Role)))
    if key_type == ApiKeyType.PERSONAL:
        return and_(granted, _user_visible(reach, kind))
    # A service-account key acts for its tenant and no person: its grants reach what the tenant may use. Platform
    # resources shared with the tenant alone left out those granted to it, which the key could be granted but not use.
    (tenant,) = reach.tenants
    return and_(granted, _usable_in(tenant))


async def _check(session: AsyncSession, ref: ResourceRef, condition: ColumnElement[bool]) -> bool:
    query = select(exists().where(ResourceRow.kind == int(ref.kind), ResourceRow.name == ref.name, condition))
    return bool(await session.scalar(query))


async def can_read(session: AsyncSession, principal: Principal, ref: ResourceRef) -> bool:
    return await _check(session, ref, _visible(await _reach(session, principal), ref.kind))


async def can_invoke(session: AsyncSession, principal: Principal, ref: ResourceRef) -> bool:
    """Using a resource (the gateway's question) is the same right as reading it."""
    return await can_read(session, principal, ref)


async def can_fill(session: AsyncSession, principal: Principal, ref: ResourceRef, owner: str | None) -> bool:
    """Writing a resource's content (a RAG's files) for a caller who may use it (`can_invoke`). A tenant's resource:
    keys never administer, so a key that may use it may also fill it. A platform resource is shared read-only with
    tenants (spec Auth 9): only a key the platform named in a permission on it (given from platform scope) writes."""
    if owner is not None:
        return True
    key = principal.api_key
    if key is None:
        return False
    named = select(ResourcePermissionRow.role).where(
        ResourcePermissionRow.kind == int(ref.kind),
        ResourcePermissionRow.name == ref.name,
        ResourcePermissionRow.subject_type == int(SubjectType.API_KEY),
        ResourcePermissionRow.subject_id == key.key_id,
    )
    return await session.scalar(select(exists(named))) is True


def _usable_in(owner: str | None) -> ColumnElement[bool]:
    """What a resource owned by `owner` (a tenant; None: the platform) may use on its own authority, whoever saved it,
    and what the tenant's service-account keys may reach of what they are granted (they act for the tenant alone):
    for the platform, platform resources; for a tenant, its own, and the platform resources it is offered — shared
    with it (with every tenant, or by name) or granted to it, to one of its groups or to one of its members, which is
    how a platform resource reaches anyone acting in the tenant (`_user_visible`)."""
    if owner is None:
        return ResourceRow.tenant_id.is_(None)
    perm = ResourcePermissionRow
    members = select(TenantMemberRow.user_id).where(TenantMemberRow.tenant_id == owner)
    groups = select(GroupRow.id).where(GroupRow.tenant_id == owner)
    granted = exists().where(
        perm.kind == ResourceRow.kind,
        perm.name == ResourceRow.name,
        or_(
            and_(perm.subject_type == int(SubjectType.TENANT), perm.subject_id == owner),
            and_(perm.subject_type == int(SubjectType.USER), perm.subject_id.in_(members)),
            and_(perm.subject_type == int(SubjectType.GROUP), perm.subject_id.in_(groups)),
        ),
    )
    return or_(
        ResourceRow.tenant_id == owner,
        _shared_with_any((owner,)),
        and_(ResourceRow.tenant_id.is_(None), granted),
    )


async def can_reference(session: AsyncSession, principal: Principal, ref: ResourceRef, *, owner: str | None) -> bool:
    """Whether a resource owned by `owner` (a tenant; None: the platform) may be saved naming `ref` as something it
    uses on its own authority for every caller it has (a preset agent's base model, guardrails, MCP servers and RAGs;
    a RAG's models). The saver must be able to use `ref` acting in that tenant alone: a session reaching further (a
    user of two tenants, unscoped) would otherwise hand another tenant's resource, and the credentials behind it, to
    every caller of this one, which no sharing can do. A platform resource may name platform resources only. The
    part of the rule that does not depend on the saver (`_usable_in`) is asked again each time the resource is used
    (`withdrawn`)."""
    if owner is not None and principal.api_key is None and principal.scoped_tenant_id != owner:
        principal = replace(principal, scoped_tenant_id=owner)
    condition = and_(_usable_in(owner), _visible(await _reach(session, principal), ref.kind))
    return await _check(session, ref, condition)


async def withdrawn(session: AsyncSession, refs: Iterable[ResourceRef], *, owner: str | None) -> list[ResourceRef]:
    """Those of `refs` that exist but that a resource owned by `owner` may no longer use (`can_reference`'s rule,
    without the saver): a preset agent asks each time it is resolved, so that a platform model the platform stopped
    sharing with the agent's tenant since the agent was saved is not still reached through it. One query for all;
    what no longer exists is the caller's to report."""
    wanted = list(dict.fromkeys(refs))
    if not wanted:
        return []
    # One IN of pairs, not an OR per resource: a listing asks for every agent it offers at once, and SQLite refuses
    # an expression deeper than 1,000 terms.
    named = tuple_(ResourceRow.kind, ResourceRow.name).in_([(int(r.kind), r.name) for r in wanted])
    # Selected as a column rather than filtered by its negation: SQL's NOT of an unknown (NULL) is unknown too.
    rows = await session.execute(select(ResourceRow.kind, ResourceRow.name, _usable_in(owner)).where(named))
    gone = {(kind, name) for kind, name, usable in rows if not usable}
    return [r for r in wanted if (int(r.kind), r.name) in gone]


async def can_admin(session: AsyncSession, principal: Principal, ref: ResourceRef) -> bool:
    return await _check(session, ref, _admin(await _reach(session, principal), ref.kind))


async def readable_names(session: AsyncSession, principal: Principal, kind: ResourceKind) -> set[str]:
    reach = await _reach(session, principal)
    query = select(ResourceRow.name).where(ResourceRow.kind == int(kind), _visible(reach, kind))
    return set(await session.scalars(query))


async def ownership(session: AsyncSession, ref: ResourceRef, viewer: Principal | None) -> Ownership:
    """Who owns the resource and whom it is shared with, as `viewer` may see it (`_seen_by`; None: code acting for
    the platform itself, which sees all)."""
    found = await ownerships(session, ref.kind, [ref.name], viewer)
    if ref.name not in found:
        raise NotFound(f"{_label(ref)} {ref.name!r} not found", field="name")
    return found[ref.name]


async def ownerships(
    session: AsyncSession, kind: ResourceKind, names: Iterable[str], viewer: Principal | None
) -> dict[str, Ownership]:
    """`ownership` of many resources of one kind in two queries (for list responses); a name that does not exist is
    left out."""
    wanted = list(names)
    if not wanted:
        return {}
    rows = await session.scalars(select(ResourceRow).where(ResourceRow.kind == int(kind), ResourceRow.name.in_(wanted)))
    found = {r.name: r for r in rows}
    shares: dict[str, list[str]] = {}
    shared = await session.execute(
        select(ResourceShareRow.name, ResourceShareRow.tenant_id)
        .where(ResourceShareRow.kind == int(kind), ResourceShareRow.name.in_(wanted))
        .order_by(ResourceShareRow.tenant_id)
    )
    for name, tenant in shared:
        shares.setdefault(name, []).append(tenant)
    seen = await _seen_by(session, viewer, kind)
    return {
        name: Ownership(r.tenant_id, r.created_by, Sharing(r.share_to_all, seen(tuple(shares.get(name, ())))))
        for name, r in found.items()
    }


async def _seen_by(
    session: AsyncSession, viewer: Principal | None, kind: ResourceKind
) -> Callable[[tuple[str, ...]], tuple[str, ...]]:
    """What of a platform resource's shared-with list `viewer` may see. The list names the platform's other
    customers: those who administer the kind's platform resources, or every tenant, see it all; anyone else reading
    it (a tenant's member, admin or key it is shared with) sees only the tenants it reads in. Tenant resources have
    no such list (`_validate_sharing`)."""
    if viewer is None:
        return lambda tenants: tenants
    reach = await _reach(session, viewer)
    if _PLATFORM_ROLE[kind] in reach.platform_roles or reach.admin_of_every_tenant:
        return lambda tenants: tenants
    own = set(reach.tenants)
    return lambda tenants: tuple(t for t in tenants if t in own)


def _label(ref: ResourceRef) -> str:
    return ref.kind.name.lower().replace("_", " ")


async def require_read(session: AsyncSession, principal: Principal, ref: ResourceRef) -> Ownership:
    """The resource, if the caller may read it; otherwise not_found, so names cannot be probed."""
    if not await can_read(session, principal, ref):
        raise NotFound(f"{_label(ref)} {ref.name!r} not found", field="name")
    return await _acted_on(session, principal, ref)


async def require_admin(session: AsyncSession, principal: Principal, ref: ResourceRef) -> Ownership:
    if await can_admin(session, principal, ref):
        return await _acted_on(session, principal, ref)
    await require_read(session, principal, ref)
    raise PermissionDenied(f"the caller may not administer {_label(ref)} {ref.name!r}")


async def _acted_on(session: AsyncSession, principal: Principal, ref: ResourceRef) -> Ownership:
    """The ownership of a resource the caller is let at (as the caller may see it), which the audit trail files the
    call under."""
    owner = await ownership(session, ref, principal)
    CallRecorder.acted_on(owner.tenant_id)
    return owner


MAX_SHARED_WITH = 10_000


async def _validate_sharing(session: AsyncSession, tenant_id: str | None, sharing: Sharing) -> tuple[str, ...]:
    shared_with = tuple(sorted(set(sharing.shared_with)))
    if len(shared_with) > MAX_SHARED_WITH:  # bound before the database: one bind parameter each
        raise InvalidArgument(
            f"sharing.shared_with names at most {MAX_SHARED_WITH} tenants (share_to_all shares with every tenant)",
            field="sharing.shared_with",
        )
    if tenant_id is not None:
        if shared_with:
            raise InvalidArgument(
                "sharing.shared_with applies to platform-owned resources; grant users or groups through permissions",
                field="sharing.shared_with",
            )
        return ()
    if shared_with:
        known = set(await session.scalars(select(TenantRow.id).where(TenantRow.id.in_(shared_with))))
        missing = [t for t in shared_with if t not in known]
        if missing:
            raise InvalidArgument(
                f"sharing.shared_with names {len(missing)} unknown tenants: {missing[:10]}", field="sharing.shared_with"
            )
    return shared_with


async def _replace_shares(session: AsyncSession, ref: ResourceRef, tenants: tuple[str, ...]) -> None:
    await session.execute(
        delete(ResourceShareRow).where(ResourceShareRow.kind == int(ref.kind), ResourceShareRow.name == ref.name)
    )
    session.add_all(ResourceShareRow(kind=int(ref.kind), name=ref.name, tenant_id=t) for t in tenants)


async def create_resource(
    session: AsyncSession,
    principal: Principal,
    ref: ResourceRef,
    *,
    tenant_id: str | None,
    sharing: Sharing = Sharing(),
) -> None:
    """Record ownership of a new resource. The caller has already applied the create gate."""
    if await session.get(ResourceRow, (int(ref.kind), ref.name)) is not None:
        raise AlreadyExists(f"a {_label(ref)} named {ref.name!r} already exists", field="name")
    shared_with = await _validate_sharing(session, tenant_id, sharing)
    session.add(
        ResourceRow(
            kind=int(ref.kind),
            name=ref.name,
            tenant_id=tenant_id,
            created_by=principal.subject_id or None,
            share_to_all=sharing.share_to_all,
        )
    )
    with integrity_as(f"a {_label(ref)} named {ref.name!r} already exists", field="name"):  # a concurrent create
        await session.flush()
    await _replace_shares(session, ref, shared_with)
    await session.flush()


async def delete_resource(session: AsyncSession, ref: ResourceRef) -> None:
    kind, name = int(ref.kind), ref.name
    await session.execute(
        delete(ResourcePermissionRow).where(ResourcePermissionRow.kind == kind, ResourcePermissionRow.name == name)
    )
    await session.execute(delete(ResourceShareRow).where(ResourceShareRow.kind == kind, ResourceShareRow.name == name))
    await session.execute(
        delete(ApiKeyGrantRow).where(ApiKeyGrantRow.resource_kind == kind, ApiKeyGrantRow.resource_name == name)
    )
    await session.execute(delete(ResourceRow).where(ResourceRow.kind == kind, ResourceRow.name == name))
    await session.flush()


def owned_by(tenant_id: str) -> Select[int, str]:
    """The (kind, name) of every resource a tenant owns, as a subquery for statements that clean up after them."""
    return select(ResourceRow.kind, ResourceRow.name).where(ResourceRow.tenant_id == tenant_id)


async def delete_tenant_resources(session: AsyncSession, tenant_id: str) -> None:
    """`delete_resource` for everything a tenant owns, before the tenant goes. Grants, shares and API-key grants
    name a resource by (kind, name), not by a foreign key, and names are free again once the tenant is gone: left
    behind, a grant on a deleted tenant's resource applied to the next resource another tenant created under its
    name."""
    owned = owned_by(tenant_id)
    for table, kind, name in (
        (ResourcePermissionRow, ResourcePermissionRow.kind, ResourcePermissionRow.name),
        (ResourceShareRow, ResourceShareRow.kind, ResourceShareRow.name),
        (ApiKeyGrantRow, ApiKeyGrantRow.resource_kind, ApiKeyGrantRow.resource_name),
    ):
        await session.execute(delete(table).where(tuple_(kind, name).in_(owned)))
    await session.execute(delete(ResourceRow).where(ResourceRow.tenant_id == tenant_id))
    await session.flush()


async def forget_subject(session: AsyncSession, subject_type: SubjectType, subject_id: str) -> None:
    """Drop every grant to a subject that no longer exists (a deleted group, service account or key)."""
    await session.execute(
        delete(ResourcePermissionRow).where(
            ResourcePermissionRow.subject_type == int(subject_type), ResourcePermissionRow.subject_id == subject_id
        )
    )


async def _require_sharer(
    session: AsyncSession, principal: Principal, ref: ResourceRef, *, widens: bool | Callable[[Sharing], bool]
) -> Ownership:
    """Who may change who reaches a resource (spec Authentication 8 reconciled).

    Always: admin rights on the resource. "Any tenant member can share resources they administer with other tenant
    members": granting an individual member, and narrowing access (removing a grant, turning share-to-all off), need
    nothing more. "Sharing is a tenant capability": widening a tenant resource beyond individual members (to the
    whole tenant, a group, a service account or an API key) also needs the tenant's share capability (Editors and
    Admins). Platform resources are administered from platform scope only, where the capability does not apply.
    `widens` may be judged against the resource's current sharing, which is only known once the caller may see it.
    """
    owner = await require_admin(session, principal, ref)
    if (
        (widens(owner.sharing) if callable(widens) else widens)
        and owner.tenant_id is not None
        and not await has_capability(session, principal, owner.tenant_id, Capability.SHARE)
    ):
        raise PermissionDenied(
            "sharing with the whole tenant, a group, a service account or an API key needs the tenant capability "
            "share; administrators of a resource may share it with individual tenant members"
        )
    return owner


def _widens(current: Sharing, wanted: Sharing) -> bool:
    """Whether `wanted` lets anyone reach the resource that `current` does not. Updates echo the sharing they read
    back unchanged (every update path takes the whole resource), and saying again what is already so shares nothing."""
    return (wanted.share_to_all and not current.share_to_all) or not set(wanted.shared_with) <= set(current.shared_with)


async def set_sharing(session: AsyncSession, principal: Principal, ref: ResourceRef, sharing: Sharing) -> Sharing:
    """Replace the whole Sharing (PUT semantics): what is omitted is cleared."""
    owner = await _require_sharer(session, principal, ref, widens=lambda current: _widens(current, sharing))
    shared_with = await _validate_sharing(session, owner.tenant_id, sharing)
    row = await session.get(ResourceRow, (int(ref.kind), ref.name))
    assert row is not None
    row.share_to_all = sharing.share_to_all
    await _replace_shares(session, ref, shared_with)
    await session.flush()
    return Sharing(sharing.share_to_all, shared_with)


async def list_permissions(
    session: AsyncSession,
    principal: Principal,
    ref: ResourceRef,
    *,
    subject_type: SubjectType | None = None,
    role: Role | None = None,
) -> list[Permission]:
    await require_admin(session, principal, ref)
    perm = ResourcePermissionRow
    query = select(perm).where(perm.kind == int(ref.kind), perm.name == ref.name)
    if subject_type is not None:
        query = query.where(perm.subject_type == int(subject_type))
    if role is not None:
        query = query.where(perm.role == int(role))
    rows = await session.scalars(query.order_by(perm.subject_type, perm.subject_id, perm.role))
    return [Permission(SubjectType(r.subject_type), r.subject_id, Role(r.role)) for r in rows]


def permission_of(subject_type: int, subject_id: str, role: int) -> Permission:
    """A permission from wire numbers, refusing unset or unknown values by field."""
    try:
        kind = SubjectType(subject_type)
    except ValueError:
        raise InvalidArgument("subject.type must be set", field="subject.type") from None
    try:
        granted = Role(role)
    except ValueError:
        raise InvalidArgument("role must be DEPLOYMENT_ROLE_READER or DEPLOYMENT_ROLE_ADMIN", field="role") from None
    if not subject_id.strip():
        raise InvalidArgument("subject.id is required", field="subject.id")
    return Permission(kind, subject_id, granted)


def _validated(permission: Permission) -> Permission:
    return permission_of(int(permission.subject_type), permission.subject_id, int(permission.role))


async def _subject_tenant(session: AsyncSession, permission: Permission) -> str | None:
    """The tenant a subject belongs to (None for users, who may belong to several); NotFound if unknown."""
    sid = permission.subject_id
    match permission.subject_type:
        case SubjectType.TENANT:
            found = await session.get(TenantRow, sid)
            tenant = found.id if found else None
        case SubjectType.GROUP:
            group = await session.get(GroupRow, sid)
            tenant = group.tenant_id if group else None
        case SubjectType.SERVICE_ACCOUNT:
            account = await session.get(ServiceAccountRow, sid)
            tenant = account.tenant_id if account else None
        case SubjectType.API_KEY:
            key = await session.get(ApiKeyRow, sid)
            tenant = key.tenant_id if key else None
        case SubjectType.USER:
            return None
    if tenant is None:
        raise _unknown_subject(sid)
    return tenant


def _unknown_subject(subject_id: str) -> NotFound:
    return NotFound(f"subject {subject_id!r} not found", field="subject.id")


async def _check_subject(session: AsyncSession, owner: Ownership, permission: Permission) -> None:
    tenant = await _subject_tenant(session, permission)
    if owner.tenant_id is None:
        return
    if permission.subject_type == SubjectType.USER:
        if await session.get(TenantMemberRow, (owner.tenant_id, permission.subject_id)) is None:
            raise InvalidArgument("subject is not a member of the owning tenant", field="subject.id")
    elif tenant != owner.tenant_id:
        # Answered as an unknown id is: a distinct answer told a tenant's admin which of another tenant's group,
        # service account, key and tenant ids exist.
        raise _unknown_subject(permission.subject_id)


async def add_permission(session: AsyncSession, principal: Principal, ref: ResourceRef, permission: Permission) -> None:
    permission = _validated(permission)
    owner = await _require_sharer(session, principal, ref, widens=permission.subject_type != SubjectType.USER)
    await _check_subject(session, owner, permission)
    key = (int(ref.kind), ref.name, int(permission.subject_type), permission.subject_id, int(permission.role))
    if await session.get(ResourcePermissionRow, key) is not None:
        raise AlreadyExists("this permission is already granted", field="subject")
    session.add(ResourcePermissionRow(kind=key[0], name=key[1], subject_type=key[2], subject_id=key[3], role=key[4]))
    await session.flush()


async def remove_permission(
    session: AsyncSession, principal: Principal, ref: ResourceRef, permission: Permission
) -> None:
    permission = _validated(permission)
    await _require_sharer(session, principal, ref, widens=False)
    key = (int(ref.kind), ref.name, int(permission.subject_type), permission.subject_id, int(permission.role))
    row = await session.get(ResourcePermissionRow, key)
    if row is None:
        raise NotFound("no such permission on this resource", field="subject")
    await session.delete(row)
    await session.flush()
