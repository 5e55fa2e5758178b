"""Kubernetes-style resource quantities as int64 byte counts: the parsing table."""

from __future__ import annotations

import pytest

from server.domain.quantities import INT64_MAX, parse_bytes
from server.errors import InvalidArgument

VALID = [
    ("0", 0),
    ("1", 1),
    ("512", 512),
    ("1Ki", 1024),
    ("512Mi", 512 * 2**20),
    ("1.5Gi", 3 * 2**29),
    ("2Ti", 2 * 2**40),
    ("1Pi", 2**50),
    ("7Ei", 7 * 2**60),
    ("1k", 1000),
    ("10G", 10 * 10**9),
    ("3M", 3 * 10**6),
    ("1T", 10**12),
    ("1P", 10**15),
    ("2E", 2 * 10**18),
    ("1.5E", 15 * 10**17),
    ("1e3", 1000),
    ("1E3", 1000),
    ("1e+3", 1000),
    ("12e-1", 2),  # 1.2 bytes rounds up, like Quantity.Value()
    ("1.5", 2),
    ("0.1", 1),
    (".5", 1),
    ("5.", 5),
    ("100m", 1),
    ("1000m", 1),
    ("1001m", 2),
    ("1500000u", 2),
    ("1000000000n", 1),
    ("+1Ki", 1024),
    ("0e999999", 0),
    ("1e-99", 1),
    ("0.000Gi", 0),
    ("9223372036854775807", INT64_MAX),
    ("8191.999999999Pi", 9223372036853649909),  # exact: 8191.999999999 * 2^50 rounded up
]

INVALID = [
    ("", "required"),
    ("-1", "negative"),
    ("-0", "negative"),
    ("1K", "unknown unit"),  # Kubernetes' kilo is lowercase
    ("1kb", "unknown unit"),
    ("1Kib", "unknown unit"),
    ("1MB", "unknown unit"),
    ("1e", "unknown unit"),
    ("1ee3", "unknown unit"),
    ("1Mi5", "unknown unit"),
    ("abc", "no digits"),
    (".", "no digits"),
    ("Gi", "no digits"),
    ("1.2.3", "malformed"),
    (" 1Gi", "malformed"),
    ("1 Gi", "malformed"),
    ("1Gi ", "malformed"),
    ("0x10", "unknown unit"),
    ("1e3.5", "malformed"),
    ("++1", "no digits"),
    ("8Ei", "int64"),
    ("9223372036854775808", "int64"),
    ("1e19", "int64"),
    ("1e999999999", "int64"),
    ("1" * 65, "longer than"),
]


@pytest.mark.parametrize(("text", "expected"), VALID)
def test_valid_quantities(text: str, expected: int) -> None:
    assert parse_bytes(text, "quota") == expected


@pytest.mark.parametrize(("text", "why"), INVALID)
def test_invalid_quantities_name_the_field(text: str, why: str) -> None:
    with pytest.raises(InvalidArgument) as err:
        parse_bytes(text, "default_quota")
    assert err.value.field == "default_quota"
    assert "default_quota" in err.value.message and why in err.value.message
