"""Kubernetes-style resource quantities as byte counts: `512Mi`, `10G`, `1.5Gi`, `1e3`; no suffix means bytes.

Grammar (Kubernetes `resource.Quantity`):

    quantity ::= [+] number [suffix]
    number   ::= digits | digits "." [digits] | "." digits
    suffix   ::= Ki | Mi | Gi | Ti | Pi | Ei           (binary: 2^10 … 2^60)
               | n | u | m | k | M | G | T | P | E    (decimal: 10^-9 … 10^18)
               | (e | E) [+|-] digits                 (decimal exponent)

The value is computed exactly (rational arithmetic) and a fractional byte count is rounded up, as Kubernetes'
`Quantity.Value()` does (`1.5` → 2, `100m` → 1). Negative values, anything outside the grammar, whitespace, and
results above the int64 maximum are refused with invalid_argument naming the field. The string is kept as given so
it can be echoed back exactly as set.
"""

from __future__ import annotations

import re
from fractions import Fraction

from server.errors import InvalidArgument

__all__ = ["INT64_MAX", "parse_bytes"]

INT64_MAX = 2**63 - 1
_MAX_LENGTH = 64
_QUANTITY = re.compile(r"\+?(?P<int>[0-9]*)(?:\.(?P<frac>[0-9]*))?(?P<suffix>[A-Za-z]*)(?P<exp>[+-]?[0-9]+)?")
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# A number is a whole mantissa of at most _MAX_LENGTH digits times a power of ten (its fraction digits folded into
# the power). From 10^19 up any non-zero mantissa exceeds int64, and from 10^-_MAX_LENGTH down any rounds up to
# 1 byte, so bounding the power to this range changes no result and keeps `1e999999999` from computing a huge one.
_TENS_RANGE = (-_MAX_LENGTH, len(str(INT64_MAX)))


def _invalid(field: str, value: str, why: str) -> InvalidArgument:
    shown = value if len(value) <= _MAX_LENGTH else value[:_MAX_LENGTH] + "…"
    return InvalidArgument(
        f"{field} {shown!r} is not a valid quantity ({why}); use a byte count with an optional unit such as 512Mi,"
        " 10G, 1.5Gi or 1e3",
        field=field,
    )


def _scale(suffix: str, exponent: str | None, field: str, value: str) -> tuple[int, int]:
    """(power of two, power of ten) the number is multiplied by."""
    if exponent is not None:
        if suffix not in ("e", "E"):
            raise _invalid(field, value, "unknown unit")
        return 0, int(exponent)
    if suffix in _BINARY:
        return _BINARY[suffix], 0
    if suffix in _DECIMAL:
        return 0, _DECIMAL[suffix]
    raise _invalid(field, value, "unknown unit")


def parse_bytes(value: str, field: str) -> int:
    """The byte count a quantity stands for (rounded up to a whole byte), or invalid_argument naming `field`."""
    if not value:
        raise InvalidArgument(f"{field} is required", field=field)
    if len(value) > _MAX_LENGTH:
        raise _invalid(field, value, f"longer than {_MAX_LENGTH} characters")
    if value.startswith("-"):
        raise _invalid(field, value, "negative")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise _invalid(field, value, "malformed")
    whole, frac = match["int"], match["frac"] or ""
    if not whole and not frac:
        raise _invalid(field, value, "no digits")
    twos, tens = _scale(match["suffix"], match["exp"], field, value)
    mantissa = int(whole + frac)
    if mantissa == 0:
        return 0
    low, high = _TENS_RANGE
    tens = max(low, min(high, tens - len(frac)))
    amount = mantissa * 2**twos * Fraction(10) ** tens
    result: int = -(-amount.numerator // amount.denominator)  # exact ceiling
    if result > INT64_MAX:
        raise _invalid(field, value, "larger than the int64 maximum of bytes")
    return result
