"""A per-process map kept within a total weight (e.g. the groups in the lists it holds), the oldest entry dropped
first: what bounds a cache's memory when its entries differ in size by orders of magnitude."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["WeightedFifo"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class WeightedFifo(Generic[K, V]):
    def __init__(self, budget: int, on_drop: Callable[[K, V], None] | None = None) -> None:
        self._budget = budget
        self._on_drop = on_drop
        self._entries: dict[K, tuple[V, int]] = {}  # in insertion order: the oldest first
        self._weight = 0

    def get(self, key: K) -> V | None:
        found = self._entries.get(key)
        return None if found is None else found[0]

    def put(self, key: K, value: V, weight: int) -> bool:
        """Keep `value` (replacing what `key` held), dropping the oldest entries to make room; an entry heavier
        than the whole budget is not kept (False)."""
        self._drop(key)
        if weight > self._budget:
            return False
        while self._weight + weight > self._budget:
            self._drop(next(iter(self._entries)))
        self._entries[key] = (value, weight)
        self._weight += weight
        return True

    def _drop(self, key: K) -> None:
        found = self._entries.pop(key, None)
        if found is not None:
            self._weight -= found[1]
            if self._on_drop is not None:
                self._on_drop(key, found[0])
