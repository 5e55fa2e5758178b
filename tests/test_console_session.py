"""The console's cookie session on a real server: development sign-in, the cookie as the API's credential, the rule
against cross-site posts, sign-out, and GetSession answering what the server actually permits.

Sign-out at its edges, each once a bug: a signed-out token stays refused whichever spelling of its signature a copy
uses, and a sign-out the database is too busy for is a retryable 503, not a 500."""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest
import pytest_asyncio
from sqlalchemy import select

from server.auth import credential
from server.console.session import cookie
from server.errors import PermissionDenied
from server.session_revocations import SessionRevocations
from server.settings import Settings, load_settings
from server.store.db import Database as StoreDatabase
from server.store.models import RevokedSessionRow
from server.tokens import PLATFORM_ROLES, TOKEN_REFUSAL, mint_token
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, server_env, start_server
from tests.sqlite_busy import sqlite_busy

GET_SESSION = "switchboard.console.v1.ConsoleService/GetSession"
WHO_AM_I = "platform.tenants.v1.UserService/GetCurrentUser"
CONNECT_JSON = {"Content-Type": "application/json", "Connect-Protocol-Version": "1"}


@dataclass
class Console:
    base_url: str
    settings: Settings

    def token(self, user: str, *, roles: tuple[str, ...] = (), ttl: int = 3600) -> str:
        return mint_token(
            self.settings, user_id=user, email=f"{user}@example.com", name=user.title(), roles=roles, ttl_seconds=ttl
        )


@pytest_asyncio.fixture(scope="module")
async def console(database: Database) -> AsyncIterator[Console]:
    """A server as `serve --demo` starts it: the development sign-in is on."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-console-"))
    env = server_env(database, var_dir, SWITCHBOARD_CONSOLE_DEV_SIGN_IN="true")
    proc = await start_server(env)
    settings = load_settings({k: v for k, v in env.items() if k.startswith("SWITCHBOARD_")})
    try:
        yield Console(f"http://127.0.0.1:{proc.listener_port}", settings)
    finally:
        await proc.stop()


async def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], list[str], str]:
    """Status, headers, Set-Cookie lines and body of one GET, redirects not followed (a browser's view)."""
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(url, headers=headers or {}, allow_redirects=False) as resp,
    ):
        return resp.status, dict(resp.headers), resp.headers.getall("Set-Cookie", []), await resp.text()


async def _post(
    url: str, *, headers: dict[str, str], data: bytes = b"{}"
) -> tuple[int, dict[str, str], list[str], str]:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.post(url, headers=headers, data=data, allow_redirects=False) as resp,
    ):
        return resp.status, dict(resp.headers), resp.headers.getall("Set-Cookie", []), await resp.text()


def _session_cookie(lines: list[str]) -> tuple[str, dict[str, str]]:
    """The sb_session value and its attributes (lower-cased names; flags map to "")."""
    for line in lines:
        if line.startswith("sb_session="):
            value, *attributes = (part.strip() for part in line.split(";"))
            found = {}
            for attribute in attributes:
                name, _, setting = attribute.partition("=")
                found[name.lower()] = setting
            return value.removeprefix("sb_session="), found
    raise AssertionError(f"no sb_session cookie in {lines}")


async def _dev_session(console: Console) -> str:
    status, headers, cookies, _ = await _get(f"{console.base_url}/console/auth/dev?next=/console/")
    assert status == 302, headers
    return _session_cookie(cookies)[0]


async def _call(base_url: str, method: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, Any]:
    status, _, _, text = await _post(f"{base_url}/{method}", headers=headers, data=json.dumps(body).encode())
    return status, json.loads(text) if text else {}


