"""server.bounded.WeightedFifo: entries kept within a total weight, the oldest dropped first, each drop reported."""

from __future__ import annotations

from server.bounded import WeightedFifo


def test_entries_stay_within_the_budget_oldest_dropped_first() -> None:
    dropped: list[str] = []
    kept: WeightedFifo[str, int] = WeightedFifo(10, on_drop=lambda key, _value: dropped.append(key))
    assert kept.put("a", 1, 4) and kept.put("b", 2, 4)
    assert kept.put("c", 3, 4)  # 12 > 10: "a" goes
    assert dropped == ["a"] and kept.get("a") is None and kept.get("b") == 2 and kept.get("c") == 3
    assert kept.put("b", 20, 6)  # replacing an entry frees its weight first: b (6) + c (4) fit
    assert dropped == ["a", "b"] and kept.get("b") == 20 and kept.get("c") == 3
    assert not kept.put("huge", 0, 11)  # heavier than the whole budget: not kept, nothing else dropped
    assert kept.get("huge") is None and kept.get("c") == 3 and dropped == ["a", "b"]
    assert kept.put("d", 4, 10)  # room for it alone
    assert kept.get("b") is None and kept.get("c") is None and dropped == ["a", "b", "c", "b"]  # b is newer
