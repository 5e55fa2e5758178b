"""The statistics the RAG quality benchmark reports (bench/rag.py): the paired bootstrap interval of a mean nDCG@10
difference and the held-out gain of a setting chosen on half of the queries."""

from __future__ import annotations

import numpy as np
import pytest

from bench.rag import RESAMPLES, held_out_gain, paired_bootstrap


def test_a_constant_gain_has_an_interval_of_that_gain_alone() -> None:
    base = [0.1 * i for i in range(10)]
    assert paired_bootstrap([b + 0.05 for b in base], base) == pytest.approx((0.05, 0.05, 0.05))


def test_the_interval_is_the_percentile_interval_of_resampled_means_and_repeats() -> None:
    rng = np.random.default_rng(1)
    a, b = rng.random(40).tolist(), rng.random(40).tolist()
    mean, low, high = paired_bootstrap(a, b)
    assert mean == pytest.approx(float(np.mean(np.subtract(a, b))))
    # The spread of a mean of 40 differences: about 1.96 standard errors either side.
    half_width = 1.96 * float(np.std(np.subtract(a, b))) / np.sqrt(40)
    assert low < mean < high
    assert (high - low) / 2 == pytest.approx(half_width, rel=0.1)
    assert paired_bootstrap(a, b) == (mean, low, high)  # fixed seed
    assert RESAMPLES == 10_000


def test_a_gain_on_few_queries_only_is_within_noise() -> None:
    # One query of 40 much better, the others equal: the mean moves, the interval still holds 0.
    base = [0.5] * 40
    _, low, high = paired_bootstrap([0.9, *base[1:]], base)
    assert low <= 0 <= high


def test_a_setting_chosen_on_noise_gains_nothing_held_out() -> None:
    rng = np.random.default_rng(2)
    base = rng.random(40)
    noisy = {f"w{i}": (base + rng.normal(0, 0.1, 40)).tolist() for i in range(4)}
    better = {"real": (base + 0.02).tolist()}
    assert held_out_gain(better | noisy, base.tolist()) > 0
    assert held_out_gain(noisy, base.tolist()) < held_out_gain(better | noisy, base.tolist())