async def test_dev_sign_in_sets_an_http_only_strict_cookie_and_returns_to_the_page(console: Console) -> None:
    status, headers, cookies, body = await _get(f"{console.base_url}/console/auth/dev?next=/console/keys?page=2")
    assert status == 302
    assert headers["Location"] == "/console/keys?page=2"
    token, attributes = _session_cookie(cookies)
    assert token.count(".") == 2  # a JWT, held by the browser only as an HttpOnly cookie
    assert "httponly" in attributes
    assert attributes["samesite"] == "Strict"
    assert attributes["path"] == "/"
    assert "secure" not in attributes  # http://127.0.0.1: a Secure cookie would never be sent back
    assert 0 < int(attributes["max-age"]) <= 12 * 3600
    assert token not in body and token not in headers["Location"]
    assert headers["Cache-Control"] == "no-store"


async def test_the_cookie_alone_authenticates_the_console_s_calls(console: Console) -> None:
    token = await _dev_session(console)
    status, answer = await _call(console.base_url, GET_SESSION, {}, {**CONNECT_JSON, "Cookie": f"sb_session={token}"})
    assert status == 200, answer
    assert answer["user"]["userId"] == console.settings.bootstrap_admin
    assert answer["canManageTenants"] is True and answer["canManageModels"] is True
    assert token not in json.dumps(answer)


async def test_a_read_the_cookie_authenticates_is_never_stored_by_a_cache(console: Console) -> None:
    """The console's reads are Connect GETs whose URL is the same for everyone (GetSession's `message={}`), and a
    cookie, unlike an Authorization header, does not keep a shared cache from storing the answer for the next
    person who asks."""
    token = await _dev_session(console)
    url = f"{console.base_url}/{GET_SESSION}?encoding=json&message=%7B%7D"
    status, headers, _, body = await _get(url, {"Cookie": f"sb_session={token}"})
    assert status == 200 and console.settings.bootstrap_admin in body
    assert headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/console/",
        "//evil.example/console/",
        "/\\evil.example/console/",
        "/console/../metrics",
        "/console/%2e%2e/metrics",
        "/consoles",
        "/platform.tenants.v1.TenantService/ListTenants",
        "javascript:alert(1)",
        # A malformed bracketed host made urlsplit raise: a 500 instead of the refusal (found by probing).
        "//[zz]/console/",
        "http://[::1/console/",
    ],
)
async def test_a_foreign_next_is_refused(console: Console, target: str) -> None:
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as http,
        http.get(f"{console.base_url}/console/auth/dev", params={"next": target}, allow_redirects=False) as resp,
    ):
        status, cookies = resp.status, resp.headers.getall("Set-Cookie", [])
    assert status == 400
    assert not cookies


async def test_dev_sign_in_answers_only_under_a_host_dns_rebinding_cannot_give(console: Console) -> None:
    """A page of http://rebind.attacker.example:<port>/ whose name the attacker's DNS then points at 127.0.0.1 is
    same-origin with this server: had the development sign-in answered it, the page would hold a platform admin's
    cookie for its own origin and could call every method with it."""
    port = urlsplit(console.base_url).port
    url = f"{console.base_url}/console/auth/dev?next=/console/"
    for host in (f"rebind.attacker.example:{port}", f"127.0.0.1.nip.io:{port}", f"localhost.attacker.example:{port}"):
        status, _, cookies, _ = await _get(url, {"Host": host})
        assert (status, cookies) == (403, []), host
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}"):
        status, _, cookies, _ = await _get(url, {"Host": host})
        assert status == 302 and _session_cookie(cookies)[0], host


async def test_dev_sign_in_under_a_malformed_host_is_refused(console: Console) -> None:
    """`Host: [zz]` (a malformed bracketed host) made the rebinding check's urlsplit raise: 500 instead of the
    documented 403 for a Host that is not localhost, an IP address or the public URL's host (found by probing)."""
    status, _, cookies, body = await _get(f"{console.base_url}/console/auth/dev?next=/console/", {"Host": "[zz]"})
    assert (status, cookies) == (403, []), body


async def test_dev_sign_in_is_absent_unless_serve_demo_turned_it_on(server: Server) -> None:
    status, _, cookies, body = await _get(f"{server.base_url}/console/auth/dev?next=/console/")
    assert status == 404
    assert not cookies
    assert "serve --demo" in body


