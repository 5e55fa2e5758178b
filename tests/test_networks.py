"""The address table shared by McpNetworkPolicy validation and the egress guard (server.domain.networks)."""

from __future__ import annotations

from ipaddress import ip_address, ip_network

import pytest

from server.domain.networks import Verdict, classify, protected_overlap

PUBLIC, PRIVATE, LOOPBACK, PROTECTED = Verdict.PUBLIC, Verdict.PRIVATE, Verdict.LOOPBACK, Verdict.PROTECTED

CASES = [
    # public
    ("8.8.8.8", PUBLIC),
    ("1.1.1.1", PUBLIC),
    ("2606:4700:4700::1111", PUBLIC),
    ("2001:4860:4860::8888", PUBLIC),
    # private: approvable by a policy
    ("10.0.0.1", PRIVATE),
    ("172.16.0.1", PRIVATE),
    ("172.31.255.254", PRIVATE),
    ("192.168.1.1", PRIVATE),
    ("100.64.0.1", PRIVATE),
    ("fc00::1", PRIVATE),
    ("fd12:3456::1", PRIVATE),
    # loopback
    ("127.0.0.1", LOOPBACK),
    ("127.255.255.254", LOOPBACK),
    ("::1", LOOPBACK),
    # protected
    ("169.254.169.254", PROTECTED),
    ("169.254.1.1", PROTECTED),
    ("fd00:ec2::254", PROTECTED),
    ("fd20:ce::254", PROTECTED),
    ("100.100.100.200", PROTECTED),
    ("fe80::1", PROTECTED),
    ("fe80::1%eth0", PROTECTED),
    ("fd12::1%eth0", PROTECTED),
    ("0.0.0.0", PROTECTED),  # noqa: S104
    ("0.1.2.3", PROTECTED),
    ("::", PROTECTED),
    ("255.255.255.255", PROTECTED),
    ("224.0.0.1", PROTECTED),
    ("239.255.255.250", PROTECTED),
    ("ff02::1", PROTECTED),
    ("ff0e::1", PROTECTED),
    ("240.0.0.1", PROTECTED),
    ("192.0.2.1", PROTECTED),
    ("198.18.0.1", PROTECTED),
    ("198.51.100.7", PROTECTED),
    ("203.0.113.9", PROTECTED),
    ("192.0.0.9", PROTECTED),
    ("2001:db8::1", PROTECTED),
    ("3fff::1", PROTECTED),
    ("fec0::1", PROTECTED),
    ("100::1", PROTECTED),
    ("::1.2.3.4", PROTECTED),  # IPv4-compatible (deprecated)
    ("1234::1", PROTECTED),  # outside global unicast 2000::/3
    # IPv4-mapped: exactly the IPv4 address
    ("::ffff:8.8.8.8", PUBLIC),
    ("::ffff:10.0.0.1", PRIVATE),
    ("::ffff:127.0.0.1", LOOPBACK),
    ("::ffff:169.254.169.254", PROTECTED),
    ("::ffff:0.0.0.0", PROTECTED),
    ("::ffff:224.0.0.1", PROTECTED),
    # NAT64: the IPv4 address, but never loopback through the translator
    ("64:ff9b::808:808", PUBLIC),
    ("64:ff9b::a00:1", PRIVATE),
    ("64:ff9b::a9fe:a9fe", PROTECTED),
    ("64:ff9b::7f00:1", PROTECTED),
    ("64:ff9b:1::a9fe:a9fe", PROTECTED),  # local-use NAT64 prefix
    # 6to4 and Teredo: public only when what they embed is public
    ("2002:808:808::1", PUBLIC),
    ("2002:a9fe:a9fe::1", PROTECTED),
    ("2002:7f00:1::1", PROTECTED),
    ("2002:a00:1::1", PROTECTED),
    ("2002:6464:64c8::", PROTECTED),  # 6to4 of 100.100.100.200
    ("2001:0:808:808::f7f7:f7f7", PUBLIC),  # Teredo: server 8.8.8.8, client 8.8.8.8
    ("2001:0:a9fe:a9fe::f7f7:f7f7", PROTECTED),  # Teredo server 169.254.169.254
    ("2001:0:808:808::5601:5601", PROTECTED),  # Teredo client 169.254.169.254 (stored inverted)
    ("2001:0:808:808::80ff:fffe", PROTECTED),  # Teredo client 127.0.0.1
]


@pytest.mark.parametrize(("address", "verdict"), CASES)
def test_classification(address: str, verdict: Verdict) -> None:
    assert classify(ip_address(address)).verdict == verdict


def test_embedded_private_addresses_are_reached_as_ipv4() -> None:
    mapped = classify(ip_address("::ffff:10.1.2.3"))
    nat64 = classify(ip_address("64:ff9b::a01:203"))
    assert [str(e.address) for e in mapped.reached] == ["10.1.2.3"]
    assert [str(e.address) for e in nat64.reached] == ["10.1.2.3"]


def test_metadata_is_named_as_such() -> None:
    for address in ("169.254.169.254", "fd00:ec2::254", "fd20:ce::254", "100.100.100.200", "::ffff:169.254.169.254"):
        assert "metadata" in classify(ip_address(address)).reason


@pytest.mark.parametrize(
    ("network", "overlaps"),
    [
        ("10.0.0.0/8", None),
        ("fd12::/16", None),
        ("fd20::/16", "fd20:ce::254/128"),
        ("fd00::/8", "fd00:ec2::254/128"),
        ("100.64.0.0/10", "100.100.100.200/32"),
        ("169.254.0.0/16", "169.254.169.254/32"),
        ("0.0.0.0/0", "169.254.169.254/32"),
        ("::/0", "fd00:ec2::254/128"),
        ("127.0.0.0/30", "127.0.0.0/8"),
        ("224.0.0.0/8", "224.0.0.0/4"),
    ],
)
def test_protected_overlap(network: str, overlaps: str | None) -> None:
    hit = protected_overlap(ip_network(network))
    assert (str(hit[0]) if hit else None) == overlaps
