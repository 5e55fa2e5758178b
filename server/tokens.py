"""User session tokens: JWT bearer tokens validated with PyJWT.

Production points `SWITCHBOARD_JWKS_URL` at the identity provider. The embedded default has its own RSA signing key
under `var/` (created on first use) so `switchboard token` can mint sessions for local users.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from server.errors import SwitchboardError, Unauthenticated
from server.settings import Settings
from server.varfiles import create_once

__all__ = [
    "PLATFORM_ROLES",
    "TOKEN_REFUSAL",
    "TokenClaims",
    "TokenVerifier",
    "ensure_signing_key",
    "mint_bootstrap_admin",
    "mint_token",
]

PLATFORM_ROLES = ("can_manage_tenants", "can_manage_models")
# Every refused session token gets this one answer, whatever was wrong with it (server.session_revocations too).
TOKEN_REFUSAL = "invalid or expired session token"  # noqa: S105 (a message, not a secret)
_ALGORITHMS = ["RS256", "ES256", "EdDSA"]
# Verified tokens remembered per process. A token string verified once stays valid until its `exp` (nothing else
# about it can change), and the signature check is most of an authenticated read's CPU. Cleared wholesale when full.
_VERIFIED_MAX = 10_000
# The identity provider's JWKS is read again for an unknown key id at most this often.
_JWKS_REFRESH_SECONDS = 5.0
_JWKS_TIMEOUT = aiohttp.ClientTimeout(total=10)

log = logging.getLogger("switchboard.tokens")


@dataclass(frozen=True)
class TokenClaims:
    user_id: str
    email: str
    display_name: str
    can_manage_tenants: bool
    can_manage_models: bool
    expires_at: float  # the token's `exp`, seconds since the epoch
    issued_at: float | None = None  # its `iat`, when it says


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


def mint_bootstrap_admin(settings: Settings, *, ttl_seconds: int) -> str:
    """A session of the bootstrap platform admin (SWITCHBOARD_BOOTSTRAP_ADMIN, every platform role): what
    `switchboard serve` writes to var/admin-token and what the console's development sign-in hands a browser."""
    return mint_token(
        settings, user_id=settings.bootstrap_admin, name="Platform admin", roles=PLATFORM_ROLES, ttl_seconds=ttl_seconds
    )


class TokenVerifier:
    """Validates signature, issuer, audience and expiry; any failure is the same `Unauthenticated`.

    With SWITCHBOARD_JWKS_URL the keys are read from the identity provider through `http` (the process's session
    through the egress guard, server.egress), again when a token names a key id not yet known (a rotated key), at
    most once per `_JWKS_REFRESH_SECONDS` so tokens with made-up key ids cannot make the server hammer the provider.
    """

    def __init__(self, settings: Settings, http: Callable[[], aiohttp.ClientSession] | None = None) -> None:
        if settings.jwks_url and http is None:
            raise ValueError("verifying the identity provider's tokens needs a session through the egress guard")
        self._settings = settings
        self._http = http
        self._jwks_keys: dict[str, Any] = {}  # kid -> key, so the event loop only waits on a fetch for a new kid
        self._jwks_read = -math.inf  # monotonic time of the last fetch
        self._jwks_lock = asyncio.Lock()
        self._public_key: Any = None
        self._verified: dict[str, tuple[float, TokenClaims]] = {}  # token -> (its exp, its claims)
        if not settings.jwks_url:
            private = serialization.load_pem_private_key(ensure_signing_key(settings), password=None)
            self._public_key = private.public_key()

    async def _fetch_jwks(self) -> None:
        assert self._http is not None
        try:
            async with self._http().get(self._settings.jwks_url, timeout=_JWKS_TIMEOUT) as resp:
                document = await resp.json(content_type=None) if resp.status == 200 else None
        except (aiohttp.ClientError, TimeoutError, ValueError, SwitchboardError) as exc:
            log.warning("the identity provider's JWKS could not be read (%s)", type(exc).__name__)
            return
        try:
            keys = jwt.PyJWKSet.from_dict(document).keys if isinstance(document, dict) else []
        except jwt.PyJWTError:
            keys = []
        if not keys:
            log.warning("the identity provider's JWKS holds no usable key")
            return
        self._jwks_keys = {str(k.key_id or ""): k.key for k in keys}

    async def _key_for(self, token: str) -> Any:
        if self._public_key is not None:
            return self._public_key
        kid = str(jwt.get_unverified_header(token).get("kid", ""))
        key = self._jwks_keys.get(kid)
        if key is None:
            async with self._jwks_lock:  # one fetch for the many requests that arrive with a new kid at once
                key = self._jwks_keys.get(kid)
                if key is None and time.monotonic() - self._jwks_read >= _JWKS_REFRESH_SECONDS:
                    self._jwks_read = time.monotonic()
                    await self._fetch_jwks()
                    key = self._jwks_keys.get(kid)
        if key is None:
            raise jwt.InvalidKeyError("no key of the identity provider has this token's key id")
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
            raise Unauthenticated(TOKEN_REFUSAL) from None
        roles = claims.get(self._settings.roles_claim) or []
        if not isinstance(roles, list):
            roles = []
        verified = TokenClaims(
            user_id=str(claims["sub"]),
            email=str(claims.get("email", "")).lower(),
            display_name=str(claims.get("name", "")),
            can_manage_tenants="can_manage_tenants" in roles,
            can_manage_models="can_manage_models" in roles,
            expires_at=float(claims["exp"]),
            issued_at=float(iat) if isinstance((iat := claims.get("iat")), int | float) else None,
        )
        if len(self._verified) >= _VERIFIED_MAX:
            self._verified.clear()
        # PyJWT refuses a token once `exp <= now`; the cache stops serving it at the same instant.
        self._verified[token] = (verified.expires_at, verified)
        return verified