async def test_a_cookie_only_post_without_a_non_simple_header_is_refused(console: Console) -> None:
    token = await _dev_session(console)
    cookie = {"Cookie": f"sb_session={token}"}
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        status, answer = await _call(console.base_url, WHO_AM_I, {}, {**cookie, "Content-Type": content_type})
        assert status in (403, 415), content_type  # what a cross-site form can send gets no answer
        assert "user" not in answer
    # What the console's Connect client sends passes: a JSON (or protobuf) content type.
    status, _ = await _call(console.base_url, WHO_AM_I, {}, {**cookie, "Content-Type": "application/json"})
    assert status == 200


@pytest.mark.parametrize(
    ("headers", "method", "accepted"),
    [
        ({"content-type": "text/plain"}, "POST", False),
        ({"content-type": "Application/X-WWW-Form-Urlencoded; charset=utf-8"}, "POST", False),
        ({"content-type": "multipart/form-data; boundary=x"}, "POST", False),
        ({}, "POST", False),
        ({"content-type": "text/plain", "connect-protocol-version": "1"}, "POST", True),
        ({"content-type": "application/json"}, "POST", True),
        ({"content-type": "application/grpc-web+proto"}, "POST", True),
        ({}, "GET", True),  # Connect GET: side-effect-free methods only
    ],
)
def test_the_cookie_needs_a_header_no_cross_site_form_can_send(
    headers: dict[str, str], method: str, accepted: bool
) -> None:
    """The rule itself (server.auth.credential): connectrpc already refuses form content types with 415, so over
    HTTP the rule is the second line; here it is checked on its own."""
    request = {"cookie": "sb_session=a.b.c", **headers}
    if accepted:
        assert credential(request, method) == "a.b.c"
    else:
        with pytest.raises(PermissionDenied):
            credential(request, method)
    # With an Authorization header the cookie plays no part, whatever the content type.
    assert credential({**request, "authorization": "Bearer x.y.z"}, method) == "x.y.z"


async def test_an_authorization_header_wins_over_the_cookie(console: Console) -> None:
    admin = await _dev_session(console)
    cookie = {**CONNECT_JSON, "Cookie": f"sb_session={admin}"}
    status, answer = await _call(console.base_url, WHO_AM_I, {}, {**cookie, "Authorization": "Bearer not-a-token"})
    assert (status, answer["code"]) == (401, "unauthenticated")
    member = console.token("cookie-loser")
    status, answer = await _call(console.base_url, WHO_AM_I, {}, {**cookie, "Authorization": f"Bearer {member}"})
    assert status == 200
    assert answer["user"]["userId"] == "cookie-loser"
    assert "canManageTenants" not in answer  # the admin's cookie lent it nothing


async def test_an_expired_or_foreign_cookie_is_unauthenticated(console: Console) -> None:
    expired = console.token("late", roles=PLATFORM_ROLES, ttl=-5)
    for token in (expired, "sb_" + "k" * 40, "not.a.jwt"):
        status, answer = await _call(console.base_url, WHO_AM_I, {}, {**CONNECT_JSON, "Cookie": f"sb_session={token}"})
        assert (status, answer["code"]) == (401, "unauthenticated"), token[:8]
    status, answer = await _call(console.base_url, WHO_AM_I, {}, CONNECT_JSON)
    assert (status, answer["code"]) == (401, "unauthenticated")


async def test_logout_clears_the_cookie_for_the_console_s_own_pages_only(console: Console) -> None:
    url = f"{console.base_url}/console/auth/logout"
    status, _, cookies, _ = await _post(url, headers={"Sec-Fetch-Site": "cross-site"})
    assert status == 403 and not cookies
    status, _, cookies, _ = await _post(url, headers={"Origin": "https://evil.example"})
    assert status == 403 and not cookies
    for same in ({"Sec-Fetch-Site": "same-origin"}, {"Origin": console.base_url}):
        status, headers, cookies, _ = await _post(url, headers=same)
        assert status == 303
        assert headers["Location"] == "/console/"  # no OpenID provider here: back to the console
        value, attributes = _session_cookie(cookies)
        assert value == "" and attributes["max-age"] == "0"
    status, _, _, _ = await _get(url)
    assert status == 405


