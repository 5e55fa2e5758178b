"""OpenID Connect sign-in for the console: authorization code flow with PKCE (S256), as a confidential or public
client of SWITCHBOARD_OIDC_ISSUER.

`begin` builds the authorization request and the flow cookie: state, nonce, PKCE verifier and the page to return to,
sealed (encrypted and authenticated, server.crypto's key, which every replica shares) so the browser can neither
read nor alter them, and refused after `flow_seconds`. `finish` checks the callback against it, spends the flow
(one callback per flow, in every replica: `spend`, server.session_revocations), exchanges the code (with the
verifier, so an intercepted code is useless), and validates the ID token (signature from the provider's JWKS,
issuer, audience, expiry, nonce). The access token is what becomes the session: the caller checks it with the
server's own TokenVerifier, exactly as every API call will.

Every request to the provider (discovery, token, JWKS) goes through the egress guard (server.egress) as a
destination the platform's operator configured (`Reach.PLATFORM`). Tokens and codes are never logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import jwt
from cryptography.fernet import InvalidToken

from server.client_auth import client_secret_basic
from server.crypto import SecretBox
from server.errors import SwitchboardError
from server.settings import Settings

__all__ = ["FLOW_COOKIE", "FLOW_PATH", "OidcClient", "SignInFailed", "SignedIn"]

FLOW_COOKIE = "sb_signin"
# Sent back only to the callback (and login, which replaces it), not with every API call; an https console's flow
# cookie is host-only instead, which needs Path=/ (server.console.session).
FLOW_PATH = "/console/auth/"
_ALGORITHMS = ["RS256", "ES256", "EdDSA", "PS256"]
# The provider's discovery document and keys are re-read after this long (a rotated key is picked up on first use
# of its kid anyway).
_METADATA_SECONDS = 3600.0
_TIMEOUT = aiohttp.ClientTimeout(total=10)


class SignInFailed(Exception):
    """A sign-in that cannot complete; the message is safe to show to the person signing in."""


@dataclass(frozen=True)
class SignedIn:
    access_token: str
    next_path: str


@dataclass(frozen=True)
class _Provider:
    # As the provider spells it in its tokens' `iss`: SWITCHBOARD_OIDC_ISSUER loses a trailing slash (server.settings),
    # which issuers such as Auth0's (`https://tenant.auth0.com/`) have.
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    end_session_endpoint: str
    fetched: float


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _challenge(verifier: str) -> str:
    return _b64url(hashlib.sha256(verifier.encode()).digest())


class OidcClient:
    """One per management process; `http` gives the process's guarded session for the provider, `spend(state,
    until)` records a flow's state as used in the database every replica shares (False when it already was)."""

    flow_seconds = 600

    def __init__(
        self,
        settings: Settings,
        box: SecretBox,
        http: Callable[[], aiohttp.ClientSession],
        spend: Callable[[str, float], Awaitable[bool]],
    ) -> None:
        self._issuer = settings.oidc_issuer
        self._client_id = settings.oidc_client_id
        self._secret = settings.oidc_client_secret
        self._resource = settings.oidc_resource
        self._scopes = settings.oidc_scopes
        self._redirect_uri = settings.console_url + "/console/auth/callback"
        self._box = box
        self._http = http
        self._spend = spend
        self._provider: _Provider | None = None
        self._keys: dict[str, Any] = {}

    @property
    def redirect_uri(self) -> str:
        return self._redirect_uri

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with self._http().get(url, timeout=_TIMEOUT) as resp:
                if resp.status != 200:
                    raise SignInFailed(f"the provider's {what} answered HTTP {resp.status}")
                body = await resp.json(content_type=None)
        except SwitchboardError:  # the egress guard's refusal (it logs which address and why)
            raise SignInFailed(f"the provider's {what} could not be read: the egress guard refused it") from None
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise SignInFailed(f"the provider's {what} could not be read ({type(exc).__name__})") from None
        if not isinstance(body, dict):
            raise SignInFailed(f"the provider's {what} is not a JSON object")
        return body

    async def _metadata(self) -> _Provider:
        if self._provider is not None and time.monotonic() - self._provider.fetched < _METADATA_SECONDS:
            return self._provider
        found = await self._get_json(self._issuer + "/.well-known/openid-configuration", "discovery document")
        # OpenID Connect Discovery 1.0 §4.3: the document must name the issuer it was fetched for.
        issuer = str(found.get("issuer", ""))
        if issuer.rstrip("/") != self._issuer:
            raise SignInFailed("the provider's discovery document names another issuer")
        try:
            provider = _Provider(
                issuer=issuer,
                authorization_endpoint=str(found["authorization_endpoint"]),
                token_endpoint=str(found["token_endpoint"]),
                jwks_uri=str(found["jwks_uri"]),
                end_session_endpoint=str(found.get("end_session_endpoint", "")),
                fetched=time.monotonic(),
            )
        except KeyError as exc:
            raise SignInFailed(f"the provider's discovery document has no {exc.args[0]}") from None
        if provider.jwks_uri != (self._provider.jwks_uri if self._provider else ""):
            self._keys = {}
        self._provider = provider
        return provider

    async def _key(self, provider: _Provider, token: str) -> Any:
        try:
            kid = str(jwt.get_unverified_header(token).get("kid", ""))
        except jwt.PyJWTError:
            raise SignInFailed("the provider's ID token is malformed") from None
        if kid not in self._keys:
            document = await self._get_json(provider.jwks_uri, "JWKS")
            try:
                keys = jwt.PyJWKSet.from_dict(document).keys
            except jwt.PyJWTError:
                raise SignInFailed("the provider's JWKS holds no usable key") from None
            self._keys = {str(k.key_id or ""): k.key for k in keys}
        key = self._keys.get(kid)
        if key is None:
            raise SignInFailed("the provider's ID token is signed with a key its JWKS does not hold")
        return key

    async def begin(self, next_path: str) -> tuple[str, str]:
        """The authorization request's URL and the sealed flow cookie's value."""
        provider = await self._metadata()
        state, nonce, verifier = secrets.token_urlsafe(32), secrets.token_urlsafe(32), secrets.token_urlsafe(64)
        params = {
            "response_type": "code",
            "client_id": self._client_id,
            "redirect_uri": self._redirect_uri,
            "scope": self._scopes,
            "state": state,
            "nonce": nonce,
            "code_challenge": _challenge(verifier),
            "code_challenge_method": "S256",
        }
        if self._resource:
            params["resource"] = self._resource
        flow = json.dumps({"state": state, "nonce": nonce, "verifier": verifier, "next": next_path})
        separator = "&" if "?" in provider.authorization_endpoint else "?"
        return provider.authorization_endpoint + separator + urlencode(params), self._box.seal(flow).decode()

    def _flow(self, sealed: str) -> dict[str, str]:
        if not sealed:
            raise SignInFailed("this sign-in was not started in this browser, or its cookie was refused")
        try:
            flow = json.loads(self._box.open(sealed.encode(), ttl=self.flow_seconds))
        except (InvalidToken, ValueError):
            raise SignInFailed(f"this sign-in was not started here or took longer than {self.flow_seconds} s") from None
        if not isinstance(flow, dict) or not all(isinstance(flow.get(k), str) for k in ("state", "nonce", "verifier")):
            raise SignInFailed("this sign-in's cookie is not one this server made")
        return flow

    async def finish(self, query: Mapping[str, str], sealed_flow: str) -> SignedIn:
        """Check the callback's query against the flow cookie, exchange the code and validate the ID token."""
        if "error" in query:
            # The provider's error code is a short ASCII token (RFC 6749 §4.1.2.1); never echo its free text.
            code = query["error"] if query["error"].replace("_", "").isalnum() else "error"
            raise SignInFailed(f"the provider refused the sign-in ({code[:40]})")
        flow = self._flow(sealed_flow)
        if not hmac.compare_digest(query.get("state", "").encode(), flow["state"].encode()):
            raise SignInFailed("the sign-in answer does not belong to this browser's sign-in (state mismatch)")
        # RFC 9207: a provider that names itself in the answer must be ours (mix-up attacks).
        if "iss" in query and query["iss"].rstrip("/") != self._issuer:
            raise SignInFailed("the sign-in answer comes from another provider")
        code = query.get("code", "")
        if not code:
            raise SignInFailed("the sign-in answer carries no authorization code")
        # The flow is sealed in the cookie, not stored: without this a copy of the cookie would redeem a fresh code
        # for the same state (the provider hands one out on every visit to the authorization URL while its session
        # lasts) and sign in again for as long as the flow lasts. Spent before the exchange: one exchange per flow.
        if not await self._spend(flow["state"], time.time() + self.flow_seconds):
            raise SignInFailed("this sign-in has already finished; its answer cannot be used again")
        provider = await self._metadata()
        answer = await self._exchange(provider, code, flow["verifier"])
        access_token = answer.get("access_token")
        id_token = answer.get("id_token")
        if not isinstance(access_token, str) or not access_token or not isinstance(id_token, str):
            raise SignInFailed("the provider's token answer lacks an access token or an ID token")
        await self._check_id_token(provider, id_token, flow["nonce"])
        return SignedIn(access_token=access_token, next_path=flow["next"])

    async def _exchange(self, provider: _Provider, code: str, verifier: str) -> dict[str, Any]:
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self._redirect_uri,
            "code_verifier": verifier,
        }
        if self._resource:
            form["resource"] = self._resource
        auth = None
        if self._secret:
            auth = client_secret_basic(self._client_id, self._secret.reveal())
        else:
            form["client_id"] = self._client_id  # a public client: PKCE is its proof
        try:
            async with self._http().post(provider.token_endpoint, data=form, auth=auth, timeout=_TIMEOUT) as resp:
                body = await resp.json(content_type=None)
                status = resp.status
        except SwitchboardError:
            raise SignInFailed(
                "the provider's token endpoint could not be reached: the egress guard refused it"
            ) from None
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise SignInFailed(f"the provider's token endpoint could not be reached ({type(exc).__name__})") from None
        if status != 200 or not isinstance(body, dict):
            # invalid_grant is what a replayed, expired or foreign code gets.
            error = body.get("error", "") if isinstance(body, dict) else ""
            shown = error if isinstance(error, str) and error.replace("_", "").isalnum() else f"HTTP {status}"
            raise SignInFailed(f"the provider refused the authorization code ({shown[:40]})")
        return body

    async def _check_id_token(self, provider: _Provider, id_token: str, nonce: str) -> None:
        key = await self._key(provider, id_token)
        try:
            claims = jwt.decode(
                id_token,
                key,
                algorithms=_ALGORITHMS,
                audience=self._client_id,
                issuer=provider.issuer,
                options={"require": ["exp", "iat", "sub", "iss", "aud"]},
            )
        except jwt.PyJWTError:
            raise SignInFailed("the provider's ID token is not valid for this client") from None
        if not hmac.compare_digest(str(claims.get("nonce", "")).encode(), nonce.encode()):
            raise SignInFailed("the provider's ID token belongs to another sign-in (nonce mismatch)")

    async def end_session_url(self, after: str) -> str | None:
        """Where to send the browser to end the provider's session too (RP-Initiated Logout), or None."""
        try:
            provider = await self._metadata()
        except SignInFailed:
            return None  # the provider is unreachable: our session ends anyway
        if not provider.end_session_endpoint:
            return None
        params = urlencode({"client_id": self._client_id, "post_logout_redirect_uri": after})
        separator = "&" if "?" in provider.end_session_endpoint else "?"
        return provider.end_session_endpoint + separator + params
