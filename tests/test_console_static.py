"""The web console's files on the real management server (server.console.static): the single-page app's shell for
every page path, hashed assets cached for good, config.json, the security headers on every answer, and a clear 404
when the console is not built. The build here is a small one written by the test, so these checks do not need node;
tests/console/ runs the real build in a browser.

Conditional requests and content codings as RFC 9110 has them, each once a bug: If-None-Match compared weakly and
read as a list, an ETag of its own for each of a file's two forms (gzip and identity), and `gzip;q=0` refusing gzip.
A path that is not UTF-8 once percent-decoded is a 400, where it got no answer at all.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import signal
import tempfile
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import aiohttp
import pytest
import pytest_asyncio

from server.console.static import console_origin, content_security_policy
from server.cors import gateway_origins
from server.settings import load_settings
from tests.conftest import Database, server_env, start_server
from tests.gateway_fixtures import Fakes, gateway_env, start_gateway_process
from tests.rawhttp import raw_request

INDEX = b'<!doctype html><html lang="en"><head><script type="module" src="/console/assets/app-1a2b3c.js"></script>'
SCRIPT = b"export const answer = 42;\n" * 200  # long enough that gzip is worth it
GATEWAY_URL = "http://gateway.example:8443/"
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self' http://gateway.example:8443; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'; object-src 'none'"
)


def _build(directory: Path) -> Path:
    (directory / "assets").mkdir(parents=True)
    (directory / "index.html").write_bytes(INDEX)
    (directory / "assets" / "app-1a2b3c.js").write_bytes(SCRIPT)
    return directory


async def _server(database: Database, console_dir: Path) -> AsyncIterator[str]:
    if database.backend != "sqlite":
        pytest.skip("serving files does not touch the database: one backend is enough")
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-var-"))
    env = server_env(
        database, var_dir, SWITCHBOARD_CONSOLE_DIR=str(console_dir), SWITCHBOARD_GATEWAY_PUBLIC_URL=GATEWAY_URL
    )
    server = await start_server(env)
    try:
        yield f"http://127.0.0.1:{server.listener_port}"
    finally:
        await server.stop()


@pytest_asyncio.fixture(scope="module")
async def built(database: Database) -> AsyncIterator[str]:
    async for url in _server(database, _build(Path(tempfile.mkdtemp(prefix="console-dist-")))):
        yield url


@pytest_asyncio.fixture(scope="module")
async def unbuilt(database: Database) -> AsyncIterator[str]:
    async for url in _server(database, Path(tempfile.mkdtemp(prefix="console-empty-"))):
        yield url


def _secured(headers: Mapping[str, str]) -> None:
    assert headers["Content-Security-Policy"] == CSP
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "no-referrer"


async def test_every_page_path_gets_the_app_shell_revalidated_each_time(built: str) -> None:
    async with aiohttp.ClientSession() as http:
        for path in ("/console/", "/console/t/ten_1/groups", "/console/sign-in?next=%2Fconsole%2Fkeys"):
            async with http.get(built + path) as resp:
                assert resp.status == 200, path
                assert await resp.read() == INDEX
                assert resp.headers["Content-Type"] == "text/html; charset=utf-8"
                assert resp.headers["Cache-Control"] == "no-cache"
                _secured(resp.headers)
        async with http.get(built + "/console?x=1", allow_redirects=False) as resp:
            assert resp.status == 308
            assert resp.headers["Location"] == "/console/?x=1"


async def test_hashed_assets_are_immutable_compressed_and_revalidated_by_etag(built: str) -> None:
    url = built + "/console/assets/app-1a2b3c.js"
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        async with http.get(url, headers={"Accept-Encoding": "gzip"}) as resp:
            assert resp.status == 200
            assert resp.headers["Cache-Control"] == "public, max-age=31536000, immutable"
            assert resp.headers["Content-Type"] == "text/javascript; charset=utf-8"
            assert resp.headers["Content-Encoding"] == "gzip"
            body = await resp.read()
            assert gzip.decompress(body) == SCRIPT and len(body) < len(SCRIPT) / 10
            etag = resp.headers["ETag"]
            _secured(resp.headers)
        async with http.get(url, headers={"Accept-Encoding": "identity"}) as resp:
            assert "Content-Encoding" not in resp.headers and await resp.read() == SCRIPT
        async with http.get(url, headers={"If-None-Match": etag}) as resp:
            assert resp.status == 304 and await resp.read() == b""
        async with http.get(built + "/console/assets/app-000000.js") as resp:
            assert resp.status == 404  # an unknown asset is not answered with the app's shell
        async with http.get(built + "/console/assets/../index.html") as resp:
            assert resp.status in (200, 404) and b"answer" not in await resp.read()


async def test_config_tells_the_gateway_and_sign_in_without_secrets(built: str) -> None:
    async with aiohttp.ClientSession() as http, http.get(built + "/console/config.json") as resp:
        assert resp.status == 200
        assert resp.headers["Cache-Control"] == "no-store"
        config = json.loads(await resp.read())
    assert config == {"gatewayUrl": GATEWAY_URL.rstrip("/"), "devSignIn": False, "oidc": False}


async def test_only_reads_are_answered(built: str) -> None:
    async with aiohttp.ClientSession() as http, http.post(built + "/console/", data=b"x") as resp:
        assert resp.status == 405
        assert resp.headers["Allow"] == "GET, HEAD"


async def test_without_a_build_the_console_says_how_to_build_it_and_the_api_still_answers(unbuilt: str) -> None:
    async with aiohttp.ClientSession() as http:
        async with http.get(unbuilt + "/console/t/ten_1/keys") as resp:
            assert resp.status == 404
            assert "make run" in await resp.text()
            _secured(resp.headers)
        async with http.get(unbuilt + "/livez") as resp:
            assert resp.status == 200


async def test_a_gateway_answers_the_console_origin_preflight(database: Database, fakes: Fakes) -> None:
    if database.backend != "sqlite":
        pytest.skip("CORS does not touch the database: one backend is enough")
    var_dir = Path(tempfile.mkdtemp(prefix="switchboard-var-"))
    console = "http://console.example:8080"  # SWITCHBOARD_CONSOLE_PUBLIC_URL: where browsers reach the console
    env = {
        **gateway_env(database, var_dir, fakes),
        "SWITCHBOARD_CONSOLE_DIR": str(_build(var_dir / "dist")),
        "SWITCHBOARD_CONSOLE_PUBLIC_URL": f"{console}/",
    }
    gateway = await start_gateway_process(env, workers=1)
    try:
        preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization"}
        async with aiohttp.ClientSession() as http:
            for origin, allowed in ((console, True), ("http://elsewhere.example", False)):
                headers = {"Origin": origin, **preflight}
                async with http.options(f"{gateway.base_url}/chat/completions", headers=headers) as resp:
                    assert (resp.headers.get("Access-Control-Allow-Origin") == origin) is allowed, origin
    finally:
        gateway.proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(gateway.proc.wait(), 60)


def test_the_gateway_allows_the_console_origin_only_when_the_console_is_built(tmp_path: Path) -> None:
    env = {"SWITCHBOARD_HOST": "127.0.0.1", "SWITCHBOARD_PORT": "18080"}
    extra = "https://app.example"
    unbuilt = load_settings(
        {**env, "SWITCHBOARD_CONSOLE_DIR": str(tmp_path), "SWITCHBOARD_CORS_ALLOWED_ORIGINS": extra}
    )
    assert gateway_origins(unbuilt) == (extra,)
    built = load_settings({**env, "SWITCHBOARD_CONSOLE_DIR": str(_build(tmp_path / "dist"))})
    assert console_origin(built) == "http://127.0.0.1:18080"
    assert gateway_origins(built) == ("http://127.0.0.1:18080",)
    assert "connect-src 'self' https://gw.example;" in content_security_policy("https://gw.example/v1")


@pytest.mark.parametrize(
    ("host", "origin"),
    [("::1", "http://[::1]:18080"), ("0.0.0.0", "http://127.0.0.1:18080"), ("::", "http://127.0.0.1:18080")],  # noqa: S104
)
def test_without_a_public_url_the_console_url_is_a_url_for_any_listening_host(host: str, origin: str) -> None:
    """Without SWITCHBOARD_CONSOLE_PUBLIC_URL the console's URL is the server's own address, and for
    SWITCHBOARD_HOST=::1 it was spelt `http://::1:18080` (found by probing): no URL at all, so the OpenID redirect
    URI, the MCP OAuth redirect URI and the gateway's CORS origin built on it were none either. It is the address
    the gateway's default is (settings._own_address): an IPv6 host in brackets, a wildcard bind reached on loopback."""
    settings = load_settings({"SWITCHBOARD_HOST": host, "SWITCHBOARD_PORT": "18080"})
    assert (settings.console_url, console_origin(settings)) == (origin, origin)
    assert settings.mcp_oauth_redirect_uri == f"{origin}/console/mcp-oauth-callback"