async def test_sign_out_with_a_malformed_origin_is_refused(console: Console) -> None:
    """`Origin: http://[zz]` made the same-origin check's urlsplit raise: 500 instead of the 403 any Origin other
    than the console's own gets (found by probing)."""
    status, _, cookies, body = await _post(f"{console.base_url}/console/auth/logout", headers={"Origin": "http://[zz]"})
    assert (status, cookies) == (403, []), body


async def test_sign_out_revokes_the_session_token_wherever_a_copy_of_it_is_sent(
    console: Console, database: Database
) -> None:
    """Sign-out does more than clear the browser's cookie: the token itself is refused from then on, as the cookie
    and as a bearer token alike (a copy taken from the browser is a bearer credential until its `exp`). Other
    sessions of the same person, and a sign-out carrying a token this server never issued, change nothing else."""
    signed_out, other = console.token("leaving", roles=PLATFORM_ROLES), console.token("leaving", ttl=7200)
    as_cookie = {**CONNECT_JSON, "Cookie": f"sb_session={signed_out}"}
    as_bearer = {**CONNECT_JSON, "Authorization": f"Bearer {signed_out}"}
    for headers in (as_cookie, as_bearer):  # both accepted, and so cached by the server, before sign-out
        status, answer = await _call(console.base_url, WHO_AM_I, {}, headers)
        assert status == 200 and answer["user"]["userId"] == "leaving", answer
    url = f"{console.base_url}/console/auth/logout"
    status, _, cookies, _ = await _post(url, headers={"Sec-Fetch-Site": "same-origin", "Cookie": as_cookie["Cookie"]})
    assert status == 303 and _session_cookie(cookies)[0] == ""
    for headers in (as_cookie, as_bearer):
        status, answer = await _call(console.base_url, WHO_AM_I, {}, headers)
        assert (status, answer["code"], answer["message"]) == (401, "unauthenticated", TOKEN_REFUSAL)
    status, answer = await _call(console.base_url, WHO_AM_I, {}, {**CONNECT_JSON, "Authorization": f"Bearer {other}"})
    assert status == 200, answer
    # Signing out again, or with a token this server would refuse anyway, is answered the same and records nothing.
    refused = ("not.a.jwt", console.token("late", ttl=-5))
    for token in (signed_out, *refused):
        status, _, _, _ = await _post(url, headers={"Sec-Fetch-Site": "same-origin", "Cookie": f"sb_session={token}"})
        assert status == 303
    store = StoreDatabase(database.url)
    try:
        async with store.read() as session:
            recorded = set(await session.scalars(select(RevokedSessionRow.token_hash)))
    finally:
        await store.close()
    assert _signed_part_digest(signed_out) in recorded
    assert not {_signed_part_digest(token) for token in refused} & recorded


def _signed_part_digest(token: str) -> bytes:
    """How `revoked_sessions` records a token: the SHA-256 of its signed part, `header.payload`."""
    return hashlib.sha256(token.rpartition(".")[0].encode()).digest()


async def test_a_signed_out_token_is_refused_however_its_signature_is_spelt(console: Console) -> None:
    """A copy of the token with its signature segment spelt otherwise is a token string of its own that verifies
    just the same: here padded with `==` (an RS256 signature takes 342 base64url characters, and PyJWT accepts the
    padding), for ECDSA also (r, n - s). The revocation was recorded by the whole string's SHA-256, so a padded copy
    of a signed-out token stayed good until its `exp`; it is recorded by the signed part, which has one spelling."""
    token = console.token("respelt", roles=PLATFORM_ROLES)
    assert len(token.rpartition(".")[2]) % 4 == 2
    padded = token + "=="
    status, answer = await _call(console.base_url, WHO_AM_I, {}, {**CONNECT_JSON, "Authorization": f"Bearer {padded}"})
    assert status == 200 and answer["user"]["userId"] == "respelt", answer  # a valid token in its own right
    url = f"{console.base_url}/console/auth/logout"
    status, _, _, _ = await _post(url, headers={"Sec-Fetch-Site": "same-origin", "Cookie": f"sb_session={token}"})
    assert status == 303
    for spelling in (token, padded):
        as_cookie = {**CONNECT_JSON, "Cookie": f"sb_session={spelling}"}
        as_bearer = {**CONNECT_JSON, "Authorization": f"Bearer {spelling}"}
        for headers in (as_cookie, as_bearer):
            status, answer = await _call(console.base_url, WHO_AM_I, {}, headers)
            assert (status, answer["message"]) == (401, TOKEN_REFUSAL), headers


