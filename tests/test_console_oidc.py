"""Console sign-in through a real OpenID provider: the npm `oidc-provider` package (tests/oidc/provider.mjs) on
loopback, with a confidential client for the console's redirect URI and PKCE required, JWT access tokens for one
resource, and its development login and consent forms, which the test submits as a browser would (plain HTML
forms, so aiohttp with a cookie jar is the browser; redirects are followed one by one and everything the browser
sees is recorded).

Setup (idempotent, quiet): `npm ci` in tests/oidc from the committed package-lock.json. Skipped only when node and
npm are not installed, saying so.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlsplit

import aiohttp
import jwt
import pytest
import pytest_asyncio
from yarl import URL

from server.store.migrate import upgrade
from tests.conftest import Database, server_env, start_server
from tests.serving import free_port
from tests.sqlite_busy import sqlite_busy

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "oidc"
CLIENT_ID = "switchboard-console"
CLIENT_SECRET = "console-client-secret-for-tests"
RESOURCE = "https://switchboard.test/api"
AUDIENCE = "switchboard-console-test"
GET_SESSION = "switchboard.console.v1.ConsoleService/GetSession"
CONNECT_JSON = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}


def _ensure_provider() -> str | None:
    """None when tests/oidc's packages are installed (npm ci when the lock file changed), else why they cannot be."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        return "node and npm are not installed"
    stamp = HERE / "node_modules" / ".package-lock.json"
    if not stamp.exists() or stamp.stat().st_mtime < (HERE / "package-lock.json").stat().st_mtime:
        done = subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr  # the registry is reachable wherever the suite runs
    return None


@dataclass
class Provider:
    issuer: str
    proc: asyncio.subprocess.Process


async def _start_provider(console_url: str, public_console_url: str) -> Provider:
    env = {
        **os.environ,
        "CLIENT_ID": CLIENT_ID,
        "CLIENT_SECRET": CLIENT_SECRET,
        "REDIRECT_URI": f"{console_url}/console/auth/callback",
        "PUBLIC_REDIRECT_URI": f"{public_console_url}/console/auth/callback",
        "POST_LOGOUT_URI": f"{console_url}/console/",
        "RESOURCE": RESOURCE,
        "AUDIENCE": AUDIENCE,
    }
    proc = await asyncio.create_subprocess_exec(
        "node",
        str(HERE / "provider.mjs"),
        cwd=HERE,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,  # the provider's expected warnings (development interactions)
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 30)
    assert line, "the OpenID provider did not start"
    return Provider(json.loads(line)["issuer"], proc)


@dataclass
class Site:
    """The management server signed in through the provider, and its address as the browser knows it."""

    base_url: str
    provider: Provider
    public_port: int = 0  # where a console signing in as the provider's public client may run
    env: dict[str, str] = field(default_factory=dict)  # the server's, for a second replica of it


@pytest.fixture(scope="module")
def database() -> Database:
    """One SQLite database: the sign-in does not depend on the backend (the cookie session's calls are tested on
    both in test_console_session.py), and the flow runs once rather than once per backend."""
    url = f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='switchboard-oidc-db-')}/switchboard.db"
    upgrade(url)
    return Database("sqlite", url)


@pytest_asyncio.fixture(scope="module")
async def site(database: Database) -> AsyncIterator[Site]:
    reason = _ensure_provider()
    if reason is not None:
        pytest.skip(reason)
    port, public_port = free_port(), free_port()
    base_url = f"http://127.0.0.1:{port}"
    provider = await _start_provider(base_url, f"http://127.0.0.1:{public_port}")
    env = server_env(
        database,
        Path(tempfile.mkdtemp(prefix="switchboard-oidc-")),
        SWITCHBOARD_OIDC_ISSUER=provider.issuer,
        SWITCHBOARD_OIDC_CLIENT_ID=CLIENT_ID,
        SWITCHBOARD_OIDC_CLIENT_SECRET=CLIENT_SECRET,
        SWITCHBOARD_OIDC_RESOURCE=RESOURCE,
        SWITCHBOARD_CONSOLE_PUBLIC_URL=base_url,
        # The API checks the provider's access tokens like any session token.
        SWITCHBOARD_JWKS_URL=f"{provider.issuer}/jwks",
        SWITCHBOARD_JWT_ISSUER=provider.issuer,
        SWITCHBOARD_JWT_AUDIENCE=AUDIENCE,
    )
    server = await start_server(env, port=port)
    try:
        yield Site(base_url, provider, public_port, env)
    finally:
        await server.stop()
        provider.proc.terminate()
        await provider.proc.wait()


