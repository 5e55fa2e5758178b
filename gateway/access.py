"""Who is calling and what they may use, answered from short-lived per-process caches.

The hot path must not touch the database on every request. Keys: the shared verifier (`server.keyauth`) caches each
lookup for at most `settings.api_key_cache_seconds`; the gateway adds no cache of its own on top, so that stays the
bound on how long a disabled or revoked key works here. Models: a (principal, model) decision and a principal's model
list are trusted for the same bound, so a withdrawn grant or a repointed alias takes effect within it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from gateway import registry
from gateway.catalog import ModelInfo, Route
from server.auth import KeyVerifier
from server.crypto import SecretBox
from server.domain.principal import Principal
from server.errors import FailedPrecondition, NotFound, SwitchboardError, Unauthenticated
from server.permissions import ResourceKind, can_invoke, readable_names
from server.store.db import Database

__all__ = ["Access"]

T = TypeVar("T")
_MAX_ENTRIES = 50_000


class _TtlCache(Generic[T]):
    """(expiry, value-or-refusal) per key, with single-flight loading: when an entry is missing or stale, one
    request loads it and concurrent requests for the same key await that load instead of stampeding the database.
    Cleared wholesale when it grows too large (no per-entry bookkeeping on the hot path)."""

    def __init__(self, ttl: float) -> None:
        self._ttl = ttl
        self._entries: dict[object, tuple[float, T | SwitchboardError]] = {}
        self._loading: dict[object, asyncio.Future[tuple[float, T | SwitchboardError]]] = {}

    async def get(self, key: object, load: Callable[[], Awaitable[T]]) -> T:
        hit = self._entries.get(key)
        if hit is None or hit[0] <= time.monotonic():
            hit = await self._load(key, load)
        if isinstance(hit[1], SwitchboardError):
            raise hit[1]
        return hit[1]

    async def _load(self, key: object, load: Callable[[], Awaitable[T]]) -> tuple[float, T | SwitchboardError]:
        pending = self._loading.get(key)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[tuple[float, T | SwitchboardError]] = asyncio.get_running_loop().create_future()
        self._loading[key] = future
        try:
            try:
                value: T | SwitchboardError = await load()
            except SwitchboardError as exc:
                value = exc
            if len(self._entries) >= _MAX_ENTRIES:
                self._entries.clear()
            hit = (time.monotonic() + self._ttl, value)
            self._entries[key] = hit
            future.set_result(hit)
            return hit
        except asyncio.CancelledError:
            future.cancel()  # waiters retry on their next request; nothing is cached
            raise
        except Exception as exc:  # an unexpected failure is not cached; the waiters see it too
            future.set_exception(exc)
            future.exception()  # mark it retrieved when nobody waits
            raise
        finally:
            del self._loading[key]


def model_not_found(model: str) -> NotFound:
    # The same answer whether the model does not exist or the key may not use it: no existence leak.
    return NotFound(f"The model '{model}' does not exist or you do not have access to it.", field="model")


class Access:
    def __init__(self, db: Database, verifier: KeyVerifier, box: SecretBox, ttl: float) -> None:
        self._db = db
        self._box = box
        self._verifier = verifier
        self._routes: _TtlCache[Route] = _TtlCache(ttl)
        self._listings: _TtlCache[list[ModelInfo]] = _TtlCache(ttl)

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
