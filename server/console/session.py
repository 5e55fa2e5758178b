"""The console's session: a backend-for-frontend cookie, so no token ever reaches the console's JavaScript.

`sb_session` (HttpOnly, SameSite=Strict, Path=/; Secure and named `__Host-sb_session` when the console's public URL is
https, so that no sibling subdomain or plain-http page can plant one of its own: `session_cookie_name`) holds a
session JWT:
the identity provider's access token after an OpenID sign-in (server.console.oidc), or in development one signed by
the embedded key. server.auth accepts it where no Authorization header is sent, under its rule against cross-site
requests. Its Max-Age is the token's remaining lifetime, so the browser drops it when the server would refuse it.

Routes under /console/auth/ (`ConsoleAuth`):
- `GET dev?next=` development sign-in as the bootstrap platform admin, only when `serve --demo` turned it on
  (SWITCHBOARD_CONSOLE_DEV_SIGN_IN) on the embedded identity (404 otherwise), and only under a Host no DNS rebinding
  can produce (see `_rebinding_proof`);
- `GET login?next=` and `GET callback` the OpenID Connect code flow with PKCE (server.console.oidc); 404 when no
  provider is configured. Its flow cookie is host-only on an https console too (`__Host-sb_signin`): whoever could
  plant one could sign a browser in as themselves;
- `POST logout` (from the console's own pages only) revokes the session token until its expiry, so that no copy of
  it is accepted either (server.session_revocations), clears the cookie and sends the browser to the provider's
  end_session_endpoint when it has one: a 303 for a form post, or `{"location": ...}` for a fetch that accepts JSON
  (the console's way, since its CSP's form-action keeps a form's redirects on its own origin).
`next` must be a path under /console on this origin; anything else is refused, so sign-in cannot be turned into an
open redirect.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, parse_qs, unquote, urlsplit

from server.console.oidc import FLOW_COOKIE, FLOW_PATH, OidcClient, SignInFailed
from server.errors import Unauthenticated, unavailable
from server.settings import Settings
from server.tokens import TokenVerifier, mint_bootstrap_admin
from server.traffic import Receive, Scope, Send

if TYPE_CHECKING:  # a runtime import would be circular (api_keys -> auth)
    from server.session_revocations import SessionRevocations

__all__ = [
    "AUTH_PREFIX",
    "SESSION_COOKIE",
    "ConsoleAuth",
    "console_path",
    "cookie",
    "dev_sign_in_offered",
    "session_cookie",
    "session_cookie_name",
    "sign_in_options",
]


SESSION_COOKIE = "sb_session"
# Browsers keep a __Host- cookie only when it is Secure, has Path=/ and no Domain, and set over https: one a
# sibling subdomain or an http page of the same host set cannot carry the name, so it cannot sign a person in as
# someone else (session fixation) on an https console.
_HOST_ONLY = "__Host-"
AUTH_PREFIX = "/console/auth/"
_CONSOLE = "/console"
_HOME = "/console/"
# A development sign-in lasts a working day; the console sends the browser back here when it ends.
DEV_SESSION_SECONDS = 12 * 3600
# What every browser keeps of one cookie, its name, value and attributes together (RFC 6265 §6.1): a longer one is
# dropped without a word, and the next request simply lacks it.
_COOKIE_BYTES = 4096

log = logging.getLogger("switchboard.console")


def dev_sign_in_offered(settings: Settings) -> bool:
    """Whether /console/auth/dev signs in: `serve --demo` turned it on, on the embedded identity (its tokens are
    minted with the embedded key, which a server verifying an identity provider's JWKS would refuse)."""
    return settings.console_dev_sign_in and not settings.jwks_url


def sign_in_options(settings: Settings) -> dict[str, bool]:
    """How the console may sign in on this server, for the front end's /console/config.json (no secrets)."""
    return {"devSignIn": dev_sign_in_offered(settings), "oidc": bool(settings.oidc_issuer)}


def cookie(header: str, name: str) -> str | None:
    """The first value of cookie `name` in a Cookie header (browsers send the most specific path first)."""
    for part in header.split(";"):
        key, sep, value = part.strip().partition("=")
        if sep and key == name:
            return value.strip().strip('"')
    return None


def session_cookie_name(settings: Settings) -> str:
    """The session cookie's name on this server: `__Host-sb_session` behind an https console URL, else `sb_session`
    (a browser keeps a __Host- cookie only from https)."""
    return _HOST_ONLY + SESSION_COOKIE if settings.console_url.startswith("https://") else SESSION_COOKIE


def session_cookie(headers: Mapping[str, str], name: str = SESSION_COOKIE) -> str | None:
    """The session token the browser sent in cookie `name` (`session_cookie_name`), or None."""
    value = cookie(headers.get("cookie", ""), name)
    return value or None


def _split(url: str) -> SplitResult | None:
    """`url`'s parts, or None when it has none: urlsplit raises ValueError on a malformed bracketed host (`//[zz]/`,
    `http://[::1/`), and what a request names (next, Origin, Host) is refused for that like any other foreign value
    rather than failing the request."""
    try:
        return urlsplit(url)
    except ValueError:
        return None


def console_path(value: str) -> str | None:
    """`next` as a path under /console on this origin (the default: /console/), or None when it is anything else:
    another origin, a scheme, `//host`, backslashes (which browsers read as slashes), dot segments, control
    characters."""
    if not value:
        return _HOME
    if not (value.isascii() and value.isprintable()) or "\\" in value:
        return None
    parts = _split(value)
    if parts is None or parts.scheme or parts.netloc or value.startswith("//"):
        return None
    if not (parts.path == _CONSOLE or parts.path.startswith(_CONSOLE + "/")):
        return None
    if any(segment in (".", "..") for segment in unquote(parts.path).split("/")):
        return None
    return value


def _set_cookie(name: str, value: str, *, max_age: int, path: str, same_site: str, secure: bool) -> bytes:
    attributes = f"{name}={value}; Max-Age={max_age}; Path={path}; HttpOnly; SameSite={same_site}"
    return (attributes + ("; Secure" if secure else "")).encode()


def _query(scope: Scope) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {name: values[0] for name, values in parse_qs(raw, keep_blank_values=True).items()}


def _header(scope: Scope, name: bytes) -> str:
    for key, value in scope["headers"]:
        if key == name:
            return str(value.decode("latin-1"))
    return ""


# Every answer of these routes: never cached (they set or clear credentials), and a URL carrying an authorization
# code is never sent on as a Referer.
_COMMON = [
    (b"cache-control", b"no-store"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
]


async def _redirect(send: Send, location: str, cookies: list[bytes]) -> None:
    headers = [(b"location", location.encode()), *((b"set-cookie", c) for c in cookies), *_COMMON]
    await send({"type": "http.response.start", "status": 302, "headers": [*headers, (b"content-length", b"0")]})
    await send({"type": "http.response.body", "body": b""})


async def _text(send: Send, status: int, message: str, cookies: list[bytes] | None = None) -> None:
    body = (message + "\n").encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *((b"set-cookie", c) for c in cookies or ()),
        *_COMMON,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def _same_origin(scope: Scope) -> bool:
    """A browser's POST from a page of this origin: Sec-Fetch-Site says so, or (older browsers) Origin names the
    host the request was sent to. A cross-site form sends neither, so it cannot sign anyone out."""
    site = _header(scope, b"sec-fetch-site")
    if site:
        return site == "same-origin"
    origin = _header(scope, b"origin")
    parts = _split(origin)
    return bool(origin) and parts is not None and parts.netloc == _header(scope, b"host")


def _rebinding_proof(scope: Scope, settings: Settings) -> bool:
    """Whether the request's Host is one a browser cannot have been tricked into using for this server: `localhost`
    (browsers resolve it to loopback themselves), an IP address (no DNS involved), or the host of the console's
    public URL. Any other name may be an attacker's, pointed at this machine's loopback by DNS rebinding: its page is
    then same-origin with what it reaches, and the development sign-in would hand it a platform admin's session."""
    request = _split("//" + _header(scope, b"host"))
    if request is None or not request.hostname:
        return False
    host, public = request.hostname, _split(settings.console_url)
    if host == "localhost" or (public is not None and host == public.hostname):
        return True
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class ConsoleAuth:
    """The ASGI app of /console/auth/*: sign-in (development or OpenID Connect) and sign-out."""

    def __init__(
        self, settings: Settings, tokens: TokenVerifier, oidc: OidcClient | None, revocations: SessionRevocations
    ) -> None:
        self._settings = settings
        self._tokens = tokens
        self._revocations = revocations
        self._oidc = oidc
        self._secure = settings.console_url.startswith("https://")
        self._cookie = session_cookie_name(settings)
        # The sign-in's flow cookie is host-only on https as well: one planted from a sibling subdomain would carry
        # the planter's state, nonce and verifier, and the callback would sign the browser in as the planter (login
        # CSRF). A __Host- cookie must have Path=/; over http it keeps to the sign-in routes.
        self._flow = (_HOST_ONLY + FLOW_COOKIE, "/") if self._secure else (FLOW_COOKIE, FLOW_PATH)
        self._dev = dev_sign_in_offered(settings)

    def _session(self, token: str, max_age: int) -> bytes:
        return _set_cookie(
            self._cookie, token, max_age=max(max_age, 0), path="/", same_site="Strict", secure=self._secure
        )

    def _cleared(self, name: str, path: str, same_site: str) -> bytes:
        return _set_cookie(name, "", max_age=0, path=path, same_site=same_site, secure=self._secure)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = scope["path"].removeprefix(AUTH_PREFIX)
        method = scope["method"]
        routes: dict[str, tuple[str, Callable[[Scope, Send], Awaitable[None]]]] = {
            "dev": ("GET", self._dev_sign_in),
            "login": ("GET", self._login),
            "callback": ("GET", self._callback),
            "logout": ("POST", self._logout),
        }
        found = routes.get(route)
        if found is None:
            await _text(send, 404, f"no console sign-in route at {scope['path'][:100]}")
        elif method != found[0]:
            await _text(send, 405, f"{scope['path']} answers {found[0]} only")
        else:
            await found[1](scope, send)

    async def _dev_sign_in(self, scope: Scope, send: Send) -> None:
        if not self._dev:
            await _text(send, 404, "development sign-in is only offered by `switchboard serve --demo` (make run)")
            return
        if not _rebinding_proof(scope, self._settings):
            await _text(
                send,
                403,
                "development sign-in answers only at localhost, an IP address or SWITCHBOARD_CONSOLE_PUBLIC_URL's host",
            )
            return
        target = console_path(_query(scope).get("next", ""))
        if target is None:
            await _text(send, 400, "next must be a path under /console on this server")
            return
        token = mint_bootstrap_admin(self._settings, ttl_seconds=DEV_SESSION_SECONDS)
        await _redirect(send, target, [self._session(token, DEV_SESSION_SECONDS)])

    async def _login(self, scope: Scope, send: Send) -> None:
        if self._oidc is None:
            await _text(send, 404, "no OpenID provider is configured (SWITCHBOARD_OIDC_ISSUER)")
            return
        target = console_path(_query(scope).get("next", ""))
        if target is None:
            await _text(send, 400, "next must be a path under /console on this server")
            return
        try:
            location, flow = await self._oidc.begin(target)
        except SignInFailed as exc:
            await _text(send, 502, f"sign-in is unavailable: {exc}")
            return
        name, path = self._flow
        flow_cookie = _set_cookie(
            name, flow, max_age=self._oidc.flow_seconds, path=path, same_site="Lax", secure=self._secure
        )
        if len(flow_cookie) > _COOKIE_BYTES:  # `next` rides in it; the callback would find no flow cookie
            await _text(send, 400, f"next is too long to carry through the sign-in ({len(target)} characters)")
            return
        await _redirect(send, location, [flow_cookie])

    async def _callback(self, scope: Scope, send: Send) -> None:
        if self._oidc is None:
            await _text(send, 404, "no OpenID provider is configured (SWITCHBOARD_OIDC_ISSUER)")
            return
        # The flow cookie is single-use: cleared whatever the outcome, and spent server-side by `finish`, so neither
        # the browser nor a copy of the cookie can finish a sign-in with it again.
        name, path = self._flow
        cleared = self._cleared(name, path, "Lax")
        flow = cookie(_header(scope, b"cookie"), name) or ""
        try:
            signed_in = await self._oidc.finish(_query(scope), flow)
            # The API will check the access token on every call; refuse now one it would refuse then.
            claims = await self._tokens.verify(signed_in.access_token)
        except SignInFailed as exc:
            await _text(send, 400, f"sign-in failed: {exc}. Start again from /console/.", [cleared])
            return
        except Unauthenticated:
            log.warning("the OpenID provider's access token is not one this server accepts (see SWITCHBOARD_JWT_*)")
            await _text(
                send, 400, "sign-in failed: the provider's access token is not accepted by this server", [cleared]
            )
            return
        except Exception as exc:
            refusal = unavailable(exc)  # the flow could not be spent (server.session_revocations)
            if refusal is None:
                raise
            log.warning("sign-in refused: the database is unavailable (%s)", type(exc).__name__)
            await _text(
                send, 503, f"sign-in did not complete: {refusal.message}. Start again from /console/.", [cleared]
            )
            return
        # The token's own `exp`, which every call checks: the provider's `expires_in` is optional (a provider that
        # omits it would otherwise need a guess).
        max_age = int(claims.expires_at - time.time())
        session = self._session(signed_in.access_token, max_age)
        if len(session) > _COOKIE_BYTES:
            # The browser would drop it and the console, finding no session, send it to sign in again: a loop that
            # never says why. Starting again cannot help either, so the page names what the provider must change.
            size = len(signed_in.access_token)
            log.warning("the OpenID provider's access token (%d bytes) is too large for a browser cookie", size)
            message = (
                f"sign-in failed: the provider's access token ({size} bytes) is too large for a browser cookie "
                f"(at most {_COOKIE_BYTES} bytes with its name and attributes). The provider's administrator can "
                "issue this console smaller access tokens (fewer claims, such as no group list)."
            )
            await _text(send, 400, message, [cleared])
            return
        await _redirect(send, signed_in.next_path, [cleared, session])

    async def _revoke(self, token: str | None) -> None:
        # Only a token this server would accept is recorded: anything else is refused anyway, and recording it
        # would let anyone who can post here fill the table.
        if token is None:
            return
        try:
            claims = await self._tokens.verify(token)
        except Unauthenticated:
            return
        await self._revocations.revoke(token, claims.expires_at)

    async def _logout(self, scope: Scope, send: Send) -> None:
        if not _same_origin(scope):
            await _text(send, 403, "sign-out is only accepted from the console's own pages")
            return
        try:
            await self._revoke(cookie(_header(scope, b"cookie"), self._cookie) or None)
        except Exception as exc:
            refusal = unavailable(exc)
            if refusal is None:
                raise
            # The cookie stays: it is what a retry revokes, and clearing it would leave the token valid elsewhere.
            log.warning("sign-out refused: the database is unavailable (%s)", type(exc).__name__)
            await _text(send, 503, f"sign-out did not complete: {refusal.message}")
            return
        location = _HOME
        if self._oidc is not None:
            location = await self._oidc.end_session_url(self._settings.console_url + _HOME) or _HOME
        cleared = (b"set-cookie", self._cleared(self._cookie, "/", "Strict"))
        if "application/json" in _header(scope, b"accept"):
            # fetch() from the console: it navigates to `location` itself. A form post could not be sent on to the
            # provider: the console's CSP (form-action 'self') also covers where a form's redirects lead.
            body = json.dumps({"location": location}).encode()
            headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
            await send({"type": "http.response.start", "status": 200, "headers": [*headers, cleared, *_COMMON]})
            await send({"type": "http.response.body", "body": body})
            return
        # 303: the browser follows a form POST's answer with a GET.
        headers = [(b"location", location.encode()), cleared, *_COMMON, (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
