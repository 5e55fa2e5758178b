"""The resource permission model, rule by rule, against real SQLite and PostgreSQL databases."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
import pytest_asyncio
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions as p
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.errors import InvalidArgument, NotFound, PermissionDenied
from server.store.db import Database
from server.store.models import (
    ApiKeyGrantRow,
    ApiKeyGroupRow,
    ApiKeyRow,
    GroupMemberRow,
    GroupRow,
    ServiceAccountRow,
    TenantMemberRow,
    TenantRow,
)
from tests.conftest import Database as TestDatabase

KIND = p.ResourceKind.EXTERNAL_MODEL


@dataclass
class Scene:
    t1: str
    t2: str
    tag: str
    people: dict[str, Principal] = field(default_factory=dict)

    def user(self, name: str) -> Principal:
        return self.people[name]


@pytest_asyncio.fixture(scope="module")
async def db(database: TestDatabase) -> AsyncIterator[Database]:
    handle = Database(database.url)
    yield handle
    await handle.close()


def _key(scene: Scene, key_id: str, key_type: ApiKeyType, owner: str | None, sa: str | None = None) -> Principal:
    identity = ApiKeyIdentity(key_id, scene.t1, key_type, owner, sa)
    return Principal(user_id=owner, scoped_tenant_id=scene.t1, api_key=identity)


async def _seed(session: AsyncSession) -> Scene:
    tag = secrets.token_hex(4)
    scene = Scene(t1=f"t1-{tag}", t2=f"t2-{tag}", tag=tag)
    session.add_all([TenantRow(id=scene.t1, name=scene.t1), TenantRow(id=scene.t2, name=scene.t2)])
    await session.flush()
    roles = {"admin": 3, "editor": 2, "member": 1, "creator": 2, "grouped": 1}
    for name, role in roles.items():
        uid = f"{name}-{tag}"
        session.add(TenantMemberRow(tenant_id=scene.t1, user_id=uid, role=role))
        scene.people[name] = Principal(user_id=uid)
    session.add(TenantMemberRow(tenant_id=scene.t2, user_id=f"outsider-{tag}", role=3))
    scene.people["outsider"] = Principal(user_id=f"outsider-{tag}")
    scene.people["lonely"] = Principal(user_id=f"lonely-{tag}")
    scene.people["models"] = Principal(user_id=f"ops-{tag}", can_manage_models=True)
    scene.people["models-scoped"] = Principal(user_id=f"ops-{tag}", can_manage_models=True, scoped_tenant_id=scene.t1)
    scene.people["tenants-op"] = Principal(user_id=f"tops-{tag}", can_manage_tenants=True)
    session.add(GroupRow(id=f"g-{tag}", tenant_id=scene.t1, name="g"))
    session.add(GroupRow(id=f"g2-{tag}", tenant_id=scene.t2, name="g2"))
    await session.flush()
    session.add(GroupMemberRow(group_id=f"g-{tag}", user_id=f"grouped-{tag}"))
    session.add(ServiceAccountRow(id=f"sa-{tag}", tenant_id=scene.t1, name="bot"))
    await session.flush()
    for key_id, key_type, owner, sa in [
        (f"kp-{tag}", ApiKeyType.PERSONAL, f"editor-{tag}", None),
        (f"ka-{tag}", ApiKeyType.PERSONAL_ALL_RESOURCES, f"admin-{tag}", None),
        (f"ks-{tag}", ApiKeyType.SERVICE_ACCOUNT, None, f"sa-{tag}"),
    ]:
        session.add(
            ApiKeyRow(
                id=key_id,
                tenant_id=scene.t1,
                type=int(key_type),
                state=1,
                owner_user_id=owner,
                service_account_id=sa,
                prefix="sb_x",
                secret_hash=secrets.token_bytes(32),
            )
        )
        scene.people[key_id.split("-")[0]] = _key(scene, key_id, key_type, owner, sa)
    await session.flush()
    return scene


def ref(name: str, kind: p.ResourceKind = KIND) -> p.ResourceRef:
    return p.ResourceRef(kind, name)


async def _create(
    session: AsyncSession,
    scene: Scene,
    name: str,
    *,
    tenant: str | None,
    creator: str = "creator",
    sharing: p.Sharing = p.Sharing(),
) -> p.ResourceRef:
    r = ref(f"{name}-{scene.tag}")
    await p.create_resource(session, scene.user(creator), r, tenant_id=tenant, sharing=sharing)
    return r


async def test_platform_resources_are_administered_only_from_platform_scope(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "plat", tenant=None, creator="models")
        assert await p.can_admin(s, scene.user("models"), r)
        assert not await p.can_admin(s, scene.user("models-scoped"), r)  # tenant-scoped session: not platform scope
        assert not await p.can_admin(s, scene.user("tenants-op"), r)  # wrong platform role for this kind
        assert not await p.can_admin(s, scene.user("admin"), r)  # tenant admins never manage platform resources
        assert not await p.can_admin(s, scene.user("ka"), r)
        await s.rollback()


async def test_platform_sharing_to_all_or_chosen_tenants(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        private = await _create(s, scene, "private", tenant=None, creator="models")
        everyone = await _create(s, scene, "all", tenant=None, creator="models", sharing=p.Sharing(True))
        chosen = await _create(s, scene, "chosen", tenant=None, creator="models", sharing=p.Sharing(False, (scene.t1,)))
        member, outsider, lonely = scene.user("member"), scene.user("outsider"), scene.user("lonely")
        assert not await p.can_read(s, member, private)
        assert await p.can_read(s, member, everyone) and await p.can_read(s, outsider, everyone)
        assert not await p.can_read(s, lonely, everyone)  # belongs to no tenant
        assert await p.can_read(s, member, chosen) and not await p.can_read(s, outsider, chosen)
        assert await p.readable_names(s, outsider, KIND) >= {everyone.name}
        assert chosen.name not in await p.readable_names(s, outsider, KIND)
        await s.rollback()


async def test_tenant_resources_creator_admins_and_share_to_all(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "tres", tenant=scene.t1)
        assert await p.can_admin(s, scene.user("creator"), r)
        assert await p.can_admin(s, scene.user("admin"), r)
        assert await p.can_admin(s, scene.user("tenants-op"), r)
        for name in ("editor", "member", "outsider"):
            assert not await p.can_read(s, scene.user(name), r), name
        await p.set_sharing(s, scene.user("creator"), r, p.Sharing(share_to_all=True))
        assert await p.can_read(s, scene.user("member"), r)
        assert not await p.can_admin(s, scene.user("member"), r)
        assert not await p.can_read(s, scene.user("outsider"), r)
        await s.rollback()


async def test_grants_to_users_groups_and_tenants(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "granted", tenant=scene.t1)
        creator = scene.user("creator")
        await p.add_permission(s, creator, r, p.Permission(p.SubjectType.GROUP, f"g-{scene.tag}", p.Role.READER))
        assert await p.can_read(s, scene.user("grouped"), r)
        assert not await p.can_read(s, scene.user("member"), r)
        await p.add_permission(s, creator, r, p.Permission(p.SubjectType.USER, f"member-{scene.tag}", p.Role.ADMIN))
        assert await p.can_admin(s, scene.user("member"), r)
        await p.add_permission(s, creator, r, p.Permission(p.SubjectType.TENANT, scene.t1, p.Role.READER))
        assert await p.can_read(s, scene.user("editor"), r)
        listed = await p.list_permissions(s, creator, r, subject_type=p.SubjectType.USER)
        assert listed == [p.Permission(p.SubjectType.USER, f"member-{scene.tag}", p.Role.ADMIN)]
        await p.remove_permission(s, creator, r, p.Permission(p.SubjectType.TENANT, scene.t1, p.Role.READER))
        assert not await p.can_read(s, scene.user("editor"), r)
        with pytest.raises(NotFound):
            await p.remove_permission(s, creator, r, p.Permission(p.SubjectType.TENANT, scene.t1, p.Role.READER))
        await s.rollback()


async def test_grant_subjects_must_belong_to_the_owning_tenant(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "subj", tenant=scene.t1)
        creator = scene.user("creator")
        with pytest.raises(NotFound):  # another tenant's group is answered as an unknown one: ids cannot be probed
            await p.add_permission(s, creator, r, p.Permission(p.SubjectType.GROUP, f"g2-{scene.tag}", p.Role.READER))
        with pytest.raises(InvalidArgument):
            await p.add_permission(
                s, creator, r, p.Permission(p.SubjectType.USER, f"outsider-{scene.tag}", p.Role.READER)
            )
        with pytest.raises(NotFound):
            await p.add_permission(s, creator, r, p.Permission(p.SubjectType.GROUP, "nope", p.Role.READER))
        with pytest.raises(InvalidArgument):
            unset_role = p.Permission(p.SubjectType.USER, f"member-{scene.tag}", 0)  # type: ignore[arg-type]
            await p.add_permission(s, creator, r, unset_role)
        await s.rollback()


async def test_sharing_needs_admin_and_the_share_capability(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "share", tenant=scene.t1)
        await p.add_permission(
            s, scene.user("creator"), r, p.Permission(p.SubjectType.USER, f"member-{scene.tag}", p.Role.ADMIN)
        )
        with pytest.raises(PermissionDenied):  # administers it, but Members hold no share capability
            await p.set_sharing(s, scene.user("member"), r, p.Sharing(True))
        with pytest.raises(NotFound):  # cannot even see it
            await p.set_sharing(s, scene.user("editor"), r, p.Sharing(True))
        with pytest.raises(InvalidArgument):
            await p.set_sharing(s, scene.user("creator"), r, p.Sharing(False, (scene.t2,)))
        await s.rollback()


async def test_administrators_share_with_individual_members_the_capability_governs_the_rest(db: Database) -> None:
    """Spec Authentication 8, both sentences: "any tenant member can share resources they administer with other
    tenant members", and sharing (with the whole tenant, a group, a service account or a key) is a capability."""
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "recon", tenant=scene.t1)
        group, grouped = f"g-{scene.tag}", scene.user("grouped")  # a Member, ADMIN on r through the group
        await p.add_permission(s, scene.user("creator"), r, p.Permission(p.SubjectType.GROUP, group, p.Role.ADMIN))
        s.info.pop("switchboard_reach", None)
        assert await p.can_admin(s, grouped, r)
        member = p.Permission(p.SubjectType.USER, f"member-{scene.tag}", p.Role.READER)
        await p.add_permission(s, grouped, r, member)  # an individual member: admin rights are enough
        assert await p.can_read(s, scene.user("member"), r)
        for wider in (
            p.Permission(p.SubjectType.GROUP, group, p.Role.READER),
            p.Permission(p.SubjectType.TENANT, scene.t1, p.Role.READER),
            p.Permission(p.SubjectType.SERVICE_ACCOUNT, f"sa-{scene.tag}", p.Role.READER),
        ):
            with pytest.raises(PermissionDenied, match="capability share"):
                await p.add_permission(s, grouped, r, wider)
        with pytest.raises(PermissionDenied, match="capability share"):
            await p.set_sharing(s, grouped, r, p.Sharing(True))
        assert await p.set_sharing(s, grouped, r, p.Sharing()) == p.Sharing()  # narrowing needs no capability
        await p.remove_permission(s, grouped, r, member)
        with pytest.raises(NotFound):  # a member who administers nothing still cannot touch it
            await p.add_permission(s, scene.user("member"), r, member)
        # Keys never share, not even a tenant admin's Personal (all resources) key, which reads r.
        with pytest.raises(PermissionDenied):
            await p.add_permission(s, scene.user("ka"), r, member)
        await s.rollback()