class _Forms(HTMLParser):
    """Each <form>'s action and its hidden inputs (the provider's forms are plain HTML)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, dict[str, str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.forms.append((found.get("action", ""), {}))
        elif tag == "input" and found.get("type") == "hidden" and self.forms:
            self.forms[-1][1][found.get("name", "")] = found.get("value", "")


def _form(html: str) -> tuple[str, dict[str, str]]:
    parser = _Forms()
    parser.feed(html)
    assert len(parser.forms) == 1, html[:500]
    return parser.forms[0]


@dataclass
class Browser:
    """A cookie-keeping HTTP client that follows redirects itself and records everything it is shown."""

    http: aiohttp.ClientSession
    seen_urls: list[str] = field(default_factory=list)
    seen_bodies: list[str] = field(default_factory=list)
    set_cookies: list[str] = field(default_factory=list)

    async def request(self, method: str, url: str, stop_at: str = "", **kwargs: Any) -> tuple[int, str, str]:
        """Follow redirects (as a browser: 302/303 become GET) until an answer that is not one, or one to our
        console's pages (which this test's server does not serve), or to the path `stop_at` (not requested).
        Returns (status, last URL, body)."""
        for _ in range(20):
            self.seen_urls.append(url)
            async with self.http.request(method, url, allow_redirects=False, **kwargs) as resp:
                body = await resp.text()
                self.seen_bodies.append(body)
                self.set_cookies.extend(resp.headers.getall("Set-Cookie", []))
                location = resp.headers.get("Location")
                if resp.status not in (301, 302, 303, 307) or location is None:
                    return resp.status, url, body
            url, method, kwargs = urljoin(url, location), "GET", {}
            path = urlsplit(url).path
            if path == stop_at or (path.startswith("/console") and not path.startswith("/console/auth/")):
                self.seen_urls.append(url)
                return 302, url, ""
        raise AssertionError("too many redirects")

    async def sign_in(self, site: Site, login: str, next_path: str = "/console/keys", stop_at: str = "") -> str:
        """The whole code flow, from the console's sign-in link to the page (or to `stop_at`); returns the URL."""
        status, url, body = await self.through_provider(site, login, next_path, stop_at)
        assert status == 302, (status, url, body[:300])
        return url

    async def through_provider(
        self, site: Site, login: str, next_path: str = "/console/keys", stop_at: str = ""
    ) -> tuple[int, str, str]:
        """The code flow as far as it goes: the console's last answer (or the redirect to `stop_at`)."""
        status, url, body = await self.request(
            "GET", f"{site.base_url}/console/auth/login?next={next_path}", stop_at=stop_at
        )
        if status == 200 and 'name="login"' in body:  # the provider asks who you are (no session there yet)
            action, fields = _form(body)
            status, url, body = await self.request(
                "POST", urljoin(url, action), stop_at=stop_at, data={**fields, "login": login, "password": "any"}
            )
        if status == 200 and 'value="consent"' in body:  # first sign-in of this account: grant the console
            action, fields = _form(body)
            status, url, body = await self.request("POST", urljoin(url, action), stop_at=stop_at, data=fields)
        return status, url, body

    def cookie(self, site: Site, name: str) -> str | None:
        found = self.http.cookie_jar.filter_cookies(URL(site.base_url + "/console/auth/"))
        morsel = found.get(name)
        return morsel.value if morsel is not None else None


@pytest_asyncio.fixture
async def browser() -> AsyncIterator[Browser]:
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        yield Browser(http)


async def _get_session(site: Site, token: str | None, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    headers = dict(CONNECT_JSON)
    if token is not None:
        headers["Cookie"] = f"sb_session={token}"
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.post(f"{site.base_url}/{GET_SESSION}", json=body or {}, headers=headers) as resp,
    ):
        return resp.status, await resp.json(content_type=None)


def _attributes(set_cookie: str) -> dict[str, str]:
    found = {}
    for part in set_cookie.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        found[name.lower()] = value
    return found


