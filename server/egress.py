"""The egress guard: THE one place every outbound connection to a registered MCP server or its OAuth endpoints
(discovery, metadata, token exchange, tool calls) goes through.

For every connection it
1. resolves the host off the event loop (`loop.getaddrinfo`); an IP-literal host is taken as is;
2. checks EVERY resolved address (`server.domain.networks` classifies them) and refuses the whole host when any one
   is refused:
   - protected destinations (cloud metadata, link-local, multicast, unspecified, broadcast, reserved, and their
     IPv4-mapped / NAT64 / 6to4 / Teredo embeddings) are never reachable;
   - loopback is protected too; only the development/test setting SWITCHBOARD_EGRESS_ALLOW_LOOPBACK opens it;
   - private ranges only where an McpNetworkPolicy allows (policies are read from the database and cached per process
     for `SWITCHBOARD_MCP_NETWORK_POLICY_CACHE_SECONDS`, so a created or deleted policy applies everywhere within
     that bound);
   - public addresses are allowed;
3. connects only to the addresses it checked (no second DNS lookup, so DNS rebinding cannot swap the address between
   check and use); TLS still verifies and sends SNI for the original host name.

aiohttp: `EgressGuard.session()` builds a `ClientSession` whose `GuardedConnector` resolves through
`GuardedResolver` (which returns only checked addresses, with aiohttp's DNS cache off), refuses IP-literal hosts that
fail the check before connecting (aiohttp never asks a resolver for those), refuses proxies and non-HTTP schemes,
and checks the connected peer address of every connection it hands out, pooled ones included. Redirects are
followed by aiohttp itself: each hop asks the connector for a connection, so every hop is checked exactly like the
first request (tests/test_egress.py proves a redirect to a protected address is refused). The session never reads
proxy settings from the environment.

httpx2 (the `mcp` SDK's client): `EgressGuard.httpx_client()` / `httpx_transport()` plug a guarded network backend
into httpcore's connection pool: every new connection, redirect hops and IP literals included, is resolved, checked
and connected to the checked address. Unlike aiohttp's, pooled httpx connections are not re-checked on reuse: a
deleted policy reaches them when they close (httpx's keep-alive expiry, 5 s by default).

Other clients: `check_url(url)` validates the scheme and returns the host's checked addresses; connect to one of
those addresses (never re-resolve the name), and call it again for every redirect hop.

A refused destination raises `FailedPrecondition` naming the host only (which address and why is logged, never sent
to the caller); a host that does not resolve raises OSError inside aiohttp (a ClientConnectorDNSError for the
caller) and `UpstreamFailed` from `check_url`; a URL that is not http(s) raises `InvalidArgument`.

Connections in aiohttp's keep-alive pool were checked when opened and their peer is checked again on every reuse,
so a deleted policy also stops pooled connections within the cache bound.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, ip_address
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from server.domain import mcp_network_policies
from server.domain.networks import IPAddress, IPNetwork, Verdict, classify
from server.errors import FailedPrecondition, InvalidArgument, UpstreamFailed
from server.settings import Settings
from server.store.db import Database
from server.ttlcache import TtlCache

if TYPE_CHECKING:
    import httpcore2
    import httpx2
    from aiohttp.client_reqrep import ClientRequest
    from aiohttp.connector import Connection
    from aiohttp.tracing import Trace

__all__ = ["Destination", "EgressGuard", "GuardedConnector", "GuardedResolver", "Lookup", "system_lookup"]

log = logging.getLogger("switchboard.egress")

SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOKUP_TIMEOUT = 10.0
_POLICIES = "mcp-network-policies"

# host, port, address family -> the addresses the name resolves to (textual; IPv6 may carry a %zone)
Lookup = Callable[[str, int, int], Awaitable[Sequence[str]]]


async def system_lookup(host: str, port: int, family: int = socket.AF_UNSPEC) -> list[str]:
    """The system resolver, in the loop's executor (never blocks the event loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(
        host, port, family=family, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
    )
    return [str(info[4][0]) for info in infos]


@dataclass(frozen=True)
class Destination:
    """A checked destination: connect to one of `addresses` (never re-resolve `host`)."""

    scheme: str
    host: str
    port: int
    addresses: tuple[IPAddress, ...]


def _literal(host: str) -> IPAddress | None:
    try:
        return ip_address(host)
    except ValueError:
        return None


def _refused(host: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"outbound connection to {host!r} refused: it resolves to an address that is protected or not approved "
        "by an MCP network policy"
    )