async def test_no_key_is_a_tenant_admin_or_holds_any_capability(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        admins_key = _key(scene, f"kadm-{scene.tag}", ApiKeyType.PERSONAL, f"admin-{scene.tag}")
        for key in (admins_key, scene.user("kp"), scene.user("ka"), scene.user("ks")):
            assert not await p.can_admin_tenant(s, key, scene.t1)
            for capability in p.Capability:  # listing members included: a key is never granted people
                assert not await p.has_capability(s, key, scene.t1, capability), capability
            with pytest.raises(PermissionDenied):
                await p.require_tenant_admin(s, key, scene.t1)
        assert await p.can_admin_tenant(s, scene.user("admin"), scene.t1)
        await s.rollback()


async def test_sharing_is_replaced_whole(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        models = scene.user("models")
        r = await _create(s, scene, "put", tenant=None, creator="models", sharing=p.Sharing(True, (scene.t1,)))
        assert (await p.ownership(s, r, None)).sharing == p.Sharing(True, (scene.t1,))
        assert await p.set_sharing(s, models, r, p.Sharing()) == p.Sharing()
        assert (await p.ownership(s, r, None)).sharing == p.Sharing()
        assert not await p.can_read(s, scene.user("member"), r)
        with pytest.raises(InvalidArgument):
            await p.set_sharing(s, models, r, p.Sharing(False, ("no-such-tenant",)))
        await s.rollback()


async def test_api_keys(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        shared = await _create(s, scene, "shared", tenant=scene.t1, sharing=p.Sharing(True))
        hidden = await _create(s, scene, "hidden", tenant=scene.t1)
        personal, all_res, sa_key = scene.user("kp"), scene.user("ka"), scene.user("ks")
        # Personal keys reach only what they are granted...
        assert not await p.can_invoke(s, personal, shared)
        s.add(ApiKeyGrantRow(api_key_id=f"kp-{scene.tag}", resource_kind=int(KIND), resource_name=shared.name))
        s.add(ApiKeyGrantRow(api_key_id=f"kp-{scene.tag}", resource_kind=int(KIND), resource_name=hidden.name))
        await s.flush()
        assert await p.can_invoke(s, personal, shared)
        # ... and never beyond their owner's read access (the editor cannot read `hidden`).
        assert not await p.can_invoke(s, personal, hidden)
        # Personal (all resources) keys follow the owner (a tenant admin) but never administer.
        assert await p.can_read(s, all_res, hidden) and not await p.can_admin(s, all_res, hidden)
        # Service-account keys: grants to the key's groups or its service account count.
        assert not await p.can_invoke(s, sa_key, shared)
        s.add(ApiKeyGroupRow(api_key_id=f"ks-{scene.tag}", group_id=f"g-{scene.tag}"))
        await p.add_permission(
            s, scene.user("creator"), hidden, p.Permission(p.SubjectType.GROUP, f"g-{scene.tag}", p.Role.READER)
        )
        s.info.pop("switchboard_reach", None)
        assert await p.can_invoke(s, sa_key, hidden)
        assert not await p.can_admin(s, sa_key, hidden)
        assert await p.readable_names(s, sa_key, KIND) == {hidden.name}
        await s.rollback()


async def test_readable_names_agrees_with_can_read(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        refs = []
        for i in range(12):
            tenant = None if i % 3 == 0 else (scene.t1 if i % 3 == 1 else scene.t2)
            creator = "models" if tenant is None else ("creator" if tenant == scene.t1 else "outsider")
            sharing = p.Sharing(share_to_all=i % 2 == 0, shared_with=(scene.t1,) if tenant is None and i % 4 else ())
            refs.append(await _create(s, scene, f"r{i}", tenant=tenant, creator=creator, sharing=sharing))
        for who in scene.people.values():
            names = await p.readable_names(s, who, KIND)
            expected = {r.name for r in refs if await p.can_read(s, who, r)}
            assert names & {r.name for r in refs} == expected
        await s.rollback()


async def test_delete_resource_forgets_its_grants(db: Database) -> None:
    async with db.transaction() as s:
        scene = await _seed(s)
        r = await _create(s, scene, "gone", tenant=scene.t1)
        await p.add_permission(
            s, scene.user("creator"), r, p.Permission(p.SubjectType.USER, f"member-{scene.tag}", p.Role.READER)
        )
        await p.delete_resource(s, r)
        with pytest.raises(NotFound):
            await p.ownership(s, r, None)
        await p.create_resource(s, scene.user("creator"), r, tenant_id=scene.t1)
        assert not await p.can_read(s, scene.user("member"), r)  # the old grant did not survive
        await s.rollback()


async def test_withdrawn_names_what_a_resource_s_owner_may_no_longer_use(db: Database) -> None:
    """A preset agent asks on every resolution (`withdrawn`): an agent once kept calling a platform model the platform
    had stopped sharing with its tenant. What a tenant may use is its own resources and the platform's it is offered
    (shared with it, or granted to it, its groups or its members); the platform, its own resources only. On both
    engines: the rule is one SQL condition, and SQL's NULLs must not make a withdrawn resource pass."""
    async with db.transaction() as s:
        scene = await _seed(s)
        ops = scene.user("models")

        async def granted(name: str, subject: p.SubjectType, subject_id: str) -> p.ResourceRef:
            r = await _create(s, scene, name, tenant=None, creator="models")
            await p.add_permission(s, ops, r, p.Permission(subject, subject_id, p.Role.READER))
            return r

        private = await _create(s, scene, "w-private", tenant=None, creator="models")
        everyone = await _create(s, scene, "w-all", tenant=None, creator="models", sharing=p.Sharing(True))
        chosen = await _create(s, scene, "w-t1", tenant=None, creator="models", sharing=p.Sharing(False, (scene.t1,)))
        to_tenant = await granted("w-tenant", p.SubjectType.TENANT, scene.t1)
        to_group = await granted("w-group", p.SubjectType.GROUP, f"g-{scene.tag}")
        to_member = await granted("w-member", p.SubjectType.USER, f"member-{scene.tag}")
        to_nobody_there = await granted("w-lonely", p.SubjectType.USER, f"lonely-{scene.tag}")
        own = await _create(s, scene, "w-own", tenant=scene.t1)
        others = await _create(s, scene, "w-other", tenant=scene.t2, creator="outsider")
        absent = ref(f"w-absent-{scene.tag}")
        everything = [private, everyone, chosen, to_tenant, to_group, to_member, to_nobody_there, own, others, absent]
        assert await p.withdrawn(s, everything, owner=scene.t1) == [private, to_nobody_there, others]
        t2_may_not = [private, chosen, to_tenant, to_group, to_member, to_nobody_there, own]
        assert await p.withdrawn(s, everything, owner=scene.t2) == t2_may_not
        assert await p.withdrawn(s, everything, owner=None) == [own, others]
        assert await p.withdrawn(s, [], owner=scene.t1) == []
        # Saving checks the same rule and the saver's own reach: what the saver may name is never withdrawn.
        for who, owner in (("editor", scene.t1), ("grouped", scene.t1), ("member", scene.t1), ("outsider", scene.t2)):
            gone = await p.withdrawn(s, everything, owner=owner)
            for r in everything:
                if await p.can_reference(s, scene.user(who), r, owner=owner):
                    assert r not in gone, (who, r)
        await p.set_sharing(s, ops, chosen, p.Sharing())  # the platform withdraws it from t1
        assert chosen in await p.withdrawn(s, [chosen], owner=scene.t1)
        assert not await p.can_reference(s, scene.user("editor"), chosen, owner=scene.t1)
        await s.rollback()