@pytest.mark.parametrize("path", ["/console/%ff", "/console/%c3%28", "/console/%80", "/livez%ed%a0%80", "/%%ff"])
async def test_a_path_that_is_not_utf8_is_answered_not_left_hanging(built: str, path: str) -> None:
    """A path whose percent-decoding is not UTF-8 (on any route of the management server: pyvoy decodes it strictly
    and then neither called the app nor answered) got no answer: the request stayed open until Envoy's stream timeout
    (300 s), holding one of the server's bounded connections (SWITCHBOARD_MAX_CONNECTIONS) all along, so a few
    thousand such requests locked everyone out (server.launch.with_utf8_paths)."""
    answer = await asyncio.wait_for(raw_request(built, "GET", path, []), 15)
    assert answer.status == 400, answer
    assert answer.body == b"The request path is not UTF-8 once percent-decoded.\n"


@pytest.mark.parametrize(
    "path",
    [
        "/console/caf%C3%A9",
        "/console/%e2%82%ac",
        "/console/%F0%9F%98%80",
        "/console/%",
        "/console/%zz",
        "/console/?q=%ff",
    ],
)
async def test_a_utf8_path_however_spelt_is_served(built: str, path: str) -> None:
    answer = await asyncio.wait_for(raw_request(built, "GET", path, []), 15)
    assert answer.status == 200, answer


