"""Where an outbound connection may go: every IP address is public, private or protected (or loopback).

This is the one table of address classes, shared by McpNetworkPolicy validation (what may be approved) and the egress
guard (`server.egress`, what may be reached). Decisions are made on addresses, never on host names: callers resolve
first and classify every resulting address.

    PROTECTED  never reachable and never approvable: unspecified, "this network", link-local (cloud metadata at
               169.254.169.254 and fd00:ec2::254; Alibaba's 100.100.100.200), multicast, broadcast, reserved,
               documentation and benchmarking ranges, deprecated IPv6 site-local and IPv4-compatible forms, and any
               IPv6 address that is neither global unicast nor unique-local.
    LOOPBACK   127.0.0.0/8 and ::1. Protected as well (a policy can never approve it); only the development/test
               setting SWITCHBOARD_EGRESS_ALLOW_LOOPBACK opens it in the egress guard.
    PRIVATE    10/8, 172.16/12, 192.168/16, 100.64/10 (shared address space, used for pod networks) and fc00::/7
               (unique-local): reachable only where an McpNetworkPolicy allows.
    PUBLIC     every other globally routable address: reachable without a policy, and never approvable (a policy
               approving it would mean nothing).

IPv6 forms that carry an IPv4 address are classified by the IPv4 address they reach: IPv4-mapped ::ffff:a.b.c.d
exactly like a.b.c.d; NAT64 64:ff9b::a.b.c.d like a.b.c.d except that loopback through a translator is protected;
6to4 2002:AABB:CCDD::/48 and Teredo 2001::/32 (both embedded addresses) are public only when what they embed is public
and protected otherwise. So ::ffff:169.254.169.254, 64:ff9b::a9fe:a9fe and 2002:a9fe:a9fe:: are all protected, and
::ffff:10.0.0.1 and 64:ff9b::a00:1 are private like 10.0.0.1: a policy on 10.0.0.0/8 covers them, and reaches them
as the IPv4 address (`Effective.address`). The local-use NAT64 prefix 64:ff9b:1::/48 has no fixed embedding and is
protected. Addresses carrying an IPv6 zone (fe80::1%eth0) are protected.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_network
from typing import Protocol

__all__ = [
    "PRIVATE_NETWORKS",
    "PROTECTED_NETWORKS",
    "Classification",
    "Effective",
    "EndpointCheck",
    "IPAddress",
    "IPNetwork",
    "Reach",
    "Verdict",
    "classify",
    "protected_overlap",
]

IPAddress = IPv4Address | IPv6Address
IPNetwork = IPv4Network | IPv6Network


class Verdict(enum.IntEnum):
    """Ordered from least to most restrictive, so the strictest of several embedded addresses wins."""

    PUBLIC = 0
    PRIVATE = 1
    LOOPBACK = 2
    PROTECTED = 3


class Reach(enum.Enum):
    """Who registered an outbound destination, which decides whether its private addresses need a network policy.

    TENANT    anything a tenant registers (tenant-owned external models, every MCP server and its OAuth endpoints):
              private ranges only where an McpNetworkPolicy allows them.
    PLATFORM  model upstreams only platform operators register (in-cluster deployments, platform-owned external
              models, the configured VENDOR_A base URL): private ranges are reachable (in-cluster services live there).
    Protected destinations are refused for both."""

    TENANT = "tenant"
    PLATFORM = "platform"


class EndpointCheck(Protocol):
    """Registration-time check of an outbound URL before it is stored (the egress guard's `check_endpoint`):
    raises InvalidArgument naming `field` when every connection to it would be refused."""

    async def __call__(self, url: str, *, field: str, reach: Reach) -> None: ...


def _nets(*rows: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ip_network(cidr), reason) for cidr, reason in rows)


# Order matters only for the reason reported: specific entries come before the ranges that contain them.
PROTECTED_NETWORKS: tuple[tuple[IPNetwork, str], ...] = _nets(
    ("169.254.169.254/32", "cloud metadata"),
    ("100.100.100.200/32", "cloud metadata"),
    ("fd00:ec2::254/128", "cloud metadata"),  # AWS
    ("fd20:ce::254/128", "cloud metadata"),  # Google Cloud
    ("169.254.0.0/16", "link-local"),
    ("fe80::/10", "link-local"),
    ("127.0.0.0/8", "loopback"),
    ("::1/128", "loopback"),
    ("0.0.0.0/8", "unspecified"),
    ("::/128", "unspecified"),
    ("255.255.255.255/32", "broadcast"),
    ("224.0.0.0/4", "multicast"),
    ("ff00::/8", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("198.18.0.0/15", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("::/96", "reserved"),  # IPv4-compatible (deprecated)
    ("64:ff9b:1::/48", "reserved"),  # local-use NAT64: no fixed embedding
    ("100::/64", "reserved"),
    ("2001:db8::/32", "reserved"),
    ("3fff::/20", "reserved"),
    ("5f00::/16", "reserved"),
    ("fec0::/10", "reserved"),  # site-local (deprecated)
)

PRIVATE_NETWORKS: tuple[IPNetwork, ...] = tuple(
    ip_network(cidr) for cidr in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "fc00::/7")
)

_GLOBAL_UNICAST_V6 = IPv6Network("2000::/3")
_NAT64 = IPv6Network("64:ff9b::/96")


@dataclass(frozen=True)
class Effective:
    """An address a connection actually reaches, with its class and why."""

    address: IPAddress
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class Classification:
    """The verdict for one address: the strictest over every address it reaches (`reached`)."""

    verdict: Verdict
    reason: str
    reached: tuple[Effective, ...]


def _plain(address: IPAddress) -> Effective:
    for network, reason in PROTECTED_NETWORKS:
        if address.version == network.version and address in network:
            verdict = Verdict.LOOPBACK if reason == "loopback" else Verdict.PROTECTED
            return Effective(address, verdict, reason)
    if any(address.version == n.version and address in n for n in PRIVATE_NETWORKS):
        return Effective(address, Verdict.PRIVATE, "private")
    if isinstance(address, IPv6Address) and address not in _GLOBAL_UNICAST_V6:
        return Effective(address, Verdict.PROTECTED, "reserved")
    if not address.is_global:
        return Effective(address, Verdict.PROTECTED, "reserved")
    return Effective(address, Verdict.PUBLIC, "public")


def _embedded(address: IPv6Address) -> tuple[tuple[IPv4Address, ...], Verdict]:
    """The IPv4 addresses an IPv6 address reaches through a translation or tunnelling prefix, and the least
    restrictive verdict that form may carry: an IPv4-mapped address is that IPv4 address (loopback included); NAT64
    reaches private networks through the translator but never its loopback; 6to4 and Teredo tunnels are only ever
    public."""
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,), Verdict.LOOPBACK
    if address in _NAT64:
        return (IPv4Address(int(address) & 0xFFFFFFFF),), Verdict.PRIVATE
    if address.sixtofour is not None:
        return (address.sixtofour,), Verdict.PUBLIC
    if address.teredo is not None:
        return address.teredo, Verdict.PUBLIC
    return (), Verdict.PUBLIC


def _through(address: IPv6Address, inner: IPv4Address, ceiling: Verdict) -> Effective:
    plain = _plain(inner)
    if plain.verdict <= ceiling:
        return plain
    return Effective(address, Verdict.PROTECTED, f"{plain.reason} address embedded in IPv6")


@functools.lru_cache(maxsize=4096)  # pure; the egress guard asks for every pooled connection it hands out
def classify(address: IPAddress) -> Classification:
    """Classify one address (see the module docstring). Never raises."""
    if isinstance(address, IPv6Address) and address.scope_id:
        zoned = Effective(address, Verdict.PROTECTED, "zoned IPv6 address")
        return Classification(zoned.verdict, zoned.reason, (zoned,))
    reached: tuple[Effective, ...] = (_plain(address),)
    if isinstance(address, IPv6Address):
        embedded, ceiling = _embedded(address)
        if embedded:
            reached = tuple(_through(address, inner, ceiling) for inner in embedded)
    worst = max(reached, key=lambda e: e.verdict)
    return Classification(worst.verdict, worst.reason, reached)


def protected_overlap(network: IPNetwork) -> tuple[IPNetwork, str] | None:
    """The first protected network (loopback included) that `network` overlaps, or None."""
    for protected, reason in PROTECTED_NETWORKS:
        if protected.version == network.version and network.overlaps(protected):
            return protected, reason
    return None