async def test_a_sign_in_flow_is_spent_once_across_replicas(database: Database) -> None:
    """The console's OpenID sign-in flow (server.console.oidc) is spent in the database every replica shares: of two
    replicas spending the same state at once exactly one succeeds, and neither can again (the insert's row count,
    on each backend, tells who created the row). tests/test_console_oidc.py replays whole callbacks."""
    replicas = [StoreDatabase(database.url), StoreDatabase(database.url)]
    try:
        first, second = (SessionRevocations(db, 5.0) for db in replicas)
        state, until = secrets.token_urlsafe(32), time.time() + 600
        assert sorted(await asyncio.gather(first.spend(state, until), second.spend(state, until))) == [False, True]
        assert (await first.spend(state, until), await second.spend(state, until)) == (False, False)
        assert await second.spend(secrets.token_urlsafe(32), until)  # another flow
    finally:
        for db in replicas:
            await db.close()


async def test_sign_out_while_the_database_is_busy_is_a_retryable_503(console: Console, database: Database) -> None:
    """A database that cannot serve a request is a 503 the client may retry, never a 500 (server.errors.unavailable;
    tests/test_db_unavailable.py), and the API's methods answer so under the same lock. Sign-out let the database's
    refusal escape: a bare 500, and the cookie kept with no word of retrying. It is a 503 saying to retry; the cookie
    is kept, as the token in it is what the retry revokes, and the retry signs out."""
    if database.backend != "sqlite":
        pytest.skip("an exclusive lock on the SQLite file makes the database busy on demand")
    token = console.token("busy", roles=PLATFORM_ROLES)
    sign_out = {"Sec-Fetch-Site": "same-origin", "Cookie": f"sb_session={token}"}
    url = f"{console.base_url}/console/auth/logout"
    async with sqlite_busy(database.url):
        (status, _, cookies, body), (api, _) = await asyncio.gather(
            _post(url, headers=sign_out),
            _call(
                console.base_url,
                "platform.tenants.v1.TenantService/CreateTenant",
                {"name": "busy"},
                {**CONNECT_JSON, "Authorization": f"Bearer {token}"},
            ),
        )
    assert api == 503
    assert status == 503 and "retry" in body and not cookies, (status, body, cookies)
    status, _, cookies, _ = await _post(url, headers=sign_out)
    assert status == 303 and _session_cookie(cookies)[0] == ""
    status, _ = await _call(console.base_url, WHO_AM_I, {}, {**CONNECT_JSON, "Authorization": f"Bearer {token}"})
    assert status == 401


async def test_api_keys_cannot_describe_a_console_session(console: Console) -> None:
    caller = ConnectJsonCaller(console.base_url)
    admin = console.token("key-owner", roles=PLATFORM_ROLES)
    tenant = await caller.call("platform.tenants.v1.TenantService/CreateTenant", {"name": "keyed"}, token=admin)
    assert tenant.ok, tenant.body
    tenant_id = tenant.body["tenant"]["id"]
    added = await caller.call(
        "platform.tenants.v1.TenantService/AddTenantMember",
        {"tenantId": tenant_id, "userId": "key-owner", "role": "TENANT_ROLE_ADMIN"},
        token=admin,
    )
    assert added.ok, added.body
    key = await caller.call(
        "platform.tenants.v1.ApiKeyService/CreateApiKey",
        {"tenantId": tenant_id, "type": "API_KEY_TYPE_PERSONAL_ALL_RESOURCES", "name": "k"},
        token=admin,
    )
    assert key.ok, key.body
    refused = await caller.call(GET_SESSION, {}, token=key.body["secret"])
    assert refused.code == "permission_denied"


