"""The egress guard: THE one place every outbound connection goes through: model upstreams (the gateway's calls to
in-cluster deployments, external models, VENDOR_A/B), registered MCP servers and their OAuth endpoints (discovery,
metadata, token exchange, tool calls), and whatever reaches models through the gateway (RAG embeddings, guardrails).

For every connection it
1. resolves the host off the event loop (`loop.getaddrinfo`); an IP-literal host is taken as is;
2. checks EVERY resolved address (`server.domain.networks` classifies them) and refuses the whole host when any one
   is refused:
   - protected destinations (cloud metadata, link-local, multicast, unspecified, broadcast, reserved, and their
     IPv4-mapped / NAT64 / 6to4 / Teredo embeddings) are never reachable;
   - loopback is protected too; only the development/test setting SWITCHBOARD_EGRESS_ALLOW_LOOPBACK opens it;
   - private ranges: for tenant-registered destinations (`Reach.TENANT`: tenant-owned external models, MCP servers)
     only where an McpNetworkPolicy allows (policies are read from the database and cached per process for
     `SWITCHBOARD_MCP_NETWORK_POLICY_CACHE_SECONDS`, so a created or deleted policy applies everywhere within that
     bound); operator-registered model upstreams (`Reach.PLATFORM`) may use them;
   - public addresses are allowed;
   - whatever the class, the platform's own ports (`own_ports`: the management and gateway ports) on an address of
     this machine are refused, so no registration can make the platform call itself (a gateway model pointed at the
     gateway would loop);
   Hosts are taken as IP literals in every numeric form the system resolver accepts (`127.1`, `2130706433`,
   `0x7f.1`), so they are recognised and refused as what they are, never looked up as names;
3. connects only to the addresses it checked (no second DNS lookup, so DNS rebinding cannot swap the address between
   check and use); TLS still verifies and sends SNI for the original host name.

aiohttp: `EgressGuard.session()` builds a `ClientSession` whose `GuardedConnector` resolves through
`GuardedResolver` (which returns only checked addresses, with aiohttp's DNS cache off), refuses IP-literal hosts that
fail the check before connecting (aiohttp never asks a resolver for those), refuses proxies and non-HTTP schemes,
and checks the connected peer address of every connection it hands out; a pooled connection is checked again on
reuse only when its peer is one that a network policy allows (any other verdict depends on the address alone and
cannot change, so it is settled once per connection). Redirects are followed by aiohttp itself, only to the same
host (a redirect elsewhere is refused before it is followed), and each hop asks the connector for a connection, so
every hop is checked exactly like the first request. The session never reads proxy settings from the environment.
The gateway does not follow upstream redirects at all.

The gateway's upstream client (`server.upstream_http`, the hot path to model upstreams): every new connection is
resolved and checked by `resolve` and connected to a checked address; a pooled one whose peer only a policy allows is
checked again on every reuse (`check_peer`, the same rule the aiohttp connector applies). It never follows redirects.

httpx2 (the `mcp` SDK's client): `EgressGuard.httpx_client()` / `httpx_transport()` plug a guarded network backend
into httpcore's connection pool: every new connection, redirect hops and IP literals included, is resolved, checked
and connected to the checked address; a redirect to another host is refused. Unlike aiohttp's, pooled httpx
connections are not re-checked on reuse: a deleted policy reaches them when they close (httpx's keep-alive expiry,
5 s by default). Its answers are bounded before they are buffered: it asks for `Accept-Encoding: identity`, decodes
whatever coding a server sends anyway as it reads (httpx's decoders inflate at most 1 MiB a step), and refuses
(`AnswerTooLarge`) a body that passes its bound once decoded: the client's `max_answer_bytes`, or the `AnswerBound` a
request carries in its `ANSWER_BOUND` extension, which is marked `exceeded` so the sender can say why its request
failed. Event streams are left whole to their reader, which bounds each event (the `mcp` SDK's
`max_sse_event_size`).

Registration: `check_endpoint(url, field=..., reach=...)` refuses, as `InvalidArgument` naming the field, a URL whose
host is (or resolves to) an address the guard would refuse, so nothing is stored that every connect would refuse; a
name that does not resolve yet is accepted (the connect-time check still applies).

Other clients: `check_url(url)` validates the scheme and returns the host's checked addresses; connect to one of
those addresses (never re-resolve the name), and call it again for every redirect hop.

A refused destination raises `FailedPrecondition` naming the host only (which address and why is logged, never sent
to the caller); a host that does not resolve raises OSError inside aiohttp (a ClientConnectorDNSError for the
caller) and `UpstreamFailed` from `check_url`; a URL that is not http(s) raises `InvalidArgument`.

Connections in aiohttp's keep-alive pool were checked when opened; one whose peer only a policy allows is checked
again on every reuse, so a deleted policy also stops pooled connections within the cache bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import socket
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, ip_address
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from yarl import URL

from server.domain import mcp_network_policies
from server.domain.networks import IPAddress, IPNetwork, Reach, Verdict, classify
from server.errors import FailedPrecondition, InvalidArgument, UpstreamFailed
from server.invalidation import Topic
from server.settings import Settings
from server.store.db import Database
from server.ttlcache import TtlCache

if TYPE_CHECKING:
    import httpcore2
    import httpx2
    from aiohttp.client_reqrep import ClientRequest
    from aiohttp.connector import Connection
    from aiohttp.tracing import Trace

__all__ = [
    "ANSWER_BOUND",
    "MAX_ANSWER_BYTES",
    "AnswerBound",
    "AnswerTooLarge",
    "Destination",
    "EgressGuard",
    "GuardedConnector",
    "GuardedResolver",
    "Lookup",
    "Reach",
    "system_lookup",
]

log = logging.getLogger("switchboard.egress")

SCHEMES = ("http", "https")
_DEFAULT_PORTS = {"http": 80, "https": 443}
_LOOKUP_TIMEOUT = 10.0
_POLICIES = "mcp-network-policies"
_SETTLED_LITERALS = 4096  # IP-literal destinations a connector remembers as settled

# host, port, address family -> the addresses the name resolves to (textual; IPv6 may carry a %zone)
Lookup = Callable[[str, int, int], Awaitable[Sequence[str]]]

MAX_ANSWER_BYTES = 4 * 1024 * 1024  # an httpx client's answer bound when its maker names none
ANSWER_BOUND = "switchboard.answer_bound"  # httpx request extension: that request's AnswerBound
# Headers that describe the body as it came over the wire; the guarded httpx client hands it on decoded.
_WIRE_HEADERS = frozenset({b"content-encoding", b"content-length"})


@dataclass
class AnswerBound:
    """The most bytes one httpx answer may hold once decoded. `exceeded` is set when an answer is refused for it:
    a client between the sender and the transport (the `mcp` SDK) may report the refusal only as a lost
    connection."""

    max_bytes: int
    exceeded: bool = False


class AnswerTooLarge(Exception):
    """An httpx answer passed its bound; raised from its body as it is read."""


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


# Shorthand IPv4 forms inet_aton accepts (127.1, 2130706433, 0x7f.0.0.1, 0177.0.0.1): a name never looks like this.
_NUMERIC_V4 = re.compile(r"[0-9][0-9a-fA-FxX.]*")


@functools.lru_cache(maxsize=4096)  # asked for every request the gateway sends: parse each host once
def _literal(host: str) -> IPAddress | None:
    """The address an IP-literal host names, in any form a resolver would accept; None for a host name."""
    try:
        return ip_address(host)
    except ValueError:
        pass
    if _NUMERIC_V4.fullmatch(host):
        try:
            return IPv4Address(socket.inet_aton(host))
        except OSError:
            return None
    return None


@functools.lru_cache(maxsize=1024)
def _is_local(address: IPAddress) -> bool:
    """Whether `address` is one of this machine's own (it can be bound to); asked only for the platform's ports."""
    if address.is_loopback or address.is_unspecified:
        return True
    family = socket.AF_INET if isinstance(address, IPv4Address) else socket.AF_INET6
    try:
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.bind((str(address), 0))
    except OSError:
        return False
    return True


def _same_host(current: URL, location: str) -> bool:
    try:
        target = current.join(URL(location))
    except (ValueError, TypeError):
        return False
    return (target.raw_host or "").lower() == (current.raw_host or "").lower()


def _cross_host_redirect(host: str) -> FailedPrecondition:
    return FailedPrecondition(f"outbound connection to {host!r} refused: redirects to another host are not followed")


def _refused(host: str) -> FailedPrecondition:
    return FailedPrecondition(
        f"outbound connection to {host!r} refused: it resolves to an address that is protected or not approved "
        "by a network policy"
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
        lookup_cache_seconds: float = 0.0,
        own_ports: frozenset[int] = frozenset(),
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self._db = db
        self._on_refused = on_refused  # told the host of every refusal (the gateway's audit trail)
        self._allow_loopback = allow_loopback
        self._own_ports = own_ports
        self._policies: TtlCache[frozenset[IPNetwork]] = TtlCache(
            policy_cache_seconds, max_entries=1, name="network_policies"
        )
        if db is not None:  # a policy change reaches every process at once (server.invalidation); TTL: the fallback
            db.invalidations.on(Topic.NETWORK_POLICY, lambda _: self._policies.forget())
        self._lookup: Lookup = lookup or system_lookup
        # Name lookups may be reused for a while (the gateway's new upstream connections then skip the resolver);
        # safe against rebinding, since a cached answer is still checked on every use and connected to as checked.
        self._lookups: TtlCache[Sequence[str]] | None = (
            TtlCache(lookup_cache_seconds, max_entries=10_000, name="dns_lookups") if lookup_cache_seconds > 0 else None
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        db: Database,
        *,
        lookup: Lookup | None = None,
        lookup_cache_seconds: float = 0.0,
        on_refused: Callable[[str], None] | None = None,
    ) -> EgressGuard:
        return cls(
            db,
            allow_loopback=settings.egress_allow_loopback,
            policy_cache_seconds=settings.mcp_network_policy_cache_seconds,
            lookup=lookup,
            lookup_cache_seconds=lookup_cache_seconds,
            own_ports=frozenset(p for p in (settings.port, settings.gateway_port) if p),
            on_refused=on_refused,
        )

    def refusal(self, host: str) -> FailedPrecondition:
        """The refusal to raise for `host`, told to `on_refused` first."""
        if self._on_refused is not None:
            self._on_refused(host)
        return _refused(host)

    async def _load_policies(self) -> frozenset[IPNetwork]:
        if self._db is None:
            return frozenset()
        async with self._db.read() as session:
            return frozenset(await mcp_network_policies.allowed_networks(session))

    async def allowed_networks(self) -> frozenset[IPNetwork]:
        """Every network an McpNetworkPolicy allows, at most `policy_cache_seconds` old (a set: the MCP pool
        compares what a session was opened under with what is allowed now)."""
        return await self._policies.get(_POLICIES, self._load_policies)

    def _why_refused(self, address: IPAddress, networks: Collection[IPNetwork], reach: Reach) -> str | None:
        """None when `address` may be reached, else the (internal, logged-only) reason."""
        verdict = classify(address)
        if verdict.verdict == Verdict.PUBLIC:
            return None
        if verdict.verdict == Verdict.LOOPBACK:
            return None if self._allow_loopback else "loopback"
        if verdict.verdict == Verdict.PROTECTED:
            return verdict.reason
        if reach == Reach.PLATFORM:
            return None  # operator-registered model upstreams may use private ranges
        for reached in verdict.reached:
            if reached.verdict == Verdict.PRIVATE and not any(
                reached.address.version == n.version and reached.address in n for n in networks
            ):
                return "private, and no MCP network policy allows it"
        return None

    def plainly_allowed(self, address: IPAddress, reach: Reach) -> bool:
        """Allowed whatever the policies say (the common case, decided from the cached classification alone)."""
        verdict = classify(address).verdict
        return (
            verdict == Verdict.PUBLIC
            or (verdict == Verdict.LOOPBACK and self._allow_loopback)
            or (verdict == Verdict.PRIVATE and reach == Reach.PLATFORM)
        )

    async def check_addresses(self, host: str, addresses: Sequence[IPAddress], reach: Reach = Reach.TENANT) -> None:
        """Refuse (FailedPrecondition) unless every address may be reached."""
        if not addresses:
            raise self.refusal(host)
        if all(self.plainly_allowed(a, reach) for a in addresses):
            return
        networks: frozenset[IPNetwork] = frozenset()
        if reach == Reach.TENANT and any(classify(a).verdict == Verdict.PRIVATE for a in addresses):
            networks = await self.allowed_networks()
        for address in addresses:
            reason = self._why_refused(address, networks, reach)
            if reason is not None:
                log.warning("egress refused: host %r address %s (%s)", host, address, reason)
                raise self.refusal(host)

    def check_own_port(self, host: str, addresses: Sequence[IPAddress], port: int) -> None:
        """Refuse (FailedPrecondition) a platform port on an address of this machine."""
        if port in self._own_ports and any(_is_local(a) for a in addresses):
            log.warning("egress refused: host %r port %d is one of the platform's own", host, port)
            raise self.refusal(host)

    async def check_peer(self, host: str, address: IPAddress, port: int, reach: Reach) -> bool:
        """Refuse (FailedPrecondition) a connection's peer the guard refuses; True when it is allowed whatever the
        policies say, so a pooled connection to it need not be checked again (the verdict depends only on the
        address, the port and this guard's fixed settings). Peers that only a policy allows are checked on every
        reuse: the policy may be gone."""
        settled = self.plainly_allowed(address, reach)  # no coroutine, no policy
        if not settled:
            await self.check_addresses(host, (address,), reach)
        self.check_own_port(host, (address,), port)
        return settled

    async def resolve(
        self, host: str, port: int, family: int = socket.AF_UNSPEC, reach: Reach = Reach.TENANT
    ) -> tuple[IPAddress, ...]:
        """The checked addresses of `host` (an IP literal is its own address). OSError when the name does not
        resolve; FailedPrecondition when any address is refused."""
        literal = _literal(host)
        if literal is not None:
            addresses: tuple[IPAddress, ...] = (literal,)
        else:
            if self._lookups is None:
                found = await self._lookup(host, port, family)
            else:
                found = await self._lookups.get((host, port, family), lambda: self._lookup(host, port, family))
            if not found:
                raise OSError(f"{host!r} did not resolve")
            try:
                addresses = tuple(dict.fromkeys(ip_address(a) for a in found))
            except ValueError:  # a lookup answer that is not an address: never connect on a guess
                raise self.refusal(host) from None
        await self.check_addresses(host, addresses, reach)
        self.check_own_port(host, addresses, port)
        return addresses

    async def check_url(self, url: str, *, field: str | None = None, reach: Reach = Reach.TENANT) -> Destination:
        """Check an http(s) URL for a client that is not built by `session()`: resolve and check its host, and
        return the addresses to connect to. Call it for every redirect hop as well."""
        target = self._parse(url, field)
        assert target.raw_host is not None and target.scheme in _DEFAULT_PORTS
        port = target.port or _DEFAULT_PORTS[target.scheme]
        try:
            async with asyncio.timeout(_LOOKUP_TIMEOUT):
                addresses = await self.resolve(target.raw_host, port, reach=reach)
        except (OSError, TimeoutError):
            raise UpstreamFailed(f"could not resolve {target.raw_host!r}", retryable=True, field=field) from None
        return Destination(target.scheme, target.raw_host, port, addresses)

    async def check_endpoint(self, url: str, *, field: str, reach: Reach) -> None:
        """Registration-time check of a stored outbound URL (a model's base URL, an MCP server's URL): refuse, as
        InvalidArgument naming `field`, a URL the guard would refuse at every connect. A name that does not resolve
        (yet) is accepted: the connect-time check still decides. A shorthand IPv4 host (127.1) is refused too: HTTP
        clients reject it at connect time, so it could only ever fail."""
        host = self._parse(url, field).raw_host or ""
        literal = _literal(host)
        if literal is not None and isinstance(literal, IPv4Address) and host != str(literal):
            raise InvalidArgument(
                f"{field} is refused: write the IPv4 address {host!r} in dotted-quad form ({literal})", field=field
            )
        try:
            await self.check_url(url, field=field, reach=reach)
        except FailedPrecondition:
            raise InvalidArgument(
                f"{field} is refused: its host {host!r} is (or resolves to) a protected address, or a private one no "
                "network policy allows",
                field=field,
            ) from None
        except UpstreamFailed:
            return

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

    def resolver(self, reach: Reach = Reach.TENANT) -> GuardedResolver:
        return GuardedResolver(self, reach)

    def connector(self, reach: Reach = Reach.TENANT, **kwargs: Any) -> GuardedConnector:
        return GuardedConnector(self, reach=reach, **kwargs)

    def session(self, reach: Reach = Reach.TENANT, *, redirects: bool = True, **kwargs: Any) -> aiohttp.ClientSession:
        """A ClientSession whose every connection (redirect hops included) goes through this guard, for
        destinations registered with this `reach`; redirects to another host are refused. `redirects=False` is for
        callers that never follow any (every request passes `allow_redirects=False`, as the gateway does): it
        leaves out the redirect hook, which costs aiohttp's tracing on every request.

        Keyword arguments go to ClientSession; `connector` and `trust_env` are refused (a proxy from the environment
        or another connector would bypass the guard). Connector options go through `connector_options`."""
        if "connector" in kwargs or "trust_env" in kwargs:
            raise TypeError("a guarded session owns its connector and never trusts proxy settings from the environment")
        options = kwargs.pop("connector_options", {})
        traces = list(kwargs.pop("trace_configs", None) or ())
        if redirects:
            same_host = aiohttp.TraceConfig()
            same_host.on_request_redirect.append(_refuse_cross_host_redirect)
            traces.append(same_host)
        # No cookie jar: these sessions are shared by every tenant, so a cookie one upstream answer set would ride
        # along on other callers' requests to that host (and aiohttp would match cookies on every request).
        kwargs.setdefault("cookie_jar", aiohttp.DummyCookieJar())
        return aiohttp.ClientSession(
            connector=self.connector(reach, **options), trust_env=False, trace_configs=traces or None, **kwargs
        )

    def httpx_client(self, *, max_answer_bytes: int = MAX_ANSWER_BYTES, **kwargs: Any) -> httpx2.AsyncClient:
        """An httpx2 AsyncClient (the `mcp` SDK's HTTP client) whose every connection goes through this guard and
        whose every answer but an event stream is refused past `max_answer_bytes` once decoded (a request's
        `ANSWER_BOUND` extension overrides it).

        Keyword arguments go to AsyncClient; `transport`, `mounts`, `proxy` and `trust_env` are refused (each would
        route requests around the guard); transport options go through `transport_options`."""
        import httpx2

        if any(name in kwargs for name in ("transport", "mounts", "proxy", "trust_env")):
            raise TypeError("a guarded client owns its transport and never uses proxies")
        transport = _bounded_transport(self.httpx_transport(**kwargs.pop("transport_options", {})), max_answer_bytes)
        hooks = dict(kwargs.pop("event_hooks", None) or {})
        hooks["response"] = [*hooks.get("response", ()), _refuse_cross_host_redirect_httpx]
        return httpx2.AsyncClient(transport=transport, trust_env=False, event_hooks=hooks, **kwargs)

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


async def _refuse_cross_host_redirect(
    session: aiohttp.ClientSession, context: Any, params: aiohttp.TraceRequestRedirectParams
) -> None:
    """aiohttp asks its trace configs before it follows a redirect: refuse one that leaves the host."""
    location = params.response.headers.get("Location") or params.response.headers.get("URI") or ""
    if not _same_host(params.url, location):
        params.response.release()
        raise _cross_host_redirect(params.url.raw_host or "")


async def _refuse_cross_host_redirect_httpx(response: httpx2.Response) -> None:
    """httpx runs response hooks before it follows a redirect: refuse one that leaves the host."""
    if response.has_redirect_location:
        current = URL(str(response.request.url))
        if not _same_host(current, response.headers["Location"]):
            await response.aclose()
            raise _cross_host_redirect(current.raw_host or "")


class GuardedResolver(AbstractResolver):
    """An aiohttp resolver that returns only addresses the guard has checked (and raises when any is refused)."""

    def __init__(self, guard: EgressGuard, reach: Reach = Reach.TENANT) -> None:
        self._guard = guard
        self._reach = reach

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self._guard.resolve(host, port, family, self._reach)
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


def _is_event_stream(answer: httpx2.Response) -> bool:
    media_type = answer.headers.get("content-type", "").partition(";")[0]
    return media_type.strip().lower() == "text/event-stream"


def _bounded_transport(inner: httpx2.AsyncBaseTransport, max_bytes: int) -> httpx2.AsyncBaseTransport:
    """`inner`, its answers bounded (see the module docstring). httpx inflates a body as its reader iterates it,
    above the transport: bounding the raw stream would not bound what it inflates to, so the body is decoded here,
    in bounded steps, and handed on without its `Content-Encoding`."""
    import httpx2

    class BoundedBody(httpx2.AsyncByteStream):
        def __init__(self, answer: httpx2.Response, bound: AnswerBound) -> None:
            self._answer = answer
            self._bound = bound

        async def __aiter__(self) -> AsyncIterator[bytes]:
            size = 0
            async with contextlib.aclosing(self._answer.aiter_bytes()) as parts:
                async for part in parts:
                    size += len(part)
                    if size > self._bound.max_bytes:
                        self._bound.exceeded = True
                        raise AnswerTooLarge(f"an answer larger than {self._bound.max_bytes} bytes was refused")
                    yield part

        async def aclose(self) -> None:
            await self._answer.aclose()

    class BoundedTransport(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            # Whatever the caller's headers say: a compressed answer costs inflating and can hide its size.
            request.headers["Accept-Encoding"] = "identity"
            answer = await inner.handle_async_request(request)
            if _is_event_stream(answer):
                return answer  # its reader bounds each event; a long-lived stream has no total to bound
            bound = request.extensions.get(ANSWER_BOUND)
            if not isinstance(bound, AnswerBound):
                bound = AnswerBound(max_bytes)
            headers = [(name, value) for name, value in answer.headers.raw if name.lower() not in _WIRE_HEADERS]
            return httpx2.Response(
                answer.status_code, headers=headers, stream=BoundedBody(answer, bound), extensions=answer.extensions
            )

        async def aclose(self) -> None:
            await inner.aclose()

    return BoundedTransport()


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
    return _peer(peer[0])


@functools.lru_cache(maxsize=4096)
def _peer(text: str) -> IPAddress | None:
    try:
        return ip_address(text)
    except ValueError:
        return None


class GuardedConnector(aiohttp.TCPConnector):
    """A TCPConnector that only ever connects to addresses the guard allows (see the module docstring)."""

    def __init__(self, guard: EgressGuard, *, reach: Reach = Reach.TENANT, **kwargs: Any) -> None:
        if "resolver" in kwargs or kwargs.get("use_dns_cache"):
            raise TypeError("a guarded connector resolves through its guard, without a DNS cache")
        kwargs["use_dns_cache"] = False
        super().__init__(resolver=guard.resolver(reach), **kwargs)
        self._guard = guard
        self._reach = reach
        # Connections whose peer was checked and allowed whatever the policies say: that verdict can never change
        # (it depends only on the address, the port and this guard's fixed settings), so their reuse from the
        # keep-alive pool is not checked again. Peers that only a policy allows are checked on every reuse.
        self._settled: weakref.WeakSet[asyncio.BaseProtocol] = weakref.WeakSet()
        self._settled_literals: set[tuple[str, int]] = set()

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
        port = req.url.port or 0
        literal = _literal(host)
        # aiohttp does not ask the resolver for IP-literal hosts
        if (
            literal is not None
            and (host, port) not in self._settled_literals
            and await self._guard.check_peer(host, literal, port, self._reach)
        ):
            if len(self._settled_literals) >= _SETTLED_LITERALS:
                self._settled_literals.clear()
            self._settled_literals.add((host, port))
        connection = await super().connect(req, traces, timeout)
        if connection.protocol in self._settled:
            return connection  # a pooled connection to a peer whose verdict cannot change
        peer = _peer_address(connection)
        try:  # the ground truth, also for a connection reused from the keep-alive pool
            if peer is None:
                raise self._guard.refusal(host)
            if peer == literal:  # the address just checked (or settled before)
                settled = (host, port) in self._settled_literals
            else:
                settled = await self._guard.check_peer(host, peer, port, self._reach)
        except BaseException:
            connection.close()
            raise
        if settled and connection.protocol is not None:
            self._settled.add(connection.protocol)
        return connection
