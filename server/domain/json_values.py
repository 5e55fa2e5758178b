"""What a decoded JSON value is, as the API's rules mean it.

Python's bool is an int: `isinstance(True, int)` holds, so a JSON `true` passed for a count or a number was taken as
1 (a `score_threshold` of true searched at 1.0). Every check of a JSON number or integer in a request is one of these.
"""

from __future__ import annotations

from typing import Any, TypeGuard

__all__ = ["MAX_REPORTED_COUNT", "count_or_zero", "is_integer", "is_number"]


def is_integer(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


MAX_REPORTED_COUNT = 2**31 - 1  # far beyond any one call's tokens; sums of such stay far inside 64 bits


def count_or_zero(value: Any) -> int:
    """A count another party reported (an upstream's token usage): itself when a non-negative integer, at most
    MAX_REPORTED_COUNT, else 0. A model server of a tenant's choosing may report up to 2**64 - 1 (what orjson reads),
    past the 64-bit counters and columns usage is summed in; a negative count was a credit."""
    return min(value, MAX_REPORTED_COUNT) if is_integer(value) and value >= 0 else 0
