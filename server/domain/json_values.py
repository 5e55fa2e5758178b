"""What a decoded JSON value is, as the API's rules mean it.

Python's bool is an int: `isinstance(True, int)` holds, so a JSON `true` passed for a count or a number was taken as
1 (a `score_threshold` of true searched at 1.0). Every check of a JSON number or integer in a request is one of these.
"""

from __future__ import annotations

from typing import Any, TypeGuard

__all__ = ["count_or_zero", "is_integer", "is_number"]


def is_integer(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def count_or_zero(value: Any) -> int:
    """A count another party reported (an upstream's token usage): itself when a non-negative integer, else 0."""
    return value if is_integer(value) and value >= 0 else 0