async def _get_raw(url: str, headers: dict[str, str]) -> tuple[int, Mapping[str, str], bytes]:
    """One GET as sent and answered, content codings left as they are."""
    async with aiohttp.ClientSession(auto_decompress=False) as http, http.get(url, headers=headers) as resp:
        return resp.status, resp.headers.copy(), await resp.read()


async def test_if_none_match_is_compared_weakly_and_read_as_a_list(built: str) -> None:
    """RFC 9110 §13.1.2: If-None-Match is `*` or a list of ETags, and "a recipient MUST use the weak comparison
    function". The one header value was compared byte for byte, so a weakened ETag (`W/"…"`, what a recompressing
    proxy sends back) or a list got the whole app shell again on every page load."""
    url = built + "/console/"
    _, headers, _ = await _get_raw(url, {})
    etag = headers["ETag"]
    for sent in (etag, f"W/{etag}", f'"other", {etag}', f'W/"other",W/{etag}', "*"):
        status, _, body = await _get_raw(url, {"If-None-Match": sent})
        assert (status, body) == (304, b""), sent
    for sent in ('"other"', f'W/{etag[:-2]}"', ""):
        status, _, body = await _get_raw(url, {"If-None-Match": sent})
        assert (status, body) == (200, INDEX), sent


async def test_the_gzip_and_identity_forms_of_a_file_have_etags_of_their_own(built: str) -> None:
    """RFC 9110 §8.8.3: a strong ETag names one representation, and a file's gzip and identity forms are two. Both
    had the same ETag, so a shared cache revalidating its gzip copy for a client that takes no gzip was answered 304
    (without the Vary its 200 has, RFC 9110 §15.4.5) and told to serve it; and `gzip;q=0` (RFC 9110 §12.5.3: not
    acceptable) was answered with gzip."""
    url = built + "/console/assets/app-1a2b3c.js"
    status, zipped, _ = await _get_raw(url, {"Accept-Encoding": "gzip"})
    assert status == 200 and zipped["Content-Encoding"] == "gzip"
    status, plain, body = await _get_raw(url, {"Accept-Encoding": "identity"})
    assert status == 200 and body == SCRIPT and "Content-Encoding" not in plain
    assert zipped["ETag"] != plain["ETag"]
    status, _, body = await _get_raw(url, {"Accept-Encoding": "identity", "If-None-Match": zipped["ETag"]})
    assert (status, body) == (200, SCRIPT)
    for coding, etag in (("gzip", zipped["ETag"]), ("identity", plain["ETag"])):
        status, headers, _ = await _get_raw(url, {"Accept-Encoding": coding, "If-None-Match": etag})
        assert (status, headers["ETag"], headers["Vary"]) == (304, etag, "Accept-Encoding"), coding
    for accepted, gzipped in (("gzip;q=0, identity", False), ("GZIP;q=0.5", True), ("*", True), ("br, *;q=0", False)):
        _, headers, _ = await _get_raw(url, {"Accept-Encoding": accepted})
        assert (headers.get("Content-Encoding") == "gzip") is gzipped, accepted