# --- GetSession answers what the server then permits ---------------------------------------------------------------

# One probe per flag: a call the flag's rule gates; "permission_denied" means the caller may not.
_PROBES: dict[str, tuple[str, dict[str, Any]]] = {
    "tenantAdmin": ("platform.tenants.v1.ServiceAccountService/ListServiceAccounts", {}),
    "listMembers": ("platform.tenants.v1.TenantService/ListTenantMembers", {}),
    "createRag": (
        "platform.ragmanager.v1.RagService/CreateRag",
        {"rag": {"name": "probe", "embeddingModel": "no/such-model"}},
    ),
    "createAgent": (
        "platform.agents.v1.PresetAgentService/CreatePresetAgent",
        {"presetAgent": {"name": "probe", "publicModelId": "probe/agent", "baseModel": "no/such-model"}},
    ),
    "createMcpServer": (
        "platform.agents.v1.ExternalMcpServerService/CreateExternalMcpServer",
        {"externalMcpServer": {"name": "probe", "serverUrl": "http://127.0.0.1:9/mcp", "auth": {"type": 1}}},
    ),
    "capture": ("switchboard.capture.v1.CaptureService/ListCapturePolicies", {}),
}
CAPTURE = "switchboard.capture.v1.CaptureService"


@pytest_asyncio.fixture(scope="module")
async def tenant_people(console: Console) -> tuple[str, dict[str, str]]:
    """A tenant with an admin, an editor and a member; an operator (platform roles) who belongs to none."""
    caller = ConnectJsonCaller(console.base_url)
    operator = console.token("operator", roles=PLATFORM_ROLES)
    created = await caller.call("platform.tenants.v1.TenantService/CreateTenant", {"name": "people"}, token=operator)
    assert created.ok, created.body
    tenant_id = str(created.body["tenant"]["id"])
    for user, role in (("t-admin", "ADMIN"), ("t-editor", "EDITOR"), ("t-member", "MEMBER")):
        added = await caller.call(
            "platform.tenants.v1.TenantService/AddTenantMember",
            {"tenantId": tenant_id, "userId": user, "role": f"TENANT_ROLE_{role}"},
            token=operator,
        )
        assert added.ok, added.body
    tokens = {
        "operator": operator,
        "admin": console.token("t-admin"),
        "editor": console.token("t-editor"),
        "member": console.token("t-member"),
    }
    return tenant_id, tokens


@pytest.mark.parametrize(
    ("who", "role", "expected"),
    [
        ("operator", None, dict.fromkeys(_PROBES, True)),
        # Capture is held by operators, and by a tenant admin only once an operator granted it (below).
        ("admin", "TENANT_ROLE_ADMIN", {**dict.fromkeys(_PROBES, True), "capture": False}),
        ("editor", "TENANT_ROLE_EDITOR", {**dict.fromkeys(_PROBES, True), "tenantAdmin": False, "capture": False}),
        ("member", "TENANT_ROLE_MEMBER", dict.fromkeys(_PROBES, False)),
    ],
)
async def test_get_session_matches_what_the_server_permits(
    console: Console, tenant_people: tuple[str, dict[str, str]], who: str, role: str | None, expected: dict[str, bool]
) -> None:
    tenant_id, tokens = tenant_people
    cookie = {**CONNECT_JSON, "Cookie": f"sb_session={tokens[who]}"}
    status, answer = await _call(console.base_url, GET_SESSION, {"tenantId": tenant_id}, cookie)
    assert status == 200, answer
    [access] = [t for t in answer.get("tenants", []) if t["tenantId"] == tenant_id]
    assert access["tenantName"] == "people"
    assert access.get("role") == role  # the operator is no member: role unset
    capabilities = access.get("capabilities", {})
    assert answer.get("canManageTenants", False) is (who == "operator")
    held = {flag: capabilities.get(flag, False) for flag in expected}
    assert held == expected
    # Editors and admins hold every tenant capability; members none (server.permissions.tenancy).
    for flag in ("createExternalModel", "share"):
        assert capabilities.get(flag, False) is expected["createRag"], flag
    # And the server agrees, call by call, with the caller's own (cookie) session.
    for flag, (method, body) in _PROBES.items():
        status, refused = await _call(console.base_url, method, {"tenantId": tenant_id, **body}, cookie)
        denied = status == 403 and refused.get("code") == "permission_denied"
        assert denied is not expected[flag], (flag, status, refused)


