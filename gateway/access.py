"""Who is calling and what they may use, answered from short-lived per-process caches.

The hot path must not touch the database on every request. Keys: the shared verifier (`server.keyauth`) caches each
lookup for at most `settings.api_key_cache_seconds`; the gateway adds no cache of its own on top, so that stays the
bound on how long a disabled or revoked key works here. Models and RAGs: a (principal, model) decision, a (principal,
RAG) decision with the RAG's settings, a RAG's model route (with whether its owner may still use the model), a
principal's model list and its readable RAGs are trusted for the same bound, so a withdrawn grant or a repointed
alias takes effect within it. Any change to grants, sharing, groups, memberships, the model registry or RAGs drops
them all at once in every process (`server.invalidation`); the bound is the fallback while this process's listener
is down.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from gateway import registry
from gateway.agents import AgentRoute
from gateway.catalog import ModelInfo, Route
from server.auth import KeyVerifier
from server.crypto import SecretBox
from server.domain import preset_agents, rags, resource_pins
from server.domain.principal import Principal
from server.errors import FailedPrecondition, InvalidArgument, NotFound, PermissionDenied, Unauthenticated
from server.invalidation import Topic
from server.permissions import ResourceKind, ResourceRef, can_fill, can_invoke, readable_names, withdrawn
from server.store.db import Database
from server.ttlcache import TtlCache

__all__ = ["Access"]


def model_not_found(model: str) -> NotFound:
    # The same answer whether the model does not exist or the key may not use it: no existence leak.
    return NotFound(f"The model '{model}' does not exist or you do not have access to it.", field="model")


class Access:
    def __init__(self, db: Database, verifier: KeyVerifier, box: SecretBox, ttl: float) -> None:
        self._db = db
        self._box = box
        self._verifier = verifier
        self._routes: TtlCache[Route | AgentRoute] = TtlCache(ttl, name="model_routes")
        self._listings: TtlCache[list[ModelInfo]] = TtlCache(ttl, name="model_listings")
        self._rags: TtlCache[list[rags.Rag]] = TtlCache(ttl, name="rag_listings")
        self._rag_uses: TtlCache[rags.Rag] = TtlCache(ttl, name="rag_uses")
        db.invalidations.on(Topic.ACCESS, self._forget)

    def _forget(self, _: tuple[str, ...]) -> None:
        # Which decisions a grant or registry change touches is the permission model's business: drop them all
        # (changes are rare; each cached decision costs one reload).
        self._routes.forget()
        self._listings.forget()
        self._rags.forget()
        self._rag_uses.forget()

    async def principal(self, secret: str) -> Principal:
        try:
            return await self._verifier(secret)
        except Unauthenticated:
            raise Unauthenticated("Incorrect API key provided.") from None

    async def target(self, principal: Principal, model: str) -> Route | AgentRoute:
        """A model's route, or a preset agent's (its base model and guardrails routed on the agent's authority)."""
        return await self._routes.get((principal, model), lambda: self._load_route(principal, model))

    async def route(self, principal: Principal, model: str) -> Route:
        """A model's route, for surfaces that do not serve preset agents."""
        found = await self.target(principal, model)
        if isinstance(found, AgentRoute):
            raise InvalidArgument(
                f"The model '{model}' is a preset agent; this endpoint does not serve preset agents.", field="model"
            )
        return found

    async def _load_route(self, principal: Principal, model: str) -> Route | AgentRoute:
        async with self._db.read() as session:
            found = await registry.resolve(session, self._box, model)
            if found is None:
                raise model_not_found(model)
            if isinstance(found, registry.AgentEntry):
                if not await can_invoke(session, principal, found.ref):
                    raise model_not_found(model)
                return await self._load_agent(session, found.ref.name)
            alias_ref = found.alias_ref if isinstance(found, registry.UnresolvedAlias) else found.invoked_ref
            if not await can_invoke(session, principal, alias_ref):
                raise model_not_found(model)
        if isinstance(found, registry.UnresolvedAlias):
            raise FailedPrecondition(
                f"The model alias '{model}' is unresolved: its target no longer exists.", field="model"
            )
        return found

    async def _load_agent(self, session: AsyncSession, name: str) -> AgentRoute:
        plan = await preset_agents.invocation(session, name)

        async def delegated(public_model_id: str) -> Route:
            # Callers need only the agent's invoke right: the saver was checked when the agent was saved, and
            # `invocation` has just checked that all it names is still usable in its tenant (cached with this route).
            found = await registry.resolve(session, self._box, public_model_id)
            if not isinstance(found, Route):
                raise FailedPrecondition(
                    f"The preset agent '{plan.public_model_id}' is unresolved: the model '{public_model_id}' "
                    "it uses no longer exists.",
                    field="model",
                )
            return found

        base = await delegated(plan.base_model)
        return AgentRoute(plan, base, tuple([await delegated(g) for g in plan.output_guardrails]))

    async def system_route(
        self, model: str, *, owner: str | None, pins: resource_pins.Pins, target: ResourceRef | None = None
    ) -> Route:
        """The route of one of a RAG's models (its embedding or rerank model), for a RAG owned by `owner` (a tenant;
        None: the platform) that pinned its models as `pins`. No key's grants are consulted: the RAG's authority
        covers the model while it is the model the RAG was saved with (not one created since under its id) and one
        the RAG's owner may still use, asked on every use as for a preset agent's (the platform may have stopped
        sharing it with the tenant since). `target`: the model the calls must reach (a RAG's embedding model, pinned
        when it was created), wherever the alias `model` may point now. Cached for the same bound."""
        # "system": apart from callers' routes in the cache
        key = ("system", owner, model, frozenset(pins.items()), target)
        route = await self._routes.get(key, lambda: self._load_system_route(model, owner, pins, target))
        if not isinstance(route, Route):
            raise model_not_found(model)
        return route

    async def _load_system_route(
        self, model: str, owner: str | None, pins: resource_pins.Pins, target: ResourceRef | None
    ) -> Route:
        async with self._db.read() as session:
            # An alias repointed since names another model for clients, not for the RAG: its vectors are the pinned
            # model's, and another model's of the same size would be mixed in with them unnoticed. Where the alias
            # points now (even nowhere) does not matter to it.
            found = await registry.resolve(session, self._box, model, pinned=target)
            if found is None:
                raise model_not_found(model)
            if isinstance(found, registry.UnresolvedAlias):
                if target is not None:
                    raise _pinned_model_gone(model)
                raise FailedPrecondition(
                    f"The model alias '{model}' is unresolved: its target no longer exists.", field="model"
                )
            if isinstance(found, registry.AgentEntry):  # an agent is not a model a resource can embed or rerank with
                raise FailedPrecondition(f"'{model}' is a preset agent, not a model.", field="model")
            if not resource_pins.holds(pins, found.invoked_ref, found.uid):
                raise FailedPrecondition(
                    f"The RAG's model '{model}' no longer exists: it was deleted, and a model created since under its "
                    "id is another model.",
                    field="model",
                )
            if target is not None and not await resource_pins.still_pinned(session, target, pins):
                raise _pinned_model_gone(model)
            if await withdrawn(session, [found.invoked_ref], owner=owner):
                raise FailedPrecondition(
                    f"The RAG's model '{model}' is no longer available in its tenant.", field="model"
                )
        return found

    async def rag(self, principal: Principal | None, rag_id: str) -> rags.Rag:
        """A RAG's settings if the principal may use it, else NotFound whether or not it exists; `None` for a RAG used
        on a preset agent's authority (its caller checked that). Every upload and search asks: answered from the
        cache (a permission check and the RAG's load were 2 of an upload's ~13 ms of CPU, issue 27)."""
        return await self._rag_uses.get((principal, rag_id), lambda: self._load_rag(principal, rag_id))

    async def _load_rag(self, principal: Principal | None, rag_id: str) -> rags.Rag:
        async with self._db.read() as session:
            ref = ResourceRef(ResourceKind.RAG, rag_id)
            if principal is not None and not await can_invoke(session, principal, ref):
                raise NotFound(f"RAG {rag_id!r} does not exist or you do not have access to it", field="rag_id")
            return await rags.load(session, rag_id)

    async def require_rag_writer(self, principal: Principal, rag: rags.Rag) -> None:
        """Writing a RAG's files, for a caller who may use it (`rag`): a platform RAG asks the database (its writers
        are few and named); a tenant's answers at once."""
        if rag.tenant_id is not None:
            return
        async with self._db.read() as session:
            if not await can_fill(session, principal, ResourceRef(ResourceKind.RAG, rag.id), rag.tenant_id):
                raise PermissionDenied(
                    "a platform RAG is shared read-only: its files are written only by keys the platform names in a "
                    "permission on it (AddRagPermission with the key as subject, from platform scope)",
                    field="rag_id",
                )

    async def readable_rags(self, principal: Principal) -> list[rags.Rag]:
        """The RAGs the principal can read (by owner, then name): /v1/responses offers them as tools by default."""
        return await self._rags.get(principal, lambda: self._load_rags(principal))

    async def _load_rags(self, principal: Principal) -> list[rags.Rag]:
        async with self._db.read() as session:
            return await rags.list_readable(session, principal)

    async def models(self, principal: Principal) -> list[ModelInfo]:
        return await self._listings.get(principal, lambda: self._load_models(principal))

    async def _load_models(self, principal: Principal) -> list[ModelInfo]:
        async with self._db.read() as session:
            catalogue = await registry.list_models(session)
            allowed = {
                kind: await readable_names(session, principal, kind)
                for kind in (
                    ResourceKind.MODEL_DEPLOYMENT,
                    ResourceKind.EXTERNAL_MODEL,
                    ResourceKind.MODEL_ALIAS,
                    ResourceKind.PRESET_AGENT,
                )
            }
            # Offered only if a call to it would be answered: the invocation's own check (`_load_agent`).
            allowed[ResourceKind.PRESET_AGENT] = await preset_agents.runnable(
                session, allowed[ResourceKind.PRESET_AGENT]
            )
        return [m for m in catalogue if m.ref.name in allowed[m.kind]]


def _pinned_model_gone(model: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"The model the RAG's '{model}' named when the RAG was created no longer exists, and the RAG's content was "
        "embedded with it: create a new RAG.",
        field="model",
    )
