"""`switchboard dev-models`' choice of the model's threads (server.dev.models.model_threads says why)."""

from __future__ import annotations

import os

import pytest

from server.dev.models import model_threads


def test_the_model_gets_half_the_cores_it_may_use_and_at_least_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    for cores, threads in ((1, 1), (2, 1), (3, 1), (8, 4)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda _pid, n=cores: set(range(n)))
        assert model_threads() == threads


@pytest.mark.parametrize(("configured", "threads"), [("3", 3), ("1", 1), ("0", 4), ("many", 4), ("", 4)])
def test_omp_num_threads_when_set_to_a_count_wins(
    monkeypatch: pytest.MonkeyPatch, configured: str, threads: int
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(8)))
    monkeypatch.setenv("OMP_NUM_THREADS", configured)
    assert model_threads() == threads