async def test_a_tenant_admin_holds_capture_while_granted(
    console: Console, tenant_people: tuple[str, dict[str, str]]
) -> None:
    tenant_id, tokens = tenant_people
    caller = ConnectJsonCaller(console.base_url)
    cookie = {**CONNECT_JSON, "Cookie": f"sb_session={tokens['admin']}"}
    grant = {"tenantId": tenant_id, "userId": "t-admin"}

    async def held() -> tuple[bool, int]:
        status, answer = await _call(console.base_url, GET_SESSION, {}, cookie)
        assert status == 200, answer
        [access] = [t for t in answer["tenants"] if t["tenantId"] == tenant_id]
        probe, _ = await _call(console.base_url, f"{CAPTURE}/ListCapturePolicies", {"tenantId": tenant_id}, cookie)
        return bool(access["capabilities"].get("capture", False)), probe

    granted = await caller.call(f"{CAPTURE}/GrantCaptureAccess", grant, token=tokens["operator"])
    assert granted.ok, granted.body
    try:
        assert await held() == (True, 200)
    finally:
        revoked = await caller.call(f"{CAPTURE}/RevokeCaptureAccess", grant, token=tokens["operator"])
        assert revoked.ok, revoked.body
    assert await held() == (False, 403)


async def test_get_session_refuses_a_tenant_the_caller_is_not_in(
    console: Console, tenant_people: tuple[str, dict[str, str]]
) -> None:
    tenant_id, _ = tenant_people
    cookie = {**CONNECT_JSON, "Cookie": f"sb_session={console.token('outsider')}"}
    status, answer = await _call(console.base_url, GET_SESSION, {"tenantId": tenant_id}, cookie)
    assert (status, answer["code"]) == (403, "permission_denied")
    status, answer = await _call(console.base_url, GET_SESSION, {}, cookie)
    assert status == 200
    assert answer.get("tenants", []) == []
    assert answer["user"] == {"userId": "outsider", "email": "outsider@example.com", "displayName": "Outsider"}


def test_cookie_parsing_takes_the_first_value() -> None:
    """Browsers send the most specific path's cookie first; quotes around a value are not part of it."""
    assert cookie('other=1; sb_session="a.b.c"; sb_session=later', "sb_session") == "a.b.c"
    assert cookie("x=1; sb_sessionx=2", "sb_session") is None


async def _asgi(app: Any, method: str, path: str, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[str, str]]:
    """One request straight to the ASGI app (the routes' own code, without a server around them)."""
    path, _, query = path.partition("?")
    scope = {"type": "http", "method": method, "path": path, "query_string": query.encode(), "headers": headers}
    answer: dict[str, Any] = {}

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            answer["status"] = message["status"]
            answer["headers"] = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            answer["body"] = message["body"]

    await app(scope, receive, send)
    return answer["status"], {**answer["headers"], "body": answer["body"].decode()}


