"""Who is calling and what they may use, answered from short-lived per-process caches.

The hot path must not touch the database on every request. Keys: the shared verifier (`server.keyauth`) caches each
lookup for at most `settings.api_key_cache_seconds`; the gateway adds no cache of its own on top, so that stays the
bound on how long a disabled or revoked key works here. Models: a (principal, model) decision and a principal's model
list are trusted for the same bound, so a withdrawn grant or a repointed alias takes effect within it.
"""

from __future__ import annotations

from gateway import registry
from gateway.catalog import ModelInfo, Route
from server.auth import KeyVerifier
from server.crypto import SecretBox
from server.domain.principal import Principal
from server.errors import FailedPrecondition, NotFound, Unauthenticated
from server.permissions import ResourceKind, can_invoke, readable_names
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
        self._routes: TtlCache[Route] = TtlCache(ttl)
        self._listings: TtlCache[list[ModelInfo]] = TtlCache(ttl)

    async def principal(self, secret: str) -> Principal:
        try:
            return await self._verifier(secret)
        except Unauthenticated:
            raise Unauthenticated("Incorrect API key provided.") from None

    async def route(self, principal: Principal, model: str) -> Route:
        return await self._routes.get((principal, model), lambda: self._load_route(principal, model))

    async def _load_route(self, principal: Principal, model: str) -> Route:
        async with self._db.read() as session:
            found = await registry.resolve(session, self._box, model)
            if found is None:
                raise model_not_found(model)
            alias_ref = found.alias_ref if isinstance(found, registry.UnresolvedAlias) else found.invoked_ref
            if not await can_invoke(session, principal, alias_ref):
                raise model_not_found(model)
        if isinstance(found, registry.UnresolvedAlias):
            raise FailedPrecondition(
                f"The model alias '{model}' is unresolved: its target no longer exists.", field="model"
            )
        return found

    async def system_route(self, model: str) -> Route:
        """The route of a model the platform calls on a resource's behalf (a RAG's pinned embedding model): the
        resource's own authorisation covers it, so no key's grants are consulted. Cached for the same bound."""
        return await self._routes.get(("system", model), lambda: self._load_system_route(model))

    async def _load_system_route(self, model: str) -> Route:
        async with self._db.read() as session:
            found = await registry.resolve(session, self._box, model)
        if found is None:
            raise model_not_found(model)
        if isinstance(found, registry.UnresolvedAlias):
            raise FailedPrecondition(
                f"The model alias '{model}' is unresolved: its target no longer exists.", field="model"
            )
        return found

    async def models(self, principal: Principal) -> list[ModelInfo]:
        return await self._listings.get(principal, lambda: self._load_models(principal))

    async def _load_models(self, principal: Principal) -> list[ModelInfo]:
        async with self._db.read() as session:
            catalogue = await registry.list_models(session)
            allowed = {
                kind: await readable_names(session, principal, kind)
                for kind in (ResourceKind.MODEL_DEPLOYMENT, ResourceKind.EXTERNAL_MODEL, ResourceKind.MODEL_ALIAS)
            }
        return [m for m in catalogue if m.ref.name in allowed[m.kind]]