async def test_sign_in_through_the_provider_gives_a_cookie_session(site: Site, browser: Browser) -> None:
    page = await browser.sign_in(site, "olivia", "/console/keys?tab=mine")
    assert page == f"{site.base_url}/console/keys?tab=mine"  # back on the page the person started from
    token = browser.cookie(site, "sb_session")
    assert token is not None and token.count(".") == 2
    [session_line] = [c for c in browser.set_cookies if c.startswith("sb_session=") and "Max-Age=0" not in c]
    attributes = _attributes(session_line)
    assert "httponly" in attributes and attributes["samesite"] == "Strict" and attributes["path"] == "/"
    # The access token's remaining lifetime, from its own `exp` (600 s at this provider), which every call checks.
    expires = jwt.decode(token, options={"verify_signature": False})["exp"]
    assert abs(int(attributes["max-age"]) - (expires - time.time())) <= 5, (attributes, expires)
    # The token never reached anything the browser was shown: no URL, no page, no redirect.
    assert not [u for u in browser.seen_urls if token in u]
    assert not [b for b in browser.seen_bodies if token in b]
    # The cookie alone authenticates the console's API calls, as the provider's user with the provider's roles.
    status, answer = await _get_session(site, token)
    assert status == 200, answer
    assert answer["user"] == {
        "userId": "olivia",
        "email": "olivia@idp.example",
        "displayName": "Olivia (IdP)",
    }
    assert answer["canManageTenants"] is True
    assert token not in json.dumps(answer)


async def test_the_authorization_request_uses_pkce_and_a_fresh_state(site: Site, browser: Browser) -> None:
    await browser.request("GET", f"{site.base_url}/console/auth/login?next=/console/")
    authorize = next(u for u in browser.seen_urls if u.startswith(site.provider.issuer + "/auth?"))
    query = {k: v[0] for k, v in parse_qs(urlsplit(authorize).query).items()}
    assert query["code_challenge_method"] == "S256"
    assert len(query["code_challenge"]) == 43  # base64url of a SHA-256
    assert query["client_id"] == CLIENT_ID
    assert query["redirect_uri"] == f"{site.base_url}/console/auth/callback"
    assert query["resource"] == RESOURCE
    assert len(query["state"]) >= 43 and len(query["nonce"]) >= 43
    flow = [c for c in browser.set_cookies if c.startswith("sb_signin=")]
    assert flow
    attributes = _attributes(flow[0])
    assert "httponly" in attributes and attributes["samesite"] == "Lax" and attributes["path"] == "/console/auth/"
    # The sealed flow cookie reveals neither the state nor the verifier.
    assert query["state"] not in flow[0]


async def test_a_callback_with_another_state_is_refused(site: Site, browser: Browser) -> None:
    callback = urlsplit(await browser.sign_in(site, "victim", stop_at="/console/auth/callback"))
    query = {k: v[0] for k, v in parse_qs(callback.query).items()}
    assert "code" in query
    query["state"] = "forged-state"  # an answer to a sign-in this browser did not start (login CSRF)
    status, _, body = await browser.request("GET", f"{site.base_url}/console/auth/callback?{urlencode(query)}")
    assert status == 400
    assert "state mismatch" in body
    assert browser.cookie(site, "sb_session") is None


async def test_a_sign_in_the_person_cancels_at_the_provider_is_refused(site: Site, browser: Browser) -> None:
    _, url, body = await browser.request("GET", f"{site.base_url}/console/auth/login?next=/console/")
    abort = urljoin(url, urlsplit(url).path.rstrip("/") + "/abort")  # the provider's "Cancel" link
    assert abort in body or urlsplit(abort).path in body
    status, _, body = await browser.request("GET", abort)
    assert status == 400
    assert "the provider refused the sign-in (access_denied)" in body
    assert browser.cookie(site, "sb_session") is None


async def test_a_callback_without_the_flow_cookie_is_refused(site: Site) -> None:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(f"{site.base_url}/console/auth/callback?code=abc&state=def", allow_redirects=False) as resp,
    ):
        assert resp.status == 400
        assert not [c for c in resp.headers.getall("Set-Cookie", []) if c.startswith("sb_session=a")]


async def _callback_with_flow(base_url: str, callback: str, flow: str) -> tuple[int, str, list[str]]:
    """`callback`'s query sent to the server at `base_url` with flow cookie `flow`, as a copy of the cookie would be."""
    url = base_url + "/console/auth/callback?" + urlsplit(callback).query
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(url, headers={"Cookie": f"sb_signin={flow}"}, allow_redirects=False) as resp,
    ):
        return resp.status, await resp.text(), resp.headers.getall("Set-Cookie", [])


def _set(set_cookies: list[str], name: str) -> list[str]:
    """The values cookie `name` was set to (not cleared)."""
    values = [c.split(";")[0].removeprefix(name + "=") for c in set_cookies if c.startswith(name + "=")]
    return [v for v in values if v]


def _sessions_set(set_cookies: list[str]) -> list[str]:
    return _set(set_cookies, "sb_session")


