"""Verifying API keys: secret in, `Principal` out, for the management API and the gateway alike.

Every replica caches lookups (valid and invalid alike) for at most `settings.api_key_cache_seconds` (default 5 s).
A change to a key (revoked, disabled, enabled, a new expiry) drops its lookups in every replica as soon as it
commits (`server.invalidation`, PostgreSQL LISTEN/NOTIFY); the cache bound is the fallback while a replica's
listener is down: each replica re-reads the key from the database once its cached entry is that old (one read per
key, however many requests arrive at that moment: `server.ttlcache`). Unknown, disabled, revoked and
expired keys all get the same refusal, so the answer tells an attacker nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update

from server.domain.api_keys import KeyState, hash_secret
from server.domain.principal import ApiKeyIdentity, ApiKeyType, Principal
from server.errors import Unauthenticated
from server.invalidation import QUIET, Topic
from server.store.db import Database, as_utc
from server.store.models import ApiKeyRow, UserRow, utcnow
from server.ttlcache import TtlCache

__all__ = ["REFUSAL", "ApiKeyVerifier"]

REFUSAL = "invalid API key"
_MAX_ENTRIES = 100_000
_LAST_USED_EVERY = timedelta(minutes=1)


@dataclass(frozen=True)
class _Entry:
    principal: Principal | None
    expire_at: datetime | None


_UNKNOWN = _Entry(None, None)


class ApiKeyVerifier:
    def __init__(self, db: Database, cache_seconds: float) -> None:
        self._db = db
        self._cache: TtlCache[_Entry] = TtlCache(cache_seconds, _MAX_ENTRIES, name="api_keys")
        db.invalidations.on(Topic.KEY, self._forget)

    def _forget(self, key_ids: tuple[str, ...]) -> None:
        if not key_ids:
            self._cache.forget()
            return

        # Refusals go too: a key that was disabled and is enabled again was cached as unknown.
        def named(_: object, entry: _Entry) -> bool:
            key = entry.principal.api_key if entry.principal is not None else None
            return entry.principal is None or (key is not None and key.key_id in key_ids)

        self._cache.forget(named)

    async def __call__(self, secret: str) -> Principal:
        digest = hash_secret(secret)
        entry = await self._cache.get(digest, lambda: self._load(digest))
        expired = entry.expire_at is not None and entry.expire_at <= datetime.now(UTC)
        if entry.principal is None or expired:
            raise Unauthenticated(REFUSAL)
        return entry.principal

    async def _load(self, digest: bytes) -> _Entry:
        async with self._db.transaction() as session:
            row = await session.scalar(select(ApiKeyRow).where(ApiKeyRow.secret_hash == digest))
            if row is None or row.state != KeyState.ACTIVE:
                return _UNKNOWN
            expire_at = as_utc(row.expire_at)
            owner = await session.get(UserRow, row.owner_user_id) if row.owner_user_id else None
            if owner is not None and owner.deleted_at is not None:  # deprovisioned: their keys go with them
                return _UNKNOWN
            last_used = as_utc(row.last_used_at)
            if last_used is None or utcnow() - last_used > _LAST_USED_EVERY:
                # Quiet: bookkeeping no cache holds, or every first use would drop the key's lookups everywhere.
                bump = update(ApiKeyRow).where(ApiKeyRow.id == row.id).values(last_used_at=utcnow())
                await session.execute(bump.execution_options(**QUIET))
            identity = ApiKeyIdentity(
                key_id=row.id,
                tenant_id=row.tenant_id,
                type=ApiKeyType(row.type),
                owner_user_id=row.owner_user_id,
                service_account_id=row.service_account_id,
            )
            principal = Principal(
                user_id=row.owner_user_id,
                email=(owner.email or "") if owner else "",
                display_name=owner.display_name if owner else "",
                scoped_tenant_id=row.tenant_id,
                api_key=identity,
            )
            return _Entry(principal, expire_at)