class EgressGuard:
    """One per process (it holds the policy cache). `db=None` means no policies exist (private ranges refused)."""

    def __init__(
        self,
        db: Database | None,
        *,
        allow_loopback: bool = False,
        policy_cache_seconds: float = 5.0,
        lookup: Lookup | None = None,
    ) -> None:
        self._db = db
        self._allow_loopback = allow_loopback
        self._policies: TtlCache[tuple[IPNetwork, ...]] = TtlCache(policy_cache_seconds, max_entries=1)
        self._lookup: Lookup = lookup or system_lookup

    @classmethod
    def from_settings(cls, settings: Settings, db: Database, *, lookup: Lookup | None = None) -> EgressGuard:
        return cls(
            db,
            allow_loopback=settings.egress_allow_loopback,
            policy_cache_seconds=settings.mcp_network_policy_cache_seconds,
            lookup=lookup,
        )

    async def _load_policies(self) -> tuple[IPNetwork, ...]:
        if self._db is None:
            return ()
        async with self._db.read() as session:
            return tuple(await mcp_network_policies.allowed_networks(session))

    async def allowed_networks(self) -> tuple[IPNetwork, ...]:
        """Every network an McpNetworkPolicy allows, at most `policy_cache_seconds` old."""
        return await self._policies.get(_POLICIES, self._load_policies)

    def _why_refused(self, address: IPAddress, networks: Sequence[IPNetwork]) -> str | None:
        """None when `address` may be reached, else the (internal, logged-only) reason."""
        verdict = classify(address)
        if verdict.verdict == Verdict.PUBLIC:
            return None
        if verdict.verdict == Verdict.LOOPBACK:
            return None if self._allow_loopback else "loopback"
        if verdict.verdict == Verdict.PROTECTED:
            return verdict.reason
        for reached in verdict.reached:
            if reached.verdict == Verdict.PRIVATE and not any(
                reached.address.version == n.version and reached.address in n for n in networks
            ):
                return "private, and no MCP network policy allows it"
        return None

    async def check_addresses(self, host: str, addresses: Sequence[IPAddress]) -> None:
        """Refuse (FailedPrecondition) unless every address may be reached."""
        if not addresses:
            raise _refused(host)
        networks: tuple[IPNetwork, ...] = ()
        if any(classify(a).verdict == Verdict.PRIVATE for a in addresses):
            networks = await self.allowed_networks()
        for address in addresses:
            reason = self._why_refused(address, networks)
            if reason is not None:
                log.warning("egress refused: host %r address %s (%s)", host, address, reason)
                raise _refused(host)

    async def resolve(self, host: str, port: int, family: int = socket.AF_UNSPEC) -> tuple[IPAddress, ...]:
        """The checked addresses of `host` (an IP literal is its own address). OSError when the name does not
        resolve; FailedPrecondition when any address is refused."""
        literal = _literal(host)
        if literal is not None:
            addresses: tuple[IPAddress, ...] = (literal,)
        else:
            found = await self._lookup(host, port, family)
            if not found:
                raise OSError(f"{host!r} did not resolve")
            try:
                addresses = tuple(dict.fromkeys(ip_address(a) for a in found))
            except ValueError:  # a lookup answer that is not an address: never connect on a guess
                raise _refused(host) from None
        await self.check_addresses(host, addresses)
        return addresses

    async def check_url(self, url: str, *, field: str | None = None) -> Destination:
        """Check an http(s) URL for a client that is not built by `session()`: resolve and check its host, and
        return the addresses to connect to. Call it for every redirect hop as well."""
        target = self._parse(url, field)
        assert target.raw_host is not None and target.scheme in _DEFAULT_PORTS
        port = target.port or _DEFAULT_PORTS[target.scheme]
        try:
            async with asyncio.timeout(_LOOKUP_TIMEOUT):
                addresses = await self.resolve(target.raw_host, port)
        except (OSError, TimeoutError):
            raise UpstreamFailed(f"could not resolve {target.raw_host!r}", retryable=True, field=field) from None
        return Destination(target.scheme, target.raw_host, port, addresses)

    @staticmethod
    def _parse(url: str, field: str | None) -> URL:
        name = field or "url"
        try:
            target = URL(url)
        except (ValueError, TypeError):
            raise InvalidArgument(f"{name} is not a valid URL", field=field) from None
        if target.scheme not in SCHEMES or not target.raw_host:
            raise InvalidArgument(f"{name} must be an http or https URL with a host", field=field)
        return target

    def resolver(self) -> GuardedResolver:
        return GuardedResolver(self)

    def connector(self, **kwargs: Any) -> GuardedConnector:
        return GuardedConnector(self, **kwargs)

    def session(self, **kwargs: Any) -> aiohttp.ClientSession:
        """A ClientSession whose every connection (redirect hops included) goes through this guard.

        Keyword arguments go to ClientSession; `connector` and `trust_env` are refused (a proxy from the environment
        or another connector would bypass the guard). Connector options go through `connector_options`."""
        if "connector" in kwargs or "trust_env" in kwargs:
            raise TypeError("a guarded session owns its connector and never trusts proxy settings from the environment")
        options = kwargs.pop("connector_options", {})
        return aiohttp.ClientSession(connector=self.connector(**options), trust_env=False, **kwargs)

    def httpx_client(self, **kwargs: Any) -> httpx2.AsyncClient:
        """An httpx2 AsyncClient (the `mcp` SDK's HTTP client) whose every connection goes through this guard.

        Keyword arguments go to AsyncClient; `transport`, `mounts`, `proxy` and `trust_env` are refused (each would
        route requests around the guard); transport options go through `transport_options`."""
        import httpx2

        if any(name in kwargs for name in ("transport", "mounts", "proxy", "trust_env")):
            raise TypeError("a guarded client owns its transport and never uses proxies")
        transport = self.httpx_transport(**kwargs.pop("transport_options", {}))
        return httpx2.AsyncClient(transport=transport, trust_env=False, **kwargs)

    def httpx_transport(self, **kwargs: Any) -> httpx2.AsyncHTTPTransport:
        """An httpx2 transport whose connection pool connects through this guard: httpcore asks its network backend
        for every new connection (IP literals and redirect hops included), and the guarded backend resolves, checks
        and connects to the checked address. Pooled connections are not re-checked (unlike the aiohttp connector):
        a deleted policy reaches them when they close (keep-alive expiry, 5 s by default)."""
        import httpcore2
        import httpx2

        if "proxy" in kwargs or "uds" in kwargs:
            raise TypeError("a guarded transport connects over TCP, never through a proxy or a socket file")
        transport = httpx2.AsyncHTTPTransport(trust_env=False, **kwargs)
        pool = transport._pool  # no public hook; pinned by tests/test_egress.py
        if not isinstance(pool, httpcore2.AsyncConnectionPool) or not hasattr(pool, "_network_backend"):
            raise RuntimeError("this httpx2 version cannot be guarded")
        pool._network_backend = _httpcore_backend(self)
        return transport


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that returns only addresses the guard has checked (and raises when any is refused)."""

    def __init__(self, guard: EgressGuard) -> None:
        self._guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._guard.resolve(host, port, family)
        return [
            ResolveResult(
                hostname=host,
                host=str(address),
                port=port,
                family=socket.AF_INET if isinstance(address, IPv4Address) else socket.AF_INET6,
                proto=0,
                flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV,
            )
            for address in addresses
        ]

    async def close(self) -> None:
        return None


def _httpcore_backend(guard: EgressGuard) -> httpcore2.AsyncNetworkBackend:
    import httpcore2

    class GuardedNetworkBackend(httpcore2.AsyncNetworkBackend):
        """Resolves and checks through the guard, then connects to a checked address (TLS still uses the name)."""

        def __init__(self) -> None:
            self._inner = httpcore2.AnyIOBackend()

        async def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> httpcore2.AsyncNetworkStream:
            try:
                addresses = await guard.resolve(host, port)
            except OSError:
                raise httpcore2.ConnectError(f"could not resolve {host!r}") from None
            failure: Exception | None = None
            for address in addresses:
                try:
                    return await self._inner.connect_tcp(
                        str(address), port, timeout=timeout, local_address=local_address, socket_options=socket_options
                    )
                except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                    failure = exc
            assert failure is not None
            raise failure

        async def connect_unix_socket(
            self,
            path: str,
            timeout: float | None = None,  # noqa: ASYNC109 (httpcore's signature)
            socket_options: Any = None,
        ) -> httpcore2.AsyncNetworkStream:
            raise FailedPrecondition("outbound connections through socket files are not allowed")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    return GuardedNetworkBackend()


def _peer_address(connection: Connection) -> IPAddress | None:
    transport = connection.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    if not isinstance(peer, tuple) or not peer or not isinstance(peer[0], str):
        return None
    try:
        return ip_address(peer[0])
    except ValueError:
        return None


class GuardedConnector(aiohttp.TCPConnector):
    """A TCPConnector that only ever connects to addresses the guard allows (see the module docstring)."""

    def __init__(self, guard: EgressGuard, **kwargs: Any) -> None:
        if "resolver" in kwargs or kwargs.get("use_dns_cache"):
            raise TypeError("a guarded connector resolves through its guard, without a DNS cache")
        kwargs["use_dns_cache"] = False
        super().__init__(resolver=guard.resolver(), **kwargs)
        self._guard = guard

    async def connect(
        self,
        req: ClientRequest,
        traces: list[Trace],
        timeout: aiohttp.ClientTimeout,  # noqa: ASYNC109 (aiohttp's signature)
    ) -> Connection:
        host = req.url.raw_host or ""
        if req.url.scheme not in SCHEMES or not host:
            raise FailedPrecondition(f"outbound connection to {host!r} refused: only http and https are allowed")
        if req.proxy is not None:
            raise FailedPrecondition(f"outbound connection to {host!r} refused: proxies are not allowed")
        literal = _literal(host)
        if literal is not None:  # aiohttp does not ask the resolver for IP-literal hosts
            await self._guard.check_addresses(host, (literal,))
        connection = await super().connect(req, traces, timeout)
        peer = _peer_address(connection)
        try:  # the ground truth, also for a connection reused from the keep-alive pool
            await self._guard.check_addresses(host, (peer,) if peer is not None else ())
        except BaseException:
            connection.close()
            raise
        return connection