def _flows_set(set_cookies: list[str]) -> list[str]:
    return _set(set_cookies, "sb_signin")


async def test_a_replayed_code_is_refused(site: Site, browser: Browser) -> None:
    await browser.sign_in(site, "rita")
    [flow] = _flows_set(browser.set_cookies)
    callback = next(u for u in browser.seen_urls if urlsplit(u).path == "/console/auth/callback")
    # The same callback again, with the flow cookie the browser held for it: that sign-in is over.
    status, body, set_cookies = await _callback_with_flow(site.base_url, callback, flow)
    assert status == 400 and "already finished" in body, body
    assert not _sessions_set(set_cookies)


async def test_a_flow_cookie_finishes_one_sign_in_only_on_any_replica(site: Site, browser: Browser) -> None:
    """The provider hands out a fresh code for the same state each time the browser revisits the authorization URL
    while its session there lasts, and that code redeems with the flow cookie's verifier: a copy of the flow cookie
    (login CSRF, session fixation) would sign in again and again for its 10 minutes. Once one callback took it, it is
    refused, on this replica and on another sharing the database and encryption key."""
    await browser.sign_in(site, "ursula")
    [flow] = _flows_set(browser.set_cookies)
    authorize = next(u for u in browser.seen_urls if u.startswith(site.provider.issuer + "/auth?"))
    replica = await start_server(site.env)
    try:
        for base_url in (site.base_url, f"http://127.0.0.1:{replica.listener_port}"):
            status, callback, _ = await browser.request("GET", authorize, stop_at="/console/auth/callback")
            fresh = {k: v[0] for k, v in parse_qs(urlsplit(callback).query).items()}
            assert status == 302 and fresh["code"], callback  # a new code, for the same state
            assert fresh["state"] == parse_qs(urlsplit(authorize).query)["state"][0]
            status, body, set_cookies = await _callback_with_flow(base_url, callback, flow)
            assert status == 400 and "already finished" in body, (base_url, status, body)
            assert not _sessions_set(set_cookies)
    finally:
        await replica.stop()


async def test_a_callback_while_the_database_is_busy_is_a_503(database: Database, site: Site, browser: Browser) -> None:
    """Spending the flow writes to the database: one that cannot take the write is a 503 saying so (as the API
    answers then), never a bare 500, and no session is set."""
    callback = await browser.sign_in(site, "bea", stop_at="/console/auth/callback")
    async with sqlite_busy(database.url):
        status, _, body = await browser.request("GET", callback)
    assert status == 503 and "Start again" in body, (status, body)
    assert not _sessions_set(browser.set_cookies)


async def test_a_token_too_big_for_a_cookie_fails_the_sign_in_saying_so(site: Site, browser: Browser) -> None:
    """A browser drops a cookie longer than 4096 bytes (RFC 6265 §6.1, name, value and attributes): a session cookie
    holding a provider's bulky access token (here 150 groups) was set, dropped, and the console sent the browser
    back to sign in, round and round. The sign-in ends instead with a page saying why, and no cookie is set."""
    status, _, body = await browser.through_provider(site, "bulky")
    assert status == 400, body[:300]
    assert "too large for a browser cookie" in body and "Start again" not in body, body
    assert not _sessions_set(browser.set_cookies)
    assert all(len(c) <= 4096 for c in browser.set_cookies)


async def test_a_next_too_long_for_the_flow_cookie_is_refused(site: Site) -> None:
    """`next` travels in the sealed flow cookie: one that makes it longer than a browser keeps would fail the
    callback with a missing cookie, so it is refused at the start, naming the field."""
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(
            f"{site.base_url}/console/auth/login", params={"next": "/console/" + "a" * 3000}, allow_redirects=False
        ) as resp,
    ):
        assert resp.status == 400
        assert "next" in await resp.text()
        assert "Location" not in resp.headers


@pytest.mark.parametrize("target", ["https://evil.example/console/", "//evil.example/console/", "/metrics"])
async def test_a_foreign_next_is_refused_before_the_provider_is_asked(site: Site, target: str) -> None:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(f"{site.base_url}/console/auth/login", params={"next": target}, allow_redirects=False) as resp,
    ):
        assert resp.status == 400
        assert "Location" not in resp.headers


async def test_an_expired_provider_token_is_unauthenticated(site: Site, browser: Browser) -> None:
    await browser.sign_in(site, "brief")  # the provider gives this account 2-second access tokens
    token = browser.cookie(site, "sb_session")
    assert token is not None
    [line] = [c for c in browser.set_cookies if c.startswith("sb_session=") and "Max-Age=0" not in c]
    assert int(_attributes(line)["max-age"]) <= 2  # the browser drops it when the server would refuse it
    await asyncio.sleep(3)  # past its expiry (a wait for the state to change, not a timing assertion)
    status, answer = await _get_session(site, token)  # a browser that kept it anyway
    assert (status, answer["code"]) == (401, "unauthenticated")


