"""The egress guard (server.egress) against a real aiohttp server on loopback.

Name resolution is the system resolver except where a test maps a host name with its own lookup (the stand-in for
DNS: there is no real private network or metadata service here). Policy-based tests create policies through the
real API and approve only 172.30.0.0/16 and fd77::/16, which no other test approves (see test_network_policies).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from ipaddress import ip_address
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from server.domain.networks import Verdict, classify
from server.egress import EgressGuard, Reach, system_lookup
from server.errors import FailedPrecondition, InvalidArgument, UpstreamFailed
from server.settings import load_settings
from server.store.db import Database
from server.upstream_http import UpstreamClient
from tests.world import must

POLICIES = "platform.platform.v1.McpNetworkPolicyService"


@dataclass
class Upstream:
    url: str
    port: int
    hits: list[str] = field(default_factory=list)


@pytest_asyncio.fixture
async def upstream() -> AsyncIterator[Upstream]:
    hits: list[str] = []

    async def ok(request: web.Request) -> web.Response:
        hits.append(request.path)
        return web.Response(text=f"ok from {request.host}")

    async def redirect(request: web.Request) -> web.Response:
        hits.append(request.path)
        raise web.HTTPFound(request.query["to"])

    async def cookie(request: web.Request) -> web.Response:
        hits.append(request.headers.get("Cookie", ""))
        return web.Response(text="ok", headers={"Set-Cookie": "session=one-callers; Path=/"})

    app = web.Application()
    app.router.add_get("/ok", ok)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/cookie", cookie)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield Upstream(f"http://127.0.0.1:{port}", port, hits)
    finally:
        await runner.cleanup()


class Names:
    """A DNS stand-in: mapped names answer from the table (recording each lookup), others go to the system."""

    def __init__(self, table: dict[str, list[list[str]]]) -> None:
        self._table = table
        self.lookups: list[str] = []

    async def __call__(self, host: str, port: int, family: int) -> Sequence[str]:
        self.lookups.append(host)
        answers = self._table.get(host)
        if answers is None:
            return await system_lookup(host, port, family)
        if not answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return answers.pop(0) if len(answers) > 1 else answers[0]


Get = Callable[[str], Awaitable[tuple[int, str]]]


@contextlib.asynccontextmanager
async def _aiohttp(guard: EgressGuard) -> AsyncIterator[Get]:
    async with guard.session() as session:

        async def get(url: str) -> tuple[int, str]:
            async with session.get(url) as response:
                return response.status, await response.text()

        yield get


@contextlib.asynccontextmanager
async def _httpx(guard: EgressGuard) -> AsyncIterator[Get]:
    async with guard.httpx_client(follow_redirects=True) as client:

        async def get(url: str) -> tuple[int, str]:
            response = await client.get(url)
            return response.status_code, response.text

        yield get


@contextlib.asynccontextmanager
async def _upstream_client(guard: EgressGuard) -> AsyncIterator[Get]:
    upstream = UpstreamClient(guard, Reach.TENANT)
    try:

        async def get(url: str) -> tuple[int, str]:
            response = await upstream.request("GET", url, headers={})
            try:
                return response.status, (await response.read(1 << 20)).decode()
            finally:
                response.release()

        yield get
    finally:
        await upstream.close()


Client = Callable[[EgressGuard], contextlib.AbstractAsyncContextManager[Get]]
FOLLOWING: dict[str, Client] = {"aiohttp": _aiohttp, "httpx": _httpx}
CLIENTS: dict[str, Client] = {**FOLLOWING, "upstream": _upstream_client}


@pytest.fixture(params=sorted(CLIENTS))
def client(request: pytest.FixtureRequest) -> Client:
    """The same guarantees through the aiohttp session, the httpx2 client (what the mcp SDK uses) and the gateway's
    upstream client."""
    return CLIENTS[request.param]


@pytest.fixture(params=sorted(FOLLOWING))
def following_client(request: pytest.FixtureRequest) -> Client:
    """The clients that follow redirects (the gateway's upstream client never does)."""
    return FOLLOWING[request.param]


async def _get(guard: EgressGuard, url: str, client: Client = _aiohttp) -> tuple[int, str]:
    async with client(guard) as get:
        return await get(url)


async def test_loopback_is_reached_only_with_the_test_setting(upstream: Upstream, client: Client) -> None:
    allowed = EgressGuard(None, allow_loopback=True)
    assert await _get(allowed, f"{upstream.url}/ok", client) == (200, f"ok from 127.0.0.1:{upstream.port}")
    assert (await _get(allowed, f"http://localhost:{upstream.port}/ok", client))[0] == 200
    assert len(upstream.hits) == 2

    refused = EgressGuard(None, allow_loopback=False)
    for host in ("127.0.0.1", "localhost", "127.0.0.2", "[::ffff:7f00:1]"):
        with pytest.raises(FailedPrecondition) as err:
            await _get(refused, f"http://{host}:{upstream.port}/ok", client)
        assert repr(host.strip("[]")) in err.value.message
        assert host == "127.0.0.1" or "127.0.0.1" not in err.value.message  # names the host, never what it resolved to
    assert len(upstream.hits) == 2  # nothing reached the server


async def test_redirects_are_followed_only_on_the_same_host(upstream: Upstream, following_client: Client) -> None:
    """A redirect to another host is refused before it is followed (protected, private or even allowed hosts), so
    nothing is looked up or sent there; a redirect on the same host is followed."""
    names = Names({"metadata.test": [["169.254.169.254"]], "corp.test": [["10.1.2.3"]]})
    guard = EgressGuard(None, allow_loopback=True, lookup=names)
    elsewhere = [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "http://metadata.test/computeMetadata/v1/",
        "http://corp.test/",
        "http://10.1.2.3/",
        "http://0.0.0.0:1/",
        f"http://localhost:{upstream.port}/ok",  # allowed here, but another host
    ]
    for target in elsewhere:
        with pytest.raises(FailedPrecondition, match="redirects to another host"):
            await _get(guard, f"{upstream.url}/redirect?to={target}", following_client)
    assert upstream.hits == ["/redirect"] * len(elsewhere)
    assert names.lookups == []

    status, text = await _get(guard, f"{upstream.url}/redirect?to=/ok", following_client)
    assert (status, text) == (200, f"ok from 127.0.0.1:{upstream.port}")
    assert upstream.hits[-2:] == ["/redirect", "/ok"]


async def test_the_upstream_client_never_follows_a_redirect(upstream: Upstream) -> None:
    """A model upstream's redirect is answered as it is (the gateway turns a 3xx into a backend failure), so a
    provider key never travels to a second address, not even on the same host."""
    guard = EgressGuard(None, allow_loopback=True)
    status, _ = await _get(guard, f"{upstream.url}/redirect?to=/ok", _upstream_client)
    assert status == 302
    assert upstream.hits == ["/redirect"]


async def test_guarded_sessions_keep_no_cookies(upstream: Upstream) -> None:
    """A guarded aiohttp session is shared by every tenant (the gateway's upstream sessions): a cookie one answer set
    must never ride along on the next request to that host (a host name: aiohttp keeps no cookies for IP hosts)."""
    guard = EgressGuard(None, allow_loopback=True, lookup=Names({"upstream.test": [["127.0.0.1"]]}))
    async with _aiohttp(guard) as get:
        for _ in range(2):
            assert await get(f"http://upstream.test:{upstream.port}/cookie") == (200, "ok")
    assert upstream.hits == ["", ""]


async def test_shorthand_ipv4_hosts_are_addresses_not_names(upstream: Upstream, client: Client) -> None:
    """127.1, 2130706433, 0x7f.1 and 0177.0.0.1 are loopback: recognised as addresses, never handed to a resolver as
    names, and refused as what they are (the HTTP clients refuse most of these forms themselves, so nothing is sent
    either way). At registration they are refused with the field named."""
    import httpx2

    names = Names({})
    refused = (FailedPrecondition, aiohttp.InvalidUrlClientError, httpx2.InvalidURL)
    for allow_loopback in (False, True):
        guard = EgressGuard(None, allow_loopback=allow_loopback, lookup=names)
        for host in ("127.1", "2130706433", "0x7f.1", "0177.0.0.1", "0x7f000001"):
            if not allow_loopback:
                with pytest.raises(refused):
                    await _get(guard, f"http://{host}:{upstream.port}/ok", client)
                with pytest.raises(FailedPrecondition, match=repr(host)):
                    await guard.check_url(f"http://{host}:{upstream.port}/ok")
            with pytest.raises(InvalidArgument, match="base_url") as err:
                await guard.check_endpoint(f"http://{host}:{upstream.port}/v1", field="base_url", reach=Reach.TENANT)
            assert err.value.field == "base_url"
    assert names.lookups == []
    assert upstream.hits == []


async def test_platform_reach_may_use_private_addresses_without_a_policy() -> None:
    names = Names({"vllm.cluster.test": [["10.20.0.7"]], "meta.cluster.test": [["10.20.0.7", "169.254.169.254"]]})
    guard = EgressGuard(None, allow_loopback=False, lookup=names)
    for url in ("http://vllm.cluster.test:8000/v1", "http://10.20.0.7/v1", "http://[fd12::7]/v1"):
        assert (await guard.check_url(url, reach=Reach.PLATFORM)).addresses
        await guard.check_endpoint(url, field="endpoint_url", reach=Reach.PLATFORM)
        with pytest.raises(FailedPrecondition):
            await guard.check_url(url, reach=Reach.TENANT)
        with pytest.raises(InvalidArgument, match="base_url"):
            await guard.check_endpoint(url, field="base_url", reach=Reach.TENANT)
    for url in ("http://meta.cluster.test/", "http://169.254.169.254/", "http://127.0.0.1/", "http://[fd00:ec2::254]/"):
        with pytest.raises(FailedPrecondition):
            await guard.check_url(url, reach=Reach.PLATFORM)
    # A name that does not resolve (yet) is left to the connect-time check.
    await guard.check_endpoint("http://not-yet.invalid/v1", field="base_url", reach=Reach.TENANT)


async def test_cached_lookups_are_still_checked_on_every_use() -> None:
    """The gateway reuses a name's lookup for a while; a cached answer is checked each time it is used."""
    names = Names({"cached.test": [["93.184.215.14"], ["169.254.169.254"]], "private.test": [["10.9.9.9"]]})
    guard = EgressGuard(None, allow_loopback=False, lookup=names, lookup_cache_seconds=3600)
    for _ in range(3):
        assert (await guard.check_url("http://cached.test/")).addresses
    assert names.lookups == ["cached.test"]
    assert (await guard.check_url("http://private.test/", reach=Reach.PLATFORM)).addresses
    with pytest.raises(FailedPrecondition):
        await guard.check_url("http://private.test/", reach=Reach.TENANT)  # same cached answer, other reach
    assert names.lookups == ["cached.test", "private.test"]


async def test_a_connection_goes_to_the_address_that_was_checked(upstream: Upstream, client: Client) -> None:
    """DNS rebinding: the name answers loopback when checked and the metadata address afterwards. The connection
    uses the checked answer (one lookup per connection, none between check and connect); the next fresh connection
    sees the new answer and is refused."""
    names = Names({"rebind.test": [["127.0.0.1"], ["169.254.169.254"]]})
    guard = EgressGuard(None, allow_loopback=True, lookup=names)
    async with client(guard) as get:
        for _ in range(2):  # the second request reuses the pooled, checked connection
            assert (await get(f"http://rebind.test:{upstream.port}/ok"))[0] == 200
    assert names.lookups == ["rebind.test"]
    with pytest.raises(FailedPrecondition):
        await _get(guard, f"http://rebind.test:{upstream.port}/ok", client)
    assert names.lookups == ["rebind.test", "rebind.test"]
    assert len(upstream.hits) == 2


async def test_every_resolved_address_is_checked(upstream: Upstream, client: Client) -> None:
    names = Names({"mixed.test": [["127.0.0.1", "169.254.169.254"]], "mixed6.test": [["127.0.0.1", "fe80::1%1"]]})
    guard = EgressGuard(None, allow_loopback=True, lookup=names)
    for host in ("mixed.test", "mixed6.test"):
        with pytest.raises(FailedPrecondition):
            await _get(guard, f"http://{host}:{upstream.port}/ok", client)
        with pytest.raises(FailedPrecondition):
            await guard.check_url(f"http://{host}/")
    assert upstream.hits == []


async def test_proxies_other_schemes_and_environment_proxies_are_refused(upstream: Upstream) -> None:
    guard = EgressGuard(None, allow_loopback=True)
    async with guard.session() as session:
        with pytest.raises(FailedPrecondition, match="prox"):
            async with session.get("http://example.test/", proxy=upstream.url):
                pass
    with pytest.raises(TypeError):
        guard.session(trust_env=True)
    with pytest.raises(TypeError):
        guard.session(connector=aiohttp.TCPConnector())
    for refused in ({"proxy": upstream.url}, {"trust_env": True}, {"mounts": {}}, {"transport": None}):
        with pytest.raises(TypeError):
            guard.httpx_client(**refused)
    with pytest.raises(TypeError):
        guard.httpx_transport(proxy=upstream.url)
    for url in ("ftp://example.test/", "file:///etc/passwd", "http:///nohost", "ws://example.test/", "not a url"):
        with pytest.raises(InvalidArgument) as err:
            await guard.check_url(url, field="external_mcp_server.server_url")
        assert err.value.field == "external_mcp_server.server_url"
        assert "external_mcp_server.server_url" in err.value.message
    assert upstream.hits == []


async def test_check_url_resolves_and_checks_for_other_clients() -> None:
    names = Names({"gone.test": [[]], "public.test": [["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]]})
    open_loopback = EgressGuard(None, allow_loopback=True, lookup=names)
    destination = await open_loopback.check_url("https://public.test/mcp")
    assert (destination.scheme, destination.host, destination.port) == ("https", "public.test", 443)
    assert [str(a) for a in destination.addresses] == ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"]
    local = await open_loopback.check_url("http://localhost:8123/x")
    assert local.port == 8123 and {str(a) for a in local.addresses} <= {"127.0.0.1", "::1"}
    with pytest.raises(UpstreamFailed):
        await open_loopback.check_url("http://gone.test/")

    closed = EgressGuard(None, allow_loopback=False, lookup=names)
    # Numeric forms the system resolver maps onto loopback: decided on what they resolve to, never on the string.
    for url in ("http://2130706433/", "http://127.1/", "http://0177.0.0.1/", "http://0x7f.0.0.1/", "http://[::1]/"):
        with pytest.raises(FailedPrecondition):
            await closed.check_url(url)
    assert (await closed.check_url("http://93.184.215.14/")).addresses


async def test_private_destinations_need_a_policy(server: Any, connect: Any) -> None:
    token = server.admin_token
    names = Names(
        {
            "svc.corp.test": [["172.30.0.5"]],
            "v6.corp.test": [["fd77::5"]],
            "mapped.corp.test": [["::ffff:172.30.0.5"]],
            "nat64.corp.test": [["64:ff9b::ac1e:5"]],
            "split.corp.test": [["172.30.0.5", "172.31.0.5"]],
            "meta.corp.test": [["172.30.0.5", "169.254.169.254"]],
        }
    )
    db = Database(server.settings.database_url)
    guard = EgressGuard(db, policy_cache_seconds=0, lookup=names)
    approved = ("svc.corp.test", "v6.corp.test", "mapped.corp.test", "nat64.corp.test")
    try:
        for host in (*approved, "split.corp.test"):
            with pytest.raises(FailedPrecondition):
                await guard.check_url(f"http://{host}/mcp")
        with pytest.raises(FailedPrecondition):
            await guard.resolver().resolve("svc.corp.test", 80)

        created = must(
            await connect.call(
                f"{POLICIES}/CreateMcpNetworkPolicy",
                {"spec": {"allowedNetworks": ["172.30.0.0/16", "fd77::/16"]}},
                token=token,
            )
        )["policy"]
        for host in approved:
            assert (await guard.check_url(f"http://{host}/mcp")).addresses
        resolved = await guard.resolver().resolve("svc.corp.test", 8443, socket.AF_UNSPEC)
        assert [(r["hostname"], r["host"], r["port"], r["family"]) for r in resolved] == [
            ("svc.corp.test", "172.30.0.5", 8443, socket.AF_INET)
        ]
        assert [r["host"] for r in await guard.resolver().resolve("v6.corp.test", 80)] == ["fd77::5"]
        for host in ("split.corp.test", "meta.corp.test"):  # one unapproved or protected address refuses the host
            with pytest.raises(FailedPrecondition):
                await guard.check_url(f"http://{host}/mcp")

        must(
            await connect.call(
                f"{POLICIES}/DeleteMcpNetworkPolicy",
                {"name": created["name"], "uid": created["uid"], "resourceVersion": created["resourceVersion"]},
                token=token,
            )
        )
        for host in approved:
            with pytest.raises(FailedPrecondition):
                await guard.check_url(f"http://{host}/mcp")
    finally:
        await db.close()


async def test_policies_are_cached_for_a_bounded_time(server: Any, connect: Any) -> None:
    token = server.admin_token
    names = Names({"cached.corp.test": [["172.30.9.9"]]})
    db = Database(server.settings.database_url)
    long_lived = EgressGuard(db, policy_cache_seconds=3600, lookup=names)
    short_lived = EgressGuard(db, policy_cache_seconds=0.2, lookup=names)
    created = must(
        await connect.call(
            f"{POLICIES}/CreateMcpNetworkPolicy", {"spec": {"allowedNetworks": ["172.30.9.0/24"]}}, token=token
        )
    )["policy"]
    try:
        for guard in (long_lived, short_lived):
            assert await guard.check_url("http://cached.corp.test/")
        delete = {"name": created["name"], "uid": created["uid"], "resourceVersion": created["resourceVersion"]}
        must(await connect.call(f"{POLICIES}/DeleteMcpNetworkPolicy", delete, token=token))
        assert await long_lived.check_url("http://cached.corp.test/")  # still within its cache bound
        for _ in range(100):  # bounded polling: the short bound lapses
            try:
                await short_lived.check_url("http://cached.corp.test/")
            except FailedPrecondition:
                break
            await asyncio.sleep(0.05)
        else:
            pytest.fail("a deleted policy still applied after its cache bound")
    finally:
        await db.close()


def test_the_loopback_setting_is_off_by_default_and_strict() -> None:
    assert load_settings({}).egress_allow_loopback is False
    assert load_settings({"SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "true"}).egress_allow_loopback is True
    assert load_settings({"SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "0"}).egress_allow_loopback is False
    with pytest.raises(ValueError, match="SWITCHBOARD_EGRESS_ALLOW_LOOPBACK"):
        load_settings({"SWITCHBOARD_EGRESS_ALLOW_LOOPBACK": "perhaps"})
    settings = load_settings({"SWITCHBOARD_MCP_NETWORK_POLICY_CACHE_SECONDS": "2.5"})
    assert settings.mcp_network_policy_cache_seconds == 2.5


def _local_private_address() -> str | None:
    """A private (policy-approvable) address of this machine's own, if it has one: a real private destination
    without leaving the host. The kernel names the source address it would use towards each private range."""
    for family, probe in (
        (socket.AF_INET6, "fd00::1"),
        (socket.AF_INET, "10.255.255.1"),
        (socket.AF_INET, "192.168.0.1"),
    ):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as probe_socket:
                probe_socket.connect((probe, 9))
                address = str(probe_socket.getsockname()[0])
        except OSError:
            continue
        if classify(ip_address(address)).verdict == Verdict.PRIVATE:
            return address
    return None


async def test_a_private_destination_is_reached_only_while_a_policy_allows_it(server: Any, connect: Any) -> None:
    """End to end on a private address of this machine: refused, reached once approved, and refused again when the
    policy goes, on a fresh connection (resolver) and on a pooled one (the connected peer is checked on reuse)."""
    address = _local_private_address()
    if address is None:
        pytest.skip("this machine has no private non-loopback address")
    db = Database(server.settings.database_url)
    names = Names({"private.corp.test": [[address]]})
    guard = EgressGuard(db, policy_cache_seconds=0, lookup=names)
    if any(ip_address(address) in network for network in await guard.allowed_networks()):
        await db.close()
        pytest.skip(f"another test's policy already approves {address}")
    app = web.Application()

    async def ok(request: web.Request) -> web.Response:
        return web.Response(text="private ok")

    app.router.add_get("/ok", ok)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, address, 0)
    await site.start()
    url = f"http://private.corp.test:{runner.addresses[0][1]}/ok"
    token = server.admin_token
    try:
        with pytest.raises(FailedPrecondition):
            await _get(guard, url)
        created = must(
            await connect.call(
                f"{POLICIES}/CreateMcpNetworkPolicy", {"spec": {"allowedNetworks": [address]}}, token=token
            )
        )["policy"]
        async with guard.session() as session:
            async with session.get(url) as response:
                assert (response.status, await response.text()) == (200, "private ok")
            delete = {"name": created["name"], "uid": created["uid"], "resourceVersion": created["resourceVersion"]}
            must(await connect.call(f"{POLICIES}/DeleteMcpNetworkPolicy", delete, token=token))
            lookups = len(names.lookups)
            with pytest.raises(FailedPrecondition):
                async with session.get(url):
                    pass
            assert len(names.lookups) == lookups  # refused on the pooled connection, not by a new lookup
        with pytest.raises(FailedPrecondition):
            await _get(guard, url)
        # The same through the gateway's upstream client, on a connection it pooled while the policy allowed it.
        pooled = UpstreamClient(guard, Reach.TENANT)
        try:
            created = must(
                await connect.call(
                    f"{POLICIES}/CreateMcpNetworkPolicy", {"spec": {"allowedNetworks": [address]}}, token=token
                )
            )["policy"]
            response = await pooled.request("GET", url, headers={})
            assert (response.status, await response.read(100)) == (200, b"private ok")
            response.release()
            delete = {"name": created["name"], "uid": created["uid"], "resourceVersion": created["resourceVersion"]}
            must(await connect.call(f"{POLICIES}/DeleteMcpNetworkPolicy", delete, token=token))
            lookups = len(names.lookups)
            with pytest.raises(FailedPrecondition):
                await pooled.request("GET", url, headers={})
            assert len(names.lookups) == lookups  # refused on the pooled connection, not by a new lookup
        finally:
            await pooled.close()
    finally:
        await runner.cleanup()
        await db.close()


async def test_the_platforms_own_ports_are_refused(upstream: Upstream, client: Client) -> None:
    """No registration can make the platform call itself: its own ports on this machine's addresses are refused,
    even where the address class is allowed (loopback opened here)."""
    guard = EgressGuard(None, allow_loopback=True, own_ports=frozenset({upstream.port}))
    for url in (f"{upstream.url}/ok", f"http://localhost:{upstream.port}/ok"):
        with pytest.raises(FailedPrecondition):
            await _get(guard, url, client)
    with pytest.raises(InvalidArgument, match="endpoint_url"):
        await guard.check_endpoint(f"{upstream.url}/v1", field="endpoint_url", reach=Reach.PLATFORM)
    assert upstream.hits == []
    elsewhere = EgressGuard(None, allow_loopback=True, own_ports=frozenset({upstream.port + 1}))
    assert (await _get(elsewhere, f"{upstream.url}/ok", client))[0] == 200
