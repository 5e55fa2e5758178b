"""Signed-out sessions: a session token the console signed out is refused until it expires, in every replica; so
is one issued to a user before DeleteUser deprovisioned them (a later sign-in with such a token revived the user).

A session token (JWT) is checked by its signature alone (server.tokens), so without server-side state a copy of a
signed-out console session (12 hours after a development sign-in) would stay good until its `exp`. Sign-out
(server.console.session) records the token in `revoked_sessions` until then, and server.auth asks
`SessionRevocations.check` after the signature, whether the token came as the cookie or as a bearer header.

A token is recorded by the SHA-256 of its signed part, `header.payload` exactly as the issuer signed it, not of the
whole string: anyone holding a copy can spell its signature otherwise and still have it verify (with base64 padding,
which PyJWT accepts; for ECDSA, as (r, n - s)), a token string of its own. The signed part has one spelling: any
other breaks the signature.

Each process caches its answer per token for `api_key_cache_seconds` (one read per token and process, however many
requests arrive at once: server.ttlcache). A revocation drops every process's answers as soon as it commits
(`Topic.SESSION`, server.invalidation); the cache bound is the fallback while a replica's listener is down. Rows
past their expiry, which the signature check refuses anyway, are deleted by the next sign-out.

The same table makes the console's sign-in flow single-use in every replica (`spend`): the flow cookie
(server.console.oidc) is sealed, not stored, so only a row naming its state keeps a copy of it from finishing a
second sign-in with a fresh code. Such a row is keyed by the SHA-256 of `spent:` and the state, which no token's
signed part (`eyJ…`) can be, and is never looked up by `check`.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import delete, exists, select

from server.domain.api_keys import hash_secret
from server.errors import Unauthenticated
from server.invalidation import Topic
from server.store.db import Database, as_utc, insert_ignoring_duplicates
from server.store.models import RevokedSessionRow, UserRow, utcnow
from server.tokens import TOKEN_REFUSAL, TokenClaims
from server.ttlcache import TtlCache

__all__ = ["SessionRevocations"]

_MAX_ENTRIES = 100_000


def _digest(token: str) -> bytes:
    return hash_secret(token.rpartition(".")[0])  # the signed part (see above)


_SPENT = "spent:"


class SessionRevocations:
    def __init__(self, db: Database, cache_seconds: float) -> None:
        self._db = db
        self._revoked: TtlCache[bool] = TtlCache(cache_seconds, _MAX_ENTRIES, name="session_revocations")
        db.invalidations.on(Topic.SESSION, lambda _ids: self._revoked.forget())

    async def check(self, token: str, claims: TokenClaims) -> None:
        """Refuse a signed-out token, or one issued to a user before DeleteUser deprovisioned them (a token without
        `iat` counts as issued before), as any invalid one is refused (the answer says no more); `token` is one
        server.tokens accepted, with its `claims`."""
        digest = _digest(token)
        if await self._revoked.get(digest, lambda: self._load(digest, claims)):
            raise Unauthenticated(TOKEN_REFUSAL)

    async def _load(self, digest: bytes, claims: TokenClaims) -> bool:
        async with self._db.read() as session:
            found = await session.scalar(select(exists().where(RevokedSessionRow.token_hash == digest)))
            deleted = as_utc(await session.scalar(select(UserRow.deleted_at).where(UserRow.id == claims.user_id)))
        issued = claims.issued_at
        return bool(found) or (deleted is not None and (issued is None or issued <= deleted.timestamp()))

    async def revoke(self, token: str, expires_at: float) -> None:
        """Refuse `token` from now until `expires_at` (seconds since the epoch: its `exp`)."""
        await self._record(_digest(token), expires_at)

    async def spend(self, credential: str, expires_at: float) -> bool:
        """Record single-use `credential` as used until `expires_at` (when it is refused anyway): True the first
        time, False once any replica has (the primary key decides between concurrent callers)."""
        return await self._record(hash_secret(_SPENT + credential), expires_at)

    async def _record(self, digest: bytes, expires_at: float) -> bool:
        now = utcnow()
        async with self._db.transaction() as session:
            await session.execute(delete(RevokedSessionRow).where(RevokedSessionRow.expires_at <= now))
            values = {"token_hash": digest, "expires_at": datetime.fromtimestamp(expires_at, UTC), "revoked_at": now}
            return await insert_ignoring_duplicates(session, RevokedSessionRow, values)
