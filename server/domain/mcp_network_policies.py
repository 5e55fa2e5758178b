"""MCP network policies: platform-wide private-network exceptions for outbound MCP connections.

Every operation needs the platform role can_manage_tenants (the spec shows no gate; these exceptions apply to every
tenant's MCP registrations, so only a platform operator may see or change them; API keys never carry platform roles).

A policy only widens where the egress guard (`server.egress`) lets MCP traffic go. It grants no permission to invoke
any MCP server and is not coupled to any registration: invoking a server is decided by the resource permission model
alone (`server.permissions`), whatever the policies say.

Rules for `allowed_networks` (the field is named `spec.allowed_networks` in every refusal):
- each entry is an IPv4 or IPv6 address (-> /32 or /128) or a CIDR range; netmask forms are accepted;
- a CIDR with host bits set (10.1.2.3/16) is refused rather than widened, naming the network it would mean, because
  the administrator may as well have meant the single address;
- an entry must lie inside the private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7) and must not
  overlap any protected destination (cloud metadata, loopback, link-local, ...; `server.domain.networks`);
- output is canonical CIDRs, exact duplicates removed, sorted (IPv4 first, then by address and prefix length).
  Entries contained in other entries are kept: they are distinct entries, not equivalent ones;
- at least one entry, at most MAX_NETWORKS.

The server assigns `name` (mnp-<random>), `uid` (random, new for every creation) and `resource_version` (opaque; new
whenever the stored policy changes). Deletion is conditional on all three, in one DELETE statement.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Any, cast

from sqlalchemy import delete as sql_delete
from sqlalchemy import exists, select
from sqlalchemy.engine import CursorResult
from sqlalchemy.ext.asyncio import AsyncSession

from server import permissions
from server.domain.networks import PRIVATE_NETWORKS, IPNetwork, protected_overlap
from server.domain.principal import Principal
from server.domain.validation import require_nonempty
from server.errors import Conflict, InvalidArgument, NotFound
from server.store.keyset import Window
from server.store.models import McpNetworkPolicyRow

__all__ = [
    "MAX_DESCRIPTION",
    "MAX_NETWORKS",
    "Policy",
    "PolicySpec",
    "allowed_networks",
    "canonical_networks",
    "create",
    "delete",
    "list_all",
]

FIELD = "spec.allowed_networks"
MAX_NETWORKS = 256
MAX_DESCRIPTION = 1024
_MAX_ENTRY = 64  # the longest sensible textual network (an IPv6 netmask form) is shorter
_ROLE = "can_manage_tenants"


@dataclass(frozen=True)
class PolicySpec:
    allowed_networks: tuple[str, ...]
    description: str


@dataclass(frozen=True)
class Policy:
    name: str
    uid: str
    resource_version: str
    allowed_networks: tuple[str, ...]
    description: str
    created_at: datetime


def _parse(index: int, raw: str) -> IPNetwork:
    where = f"{FIELD}[{index}]"
    value = raw.strip()
    if not value:
        raise InvalidArgument(f"{where} is empty", field=FIELD)
    if len(value) > _MAX_ENTRY or "%" in value:
        raise InvalidArgument(f"{where} is not an IP address or CIDR range", field=FIELD)
    try:
        return ip_network(value, strict=True)
    except ValueError:
        pass
    try:
        widened = ip_network(value, strict=False)
    except ValueError:
        raise InvalidArgument(
            f"{where} ({value!r}) is not an IP address or CIDR range (e.g. 10.0.0.0/8 or fd12::/16)", field=FIELD
        ) from None
    raise InvalidArgument(f"{where} ({value!r}) has host bits set; did you mean {widened}?", field=FIELD)


def _is_private(network: IPNetwork) -> bool:
    if isinstance(network, IPv4Network):
        return any(isinstance(p, IPv4Network) and network.subnet_of(p) for p in PRIVATE_NETWORKS)
    return any(isinstance(p, IPv6Network) and network.subnet_of(p) for p in PRIVATE_NETWORKS)


def _check_approvable(index: int, network: IPNetwork) -> None:
    where = f"{FIELD}[{index}] ({network})"
    hit = protected_overlap(network)
    if hit is not None:
        protected, reason = hit
        raise InvalidArgument(
            f"{where} overlaps the protected destination {protected} ({reason}), which cannot be approved", field=FIELD
        )
    if not _is_private(network):
        hint = ""
        if network.version == 6 and network.network_address.ipv4_mapped is not None:
            hint = "; write IPv4 networks in IPv4 form"
        raise InvalidArgument(
            f"{where} is not a private network: only 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10 and "
            f"fc00::/7 can be approved (public addresses need no policy){hint}",
            field=FIELD,
        )


def _sort_key(network: IPNetwork) -> tuple[int, int, int]:
    return network.version, int(network.network_address), network.prefixlen


def canonical_networks(values: Iterable[str]) -> tuple[str, ...]:
    """Validate and canonicalise `allowed_networks` input (rules in the module docstring)."""
    raw = list(values)
    if not raw:
        raise InvalidArgument(f"{FIELD} needs at least one private address or CIDR range", field=FIELD)
    if len(raw) > MAX_NETWORKS:
        raise InvalidArgument(f"{FIELD} may hold at most {MAX_NETWORKS} entries", field=FIELD)
    networks: set[IPNetwork] = set()
    for index, value in enumerate(raw):
        network = _parse(index, value)
        _check_approvable(index, network)
        networks.add(network)
    return tuple(str(n) for n in sorted(networks, key=_sort_key))


def _description(value: str) -> str:
    field = "spec.description"
    if len(value) > MAX_DESCRIPTION:
        raise InvalidArgument(f"{field} must be at most {MAX_DESCRIPTION} characters", field=field)
    if any((ord(c) < 32 and c not in "\t\n\r") or ord(c) == 127 for c in value):
        raise InvalidArgument(f"{field} must not contain control characters other than tab and newline", field=field)
    return value


def _policy(row: McpNetworkPolicyRow) -> Policy:
    return Policy(
        name=row.name,
        uid=row.uid,
        resource_version=row.resource_version,
        allowed_networks=tuple(row.allowed_networks),
        description=row.description,
        created_at=row.created_at,
    )


async def create(session: AsyncSession, principal: Principal, spec: PolicySpec) -> Policy:
    permissions.require_platform_scope(principal, _ROLE)
    row = McpNetworkPolicyRow(
        name=f"mnp-{secrets.token_hex(5)}",
        uid=str(uuid.uuid4()),
        resource_version=secrets.token_hex(8),
        description=_description(spec.description),
        allowed_networks=list(canonical_networks(spec.allowed_networks)),
        created_by=principal.subject_id,
    )
    session.add(row)
    await session.flush()
    return _policy(row)


async def list_all(session: AsyncSession, principal: Principal, window: Window | None = None) -> list[Policy]:
    """Every policy, oldest first (a window: one keyset page of them, after a (created_at, name))."""
    permissions.require_platform_scope(principal, _ROLE)
    query = select(McpNetworkPolicyRow).order_by(McpNetworkPolicyRow.created_at, McpNetworkPolicyRow.name)
    if window is not None:
        query = window.apply(query, McpNetworkPolicyRow.created_at, McpNetworkPolicyRow.name)
    return [_policy(row) for row in (await session.scalars(query)).all()]


async def delete(session: AsyncSession, principal: Principal, name: str, uid: str, resource_version: str) -> None:
    """Delete exactly the policy version the administrator selected; anything else deletes nothing."""
    permissions.require_platform_scope(principal, _ROLE)
    require_nonempty(name, "name")
    require_nonempty(uid, "uid")
    require_nonempty(resource_version, "resource_version")
    statement = sql_delete(McpNetworkPolicyRow).where(
        McpNetworkPolicyRow.name == name,
        McpNetworkPolicyRow.uid == uid,
        McpNetworkPolicyRow.resource_version == resource_version,
    )
    result = cast(CursorResult[Any], await session.execute(statement.execution_options(synchronize_session=False)))
    if result.rowcount == 1:
        return
    if await session.scalar(select(exists().where(McpNetworkPolicyRow.name == name))):
        raise Conflict(
            f"MCP network policy {name!r} has changed or was recreated since it was read (uid or resource_version "
            "no longer match); nothing was deleted",
            field="resource_version",
        )
    raise NotFound(f"MCP network policy {name!r} not found", field="name")


async def allowed_networks(session: AsyncSession) -> Sequence[IPNetwork]:
    """Every network any policy allows, for the egress guard (a system read: no principal, no gate)."""
    rows = (await session.scalars(select(McpNetworkPolicyRow.allowed_networks))).all()
    return tuple({ip_network(value) for row in rows for value in row})