async def test_cookies_are_secure_behind_an_https_public_url(tmp_path: Path) -> None:
    from server.console.session import ConsoleAuth, sign_in_options
    from server.tokens import TokenVerifier

    settings = Settings(var_dir=tmp_path, console_public_url="https://console.example", console_dev_sign_in=True)
    db = StoreDatabase(f"sqlite+aiosqlite:///{tmp_path}/switchboard.db")  # never read: no cookie is signed out
    app = ConsoleAuth(settings, TokenVerifier(settings), None, SessionRevocations(db, 5.0))
    status, headers = await _asgi(app, "GET", "/console/auth/dev?next=/console/", [(b"host", b"console.example")])
    assert status == 302
    assert "; Secure" in headers["set-cookie"] and "SameSite=Strict" in headers["set-cookie"]
    # A fetch() from the console's page gets where to go next as JSON (its CSP keeps form redirects home).
    status, headers = await _asgi(
        app, "POST", "/console/auth/logout", [(b"sec-fetch-site", b"same-origin"), (b"accept", b"application/json")]
    )
    assert status == 200
    assert json.loads(headers["body"]) == {"location": "/console/"}
    assert headers["set-cookie"].startswith("__Host-sb_session=; Max-Age=0;") and "; Secure" in headers["set-cookie"]
    assert sign_in_options(settings) == {"devSignIn": True, "oidc": False}
    # On an identity provider's JWKS the embedded key's tokens would be refused: no development sign-in then.
    with_idp = Settings(var_dir=tmp_path, console_dev_sign_in=True, jwks_url="https://idp.example/jwks")
    assert sign_in_options(with_idp) == {"devSignIn": False, "oidc": False}
    await db.close()


async def test_behind_https_the_session_cookie_is_host_only_and_no_other_name_signs_in(database: Database) -> None:
    """On an https console the cookie is `__Host-sb_session`, which a browser keeps only as set by this origin over
    https: a cookie a sibling subdomain or a plain-http page of the host planted (`sb_session`, with its own holder's
    token) signs no one in, so no page can sign a person in as someone else."""
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-console-https-"))
    env = server_env(
        database,
        var_dir,
        SWITCHBOARD_CONSOLE_DEV_SIGN_IN="true",
        SWITCHBOARD_CONSOLE_PUBLIC_URL="https://console.example",
    )
    proc = await start_server(env)
    try:
        base = f"http://127.0.0.1:{proc.listener_port}"
        status, _, cookies, _ = await _get(f"{base}/console/auth/dev?next=/console/", {"Host": "console.example"})
        assert status == 302 and len(cookies) == 1 and cookies[0].startswith("__Host-sb_session="), cookies
        assert "; Secure" in cookies[0] and "; Path=/;" in cookies[0] and "Domain" not in cookies[0]
        token = cookies[0].split(";", 1)[0].split("=", 1)[1]
        url = f"{base}/{GET_SESSION}?encoding=json&message=%7B%7D"
        assert (await _get(url, {"Cookie": f"__Host-sb_session={token}"}))[0] == 200
        assert (await _get(url, {"Cookie": f"sb_session={token}"}))[0] == 401
    finally:
        await proc.stop()


async def test_serve_demo_turns_the_development_sign_in_on_for_its_management_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`switchboard serve --demo` (make run) starts its management server with the development sign-in; without
    --demo the same start has none."""
    from server.cli import _start_children
    from server.store.migrate import upgrade
    from tests.serving import free_port

    url = f"sqlite+aiosqlite:///{tmp_path}/switchboard.db"
    upgrade(url)
    for name, value in {"DATABASE_URL": url, "VAR_DIR": str(tmp_path), "LOG_LEVEL": "WARNING"}.items():
        monkeypatch.setenv(f"SWITCHBOARD_{name}", value)
    monkeypatch.delenv("SWITCHBOARD_CONSOLE_DEV_SIGN_IN", raising=False)
    for demo, expected in ((True, 302), (False, 404)):
        monkeypatch.setenv("SWITCHBOARD_PORT", str(free_port()))
        management, _ = await _start_children(load_settings(), "management", demo=demo)
        assert management is not None
        try:
            status, _, _, _ = await _get(f"http://127.0.0.1:{management.port}/console/auth/dev?next=/console/")
            assert status == expected, demo
        finally:
            await management.stop()
