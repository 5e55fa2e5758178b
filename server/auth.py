"""Authentication of management and gateway requests: headers in, `Principal` out.

`Authorization: Bearer <token>` carries either a user session (JWT) or an API key (recognised by its prefix).
Browsers of the web console carry no header: their session token rides in the HttpOnly `sb_session` cookie
(server.console.session), accepted only when no Authorization header is sent, and for anything but a GET only with a
header no cross-site HTML form can send (`Connect-Protocol-Version`, or a content type other than the three a form
may use), so another site cannot make a signed-in browser post to the API. GET reaches only side-effect-free
methods (connectrpc refuses GET for the others), and no site can read its answer (no credentialed CORS).
`X-Platform-Tenant-Id` scopes a user session to one tenant the user belongs to (refused otherwise, here, so that no
method answers a non-member's scoped request); keys are always scoped to their own tenant.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

from server import permissions
from server.console.session import SESSION_COOKIE, session_cookie
from server.domain import users
from server.domain.principal import Principal
from server.errors import PermissionDenied, Unauthenticated
from server.store.db import Database
from server.tokens import TokenVerifier

if TYPE_CHECKING:  # a runtime import would be circular (api_keys -> auth)
    from server.session_revocations import SessionRevocations

__all__ = ["API_KEY_PREFIX", "TENANT_HEADER", "Authenticator", "KeyVerifier", "credential"]

TENANT_HEADER = "x-platform-tenant-id"
API_KEY_PREFIX = "sb_"

# Resolves an API key secret to the principal it acts as; raises Unauthenticated for any unusable key.
KeyVerifier = Callable[[str], Awaitable[Principal]]


def bearer_token(headers: Mapping[str, str]) -> str:
    value = headers.get("authorization", "")
    scheme, _, token = value.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated("missing bearer token in the Authorization header")
    token = token.strip()
    # Keys and JWTs are printable ASCII; anything else (such as undecodable bytes the HTTP server kept as
    # surrogates) can name no credential and must not reach hashing or JWT parsing.
    if not (token.isascii() and token.isprintable()):
        raise Unauthenticated("the bearer token is malformed")
    return token


# The content types an HTML form (or any "simple" cross-site request) may send without a CORS preflight.
_SIMPLE_CONTENT_TYPES = frozenset({"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"})


def _cross_site_capable(headers: Mapping[str, str]) -> bool:
    """Whether another site's page could have sent this request without a preflight (a form post)."""
    if "connect-protocol-version" in headers:
        return False
    media_type = headers.get("content-type", "").split(";")[0].strip().lower()
    return not media_type or media_type in _SIMPLE_CONTENT_TYPES


def credential(headers: Mapping[str, str], http_method: str = "POST", cookie_name: str = SESSION_COOKIE) -> str:
    """The bearer token or API key of a request: the Authorization header's when there is one (then the cookie is
    ignored), else the console's session cookie (named `cookie_name`: server.console.session.session_cookie_name)
    under the cross-site rule above (sessions only, never a key)."""
    if "authorization" in headers:
        return bearer_token(headers)
    token = session_cookie(headers, cookie_name)
    if token is None:
        raise Unauthenticated("missing bearer token in the Authorization header")
    if not (token.isascii() and token.isprintable()) or token.startswith(API_KEY_PREFIX):
        raise Unauthenticated("the session cookie is malformed")
    if http_method != "GET" and _cross_site_capable(headers):
        raise PermissionDenied(
            "a call authenticated by the console's session cookie must send Connect-Protocol-Version or a "
            "non-form content type (protection against cross-site requests)"
        )
    return token


class Authenticator:
    def __init__(
        self,
        db: Database,
        tokens: TokenVerifier,
        revocations: SessionRevocations,
        key_verifier: KeyVerifier | None = None,
        *,
        session_cookie_name: str = SESSION_COOKIE,
    ) -> None:
        self._db = db
        self._cookie = session_cookie_name
        self._tokens = tokens
        self._revocations = revocations
        self._key_verifier = key_verifier
        self._known_users: set[str] = set()

    async def authenticate(self, headers: Mapping[str, str], http_method: str = "POST") -> Principal:
        token = credential(headers, http_method, self._cookie)
        if token.startswith(API_KEY_PREFIX):
            if self._key_verifier is None:
                raise Unauthenticated("invalid API key")
            return await self._key_verifier(token)
        claims = await self._tokens.verify(token)
        # Signed out (server.console.session), whether it came as the cookie or was copied into a header.
        await self._revocations.check(token, claims)
        if claims.user_id not in self._known_users:
            # First sight of this user in this process: record them and turn pending invites into memberships.
            async with self._db.transaction() as session:
                await users.sign_in(session, claims)
            self._known_users.add(claims.user_id)
        scoped = headers.get(TENANT_HEADER, "").strip() or None
        principal = Principal(
            user_id=claims.user_id,
            email=claims.email,
            display_name=claims.display_name,
            can_manage_tenants=claims.can_manage_tenants,
            can_manage_models=claims.can_manage_models,
            scoped_tenant_id=scoped,
        )
        if scoped is not None and not principal.can_manage_tenants:
            async with self._db.read() as session:
                await permissions.require_scope_membership(session, principal)
        return principal
