"""User session tokens: JWT bearer tokens validated with PyJWT.

Production points `SWITCHBOARD_JWKS_URL` at the identity provider. The embedded default has its own RSA signing key
under `var/` (created on first use) so `switchboard token` can mint sessions for local users.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from server.errors import Unauthenticated
from server.settings import Settings
from server.varfiles import create_once

__all__ = ["PLATFORM_ROLES", "TokenClaims", "TokenVerifier", "ensure_signing_key", "mint_token"]

PLATFORM_ROLES = ("can_manage_tenants", "can_manage_models")
_ALGORITHMS = ["RS256", "ES256", "EdDSA"]
# Verified tokens remembered per process. A token string verified once stays valid until its `exp` (nothing else
# about it can change), and the signature check is most of an authenticated read's CPU. Cleared wholesale when full.
_VERIFIED_MAX = 10_000


@dataclass(frozen=True)
class TokenClaims:
    user_id: str
    email: str
    display_name: str
    can_manage_tenants: bool
    can_manage_models: bool


def _new_signing_key() -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    encoding, private_format = serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8
    return key.private_bytes(encoding, private_format, serialization.NoEncryption())


def ensure_signing_key(settings: Settings) -> bytes:
    """Return the embedded signing key (PEM), creating it on first use (atomically: see server.varfiles)."""
    return create_once(settings.signing_key_path, _new_signing_key)


def mint_token(
    settings: Settings,
    *,
    user_id: str,
    email: str = "",
    name: str = "",
    roles: tuple[str, ...] = (),
    ttl_seconds: int = 3600,
) -> str:
    """Mint a session token signed by the embedded key (development and bootstrap only)."""
    unknown = set(roles) - set(PLATFORM_ROLES)
    if unknown:
        raise ValueError(f"unknown platform roles: {sorted(unknown)}")
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": settings.jwt_issuer,
        "aud": settings.jwt_audience,
        "sub": user_id,
        "iat": now,
        "exp": now + ttl_seconds,
        settings.roles_claim: list(roles),
    }
    if email:
        claims["email"] = email
    if name:
        claims["name"] = name
    return jwt.encode(claims, ensure_signing_key(settings), algorithm="RS256")


class TokenVerifier:
    """Validates signature, issuer, audience and expiry; any failure is the same `Unauthenticated`."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._jwks = jwt.PyJWKClient(settings.jwks_url, cache_keys=True) if settings.jwks_url else None
        self._jwks_keys: dict[str, Any] = {}  # kid -> key, so the event loop only waits on a fetch for a new kid
        self._public_key: Any = None
        self._verified: dict[str, tuple[float, TokenClaims]] = {}  # token -> (its exp, its claims)
        if self._jwks is None:
            private = serialization.load_pem_private_key(ensure_signing_key(settings), password=None)
            self._public_key = private.public_key()

    async def _key_for(self, token: str) -> Any:
        if self._jwks is None:
            return self._public_key
        kid = str(jwt.get_unverified_header(token).get("kid", ""))
        key = self._jwks_keys.get(kid)
        if key is None:
            # PyJWKClient fetches with blocking I/O: keep it off the event loop.
            key = (await asyncio.to_thread(self._jwks.get_signing_key_from_jwt, token)).key
            self._jwks_keys[kid] = key
        return key

    async def verify(self, token: str) -> TokenClaims:
        hit = self._verified.get(token)
        if hit is not None:
            if time.time() < hit[0]:
                return hit[1]
            del self._verified[token]
        try:
            key = await self._key_for(token)
            claims = jwt.decode(
                token,
                key,
                algorithms=_ALGORITHMS,
                audience=self._settings.jwt_audience,
                issuer=self._settings.jwt_issuer,
                options={"require": ["exp", "sub", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            raise Unauthenticated("invalid or expired session token") from None
        roles = claims.get(self._settings.roles_claim) or []
        if not isinstance(roles, list):
            roles = []
        verified = TokenClaims(
            user_id=str(claims["sub"]),
            email=str(claims.get("email", "")).lower(),
            display_name=str(claims.get("name", "")),
            can_manage_tenants="can_manage_tenants" in roles,
            can_manage_models="can_manage_models" in roles,
        )
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        # PyJWT refuses a token once `exp <= now`; the cache stops serving it at the same instant.
        self._verified[token] = (float(claims["exp"]), verified)
        return verified
