"""McpNetworkPolicyService: canonical networks, refusals naming spec.allowed_networks, conditional deletion.

Policies are platform-wide and the database is shared by the session, so these tests only approve ranges inside
10.0.0.0/8, 192.168.0.0/16 (not 192.168.77.0/24), 172.20.0.0/16 and fd12::/16; tests/test_egress.py relies on
172.30.0.0/16 and fd77::/16 being approved by no test but its own.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from sqlalchemy import delete, insert, update

from server.store.db import Database
from server.store.models import McpNetworkPolicyRow
from tests.clients import Caller, ConnectJsonCaller
from tests.world import must

SERVICE = "platform.platform.v1.McpNetworkPolicyService"
FIELD = "spec.allowed_networks"


async def create(connect: Any, token: str, networks: list[str], description: str = "") -> Any:
    spec: dict[str, Any] = {"allowedNetworks": networks}
    if description:
        spec["description"] = description
    return await connect.call(f"{SERVICE}/CreateMcpNetworkPolicy", {"spec": spec}, token=token)


async def listed(connect: Any, token: str) -> dict[str, dict[str, Any]]:
    body = must(await connect.call(f"{SERVICE}/ListMcpNetworkPolicies", {}, token=token, get=True))
    return {p["name"]: p for p in body.get("policies", [])}


def _delete_body(policy: dict[str, Any], **override: str) -> dict[str, str]:
    return {"name": policy["name"], "uid": policy["uid"], "resourceVersion": policy["resourceVersion"], **override}


async def test_create_canonicalises_sorts_and_dedupes(server: Any, connect: ConnectJsonCaller) -> None:
    token = server.admin_token
    networks = [
        "192.168.10.0/24",
        "fd12:3456::/32",
        "10.0.0.1",
        " 172.20.0.0/255.255.0.0 ",
        "FD12:3456:0:0::1",
        "10.0.0.1/32",
        "10.0.0.0/8",
        "fd12:3456::1/128",
        "10.1.0.0/16",
    ]
    policy = must(await create(connect, token, networks, description="lab MCP servers\nowner: ops"))["policy"]
    assert policy["spec"]["allowedNetworks"] == [
        "10.0.0.0/8",
        "10.0.0.1/32",
        "10.1.0.0/16",
        "172.20.0.0/16",
        "192.168.10.0/24",
        "fd12:3456::/32",
        "fd12:3456::1/128",
    ]
    assert policy["spec"]["description"] == "lab MCP servers\nowner: ops"
    assert policy["name"].startswith("mnp-")
    assert policy["uid"] and policy["resourceVersion"]
    assert (await listed(connect, token))[policy["name"]] == policy

    reordered = must(await create(connect, token, list(reversed(networks))))["policy"]
    assert reordered["spec"]["allowedNetworks"] == policy["spec"]["allowedNetworks"]
    assert reordered["name"] != policy["name"] and reordered["uid"] != policy["uid"]


async def test_description_is_optional(server: Any, connect: ConnectJsonCaller) -> None:
    policy = must(await create(connect, server.admin_token, ["192.168.20.1"]))["policy"]
    assert policy["spec"]["allowedNetworks"] == ["192.168.20.1/32"]
    assert policy["spec"].get("description", "") == ""


REFUSED = [
    # public: needs no policy, and approving it would mean nothing
    ("8.8.8.8", "not a private network"),
    ("2606:4700::/32", "not a private network"),
    ("11.0.0.0/8", "not a private network"),
    ("172.32.0.0/16", "not a private network"),
    ("10.0.0.0/7", "not a private network"),
    ("::ffff:10.0.0.1", "IPv4 form"),
    ("64:ff9b::a00:1", "not a private network"),
    # protected, or overlapping a protected destination
    ("169.254.169.254", "cloud metadata"),
    ("169.254.169.254/32", "cloud metadata"),
    ("169.254.0.0/16", "protected"),
    ("fd00:ec2::254", "cloud metadata"),
    ("fd00::/8", "cloud metadata"),
    ("fd20:ce::/32", "cloud metadata"),
    ("fc00::/7", "cloud metadata"),
    ("100.64.0.0/10", "cloud metadata"),
    ("100.100.100.200", "cloud metadata"),
    ("127.0.0.1", "loopback"),
    ("127.0.0.0/8", "loopback"),
    ("::1", "loopback"),
    ("0.0.0.0", "unspecified"),  # noqa: S104
    ("0.0.0.0/0", "protected"),
    ("::/0", "protected"),
    ("::", "unspecified"),
    ("fe80::1", "link-local"),
    ("224.0.0.1", "multicast"),
    ("ff02::1", "multicast"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.0/8", "reserved"),
    ("198.18.0.0/15", "reserved"),
    # not an address or range
    ("not-an-ip", "not an IP address or CIDR range"),
    ("10.0.0.0/33", "not an IP address or CIDR range"),
    ("010.0.0.1", "not an IP address or CIDR range"),
    ("10.1", "not an IP address or CIDR range"),
    ("fd12::1%eth0", "not an IP address or CIDR range"),
    ("", "empty"),
    ("   ", "empty"),
    ("10.1.2.3/16", "did you mean 10.1.0.0/16"),
    ("fd12::1/16", "did you mean fd12::/16"),
]


@pytest.mark.parametrize(("entry", "why"), REFUSED)
async def test_refused_entries_name_the_field(server: Any, connect: ConnectJsonCaller, entry: str, why: str) -> None:
    result = await create(connect, server.admin_token, ["192.168.30.0/24", entry])
    assert result.code == "invalid_argument", result
    assert f"{FIELD}[1]" in result.message and why in result.message, result.message


async def test_a_refused_policy_writes_nothing(server: Any, connect: ConnectJsonCaller) -> None:
    token = server.admin_token
    before = await listed(connect, token)
    assert (await create(connect, token, ["192.168.40.0/24", "8.8.8.8"])).code == "invalid_argument"
    assert await listed(connect, token) == before


async def test_at_least_one_network_and_limits(server: Any, connect: ConnectJsonCaller) -> None:
    token = server.admin_token
    for body in ({"spec": {"allowedNetworks": []}}, {"spec": {}}, {}):
        result = await connect.call(f"{SERVICE}/CreateMcpNetworkPolicy", body, token=token)
        assert result.code == "invalid_argument" and FIELD in result.message, result
    too_many = [f"10.9.{i // 256}.{i % 256}" for i in range(257)]
    result = await create(connect, token, too_many)
    assert result.code == "invalid_argument" and FIELD in result.message and "256" in result.message
    result = await create(connect, token, ["10.9.0.1"], description="x" * 1025)
    assert result.code == "invalid_argument" and "spec.description" in result.message
    result = await create(connect, token, ["10.9.0.1"], description="bell\x07")
    assert result.code == "invalid_argument" and "spec.description" in result.message
    assert (await create(connect, token, ["10.9.0.1"], description="x" * 1024)).ok


async def test_delete_needs_the_exact_policy_version(server: Any, connect: ConnectJsonCaller) -> None:
    token = server.admin_token
    delete_method = f"{SERVICE}/DeleteMcpNetworkPolicy"
    policy = must(await create(connect, token, ["192.168.50.0/24"]))["policy"]
    other = must(await create(connect, token, ["192.168.51.0/24"]))["policy"]

    stale_version = await connect.call(delete_method, _delete_body(policy, resourceVersion="0123"), token=token)
    assert stale_version.code == "aborted" and "nothing was deleted" in stale_version.message
    foreign_uid = await connect.call(delete_method, _delete_body(policy, uid=other["uid"]), token=token)
    assert foreign_uid.code == "aborted"
    assert policy["name"] in await listed(connect, token)

    for missing in ("name", "uid", "resourceVersion"):
        result = await connect.call(delete_method, _delete_body(policy, **{missing: ""}), token=token)
        assert result.code == "invalid_argument", result
    unknown = await connect.call(delete_method, _delete_body(policy, name="mnp-nope"), token=token)
    assert unknown.code == "not_found"

    assert (await connect.call(delete_method, _delete_body(policy), token=token)).ok
    names = await listed(connect, token)
    assert policy["name"] not in names and other["name"] in names
    again = await connect.call(delete_method, _delete_body(policy), token=token)
    assert again.code == "not_found"


async def test_a_changed_or_recreated_policy_is_a_conflict(server: Any, connect: ConnectJsonCaller) -> None:
    """What another administrator (or replica) did since this one read the policy: the row changed (new
    resourceVersion) or was deleted and created again under the same name (new uid). Written to the database
    directly because the API never reuses a name."""
    token = server.admin_token
    delete_method = f"{SERVICE}/DeleteMcpNetworkPolicy"
    changed = must(await create(connect, token, ["192.168.60.0/24"]))["policy"]
    recreated = must(await create(connect, token, ["192.168.61.0/24"]))["policy"]
    new_version, new_uid = secrets.token_hex(8), f"uid-{secrets.token_hex(8)}"
    db = Database(server.settings.database_url)
    try:
        async with db.transaction() as s:
            table = McpNetworkPolicyRow
            await s.execute(update(table).where(table.name == changed["name"]).values(resource_version=new_version))
            await s.execute(delete(table).where(table.name == recreated["name"]))
            await s.execute(
                insert(table).values(
                    name=recreated["name"],
                    uid=new_uid,
                    resource_version=recreated["resourceVersion"],
                    allowed_networks=["192.168.61.0/24"],
                    description="",
                    created_by="someone-else",
                )
            )
    finally:
        await db.close()

    for policy in (changed, recreated):
        result = await connect.call(delete_method, _delete_body(policy), token=token)
        assert result.code == "aborted", result
    assert {changed["name"], recreated["name"]} <= set(await listed(connect, token))

    assert (await connect.call(delete_method, _delete_body(changed, resourceVersion=new_version), token=token)).ok
    assert (await connect.call(delete_method, _delete_body(recreated, uid=new_uid), token=token)).ok
    assert not {changed["name"], recreated["name"]} & set(await listed(connect, token))


async def test_every_client_sees_the_same_contract(server: Any, caller: Caller) -> None:
    token = server.admin_token
    created = await caller.call(
        f"{SERVICE}/CreateMcpNetworkPolicy", {"spec": {"allowedNetworks": ["10.7.0.0/16", "10.7.0.0/16"]}}, token=token
    )
    assert created.ok, created
    policy = created.body["policy"]
    assert policy["spec"]["allowedNetworks"] == ["10.7.0.0/16"]
    listing = await caller.call(f"{SERVICE}/ListMcpNetworkPolicies", {}, token=token, get=True)
    assert policy in listing.body["policies"]
    conflict = await caller.call(
        f"{SERVICE}/DeleteMcpNetworkPolicy", _delete_body(policy, resourceVersion="stale"), token=token
    )
    assert conflict.code == "aborted"
    refused = await caller.call(
        f"{SERVICE}/CreateMcpNetworkPolicy", {"spec": {"allowedNetworks": ["169.254.169.254"]}}, token=token
    )
    assert refused.code == "invalid_argument" and FIELD in refused.message
    assert (await caller.call(f"{SERVICE}/DeleteMcpNetworkPolicy", _delete_body(policy), token=token)).ok