async def test_logout_clears_the_session_and_ends_the_provider_s_session(site: Site, browser: Browser) -> None:
    await browser.sign_in(site, "lena")
    token = browser.cookie(site, "sb_session")
    assert token is not None
    signed_in = len(browser.seen_urls)
    _, url, body = await browser.request(
        "POST", f"{site.base_url}/console/auth/logout", headers={"Origin": site.base_url}
    )
    assert browser.cookie(site, "sb_session") is None  # cleared by the console's answer
    assert url.startswith(site.provider.issuer)  # sent on to the provider's end_session_endpoint
    logout_request = browser.seen_urls[signed_in + 1]
    query = {k: v[0] for k, v in parse_qs(urlsplit(logout_request).query).items()}
    assert query == {"client_id": CLIENT_ID, "post_logout_redirect_uri": f"{site.base_url}/console/"}
    action, fields = _form(body)  # the provider asks to confirm
    _, url, _ = await browser.request("POST", urljoin(url, action), data={**fields, "logout": "yes"})
    assert url == f"{site.base_url}/console/"
    # Signing in again asks the provider's login form anew: its session ended too.
    _, _, body = await browser.request("GET", f"{site.base_url}/console/auth/login?next=/console/")
    assert 'name="login"' in body


async def test_the_provider_is_reached_only_through_the_egress_guard(
    database: Database, site: Site, browser: Browser
) -> None:
    """The same configuration on a server that may not reach loopback: discovery and the JWKS are refused by the
    guard, so neither a sign-in nor the provider's tokens get through."""
    await browser.sign_in(site, "gina")
    token = browser.cookie(site, "sb_session")
    assert token is not None
    env = server_env(
        database,
        Path(tempfile.mkdtemp(prefix="switchboard-oidc-guarded-")),
        SWITCHBOARD_EGRESS_ALLOW_LOOPBACK="false",
        SWITCHBOARD_OIDC_ISSUER=site.provider.issuer,
        SWITCHBOARD_OIDC_CLIENT_ID=CLIENT_ID,
        SWITCHBOARD_JWKS_URL=f"{site.provider.issuer}/jwks",
        SWITCHBOARD_JWT_ISSUER=site.provider.issuer,
        SWITCHBOARD_JWT_AUDIENCE=AUDIENCE,
    )
    server = await start_server(env)
    guarded = Site(f"http://127.0.0.1:{server.listener_port}", site.provider)
    try:
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"{guarded.base_url}/console/auth/login?next=/console/", allow_redirects=False) as resp,
        ):
            assert resp.status == 502
            assert "egress guard refused" in await resp.text()
        status, answer = await _get_session(guarded, token)
        assert (status, answer["code"]) == (401, "unauthenticated")
        assert (await _get_session(site, token))[0] == 200  # the same token, where the provider may be reached
    finally:
        await server.stop()


async def test_a_public_client_signs_in_with_pkce_alone(database: Database, site: Site, browser: Browser) -> None:
    """No client secret configured: the console is a public client and sends its client_id with the verifier."""
    public = Site(f"http://127.0.0.1:{site.public_port}", site.provider)
    env = server_env(
        database,
        Path(tempfile.mkdtemp(prefix="switchboard-oidc-public-")),
        SWITCHBOARD_OIDC_ISSUER=site.provider.issuer,
        SWITCHBOARD_OIDC_CLIENT_ID=f"{CLIENT_ID}-public",
        SWITCHBOARD_OIDC_RESOURCE=RESOURCE,
        SWITCHBOARD_CONSOLE_PUBLIC_URL=public.base_url,
        SWITCHBOARD_JWKS_URL=f"{site.provider.issuer}/jwks",
        SWITCHBOARD_JWT_ISSUER=site.provider.issuer,
        SWITCHBOARD_JWT_AUDIENCE=AUDIENCE,
    )
    server = await start_server(env, port=site.public_port)
    try:
        page = await browser.sign_in(public, "paul", "/console/groups")
        assert page == f"{public.base_url}/console/groups"
        token = browser.cookie(public, "sb_session")
        assert token is not None
        status, answer = await _get_session(public, token)
        assert status == 200 and answer["user"]["userId"] == "paul"
    finally:
        await server.stop()
