"""server.metric_batch folds sums into prometheus-client children: what it exposes must be exactly what direct
observe()/inc() calls expose (this also guards the prometheus-client internals it relies on across upgrades)."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from server.metric_batch import Batch

# On, just under and just over bucket bounds, zero, the largest finite bucket and beyond it.
VALUES = [0.0, 0.005, 0.0049, 0.0051, 0.1, 0.3, 2.5, 9.99, 10.0, 11.0, 1e9, math.inf, 0.02, 0.02]


def _metrics(registry: CollectorRegistry) -> tuple[Histogram, Counter, Gauge]:
    return (
        Histogram("t_seconds", "t", ["route"], registry=registry),
        Counter("t_requests", "t", ["route"], registry=registry),
        Gauge("t_in_use", "t", ["pool"], registry=registry),
    )


def _exposed(registry: CollectorRegistry) -> list[str]:
    return [line for line in generate_latest(registry).decode().splitlines() if "_created" not in line]


def test_folded_sums_expose_exactly_what_direct_calls_do() -> None:
    direct, batched = CollectorRegistry(), CollectorRegistry()
    histogram, counter, gauge = _metrics(direct)
    for value in VALUES:
        histogram.labels("/a").observe(value)
        counter.labels("/a").inc()
    counter.labels("/b").inc(7)
    gauge.labels("main").inc()
    gauge.labels("main").inc()
    gauge.labels("main").dec()

    histogram, counter, gauge = _metrics(batched)
    batch = Batch()
    for value in VALUES:
        batch.observe(histogram.labels("/a"), value)
        batch.add(counter.labels("/a"))
    batch.add(counter.labels("/b"), 7)
    batch.add(gauge.labels("main"))
    batch.add(gauge.labels("main"))
    batch.add(gauge.labels("main"), -1)
    assert _exposed(batched) != _exposed(direct)  # nothing reaches prometheus-client before the fold
    batch.flush()
    assert _exposed(batched) == _exposed(direct)
    batch.flush()  # a second fold adds nothing
    assert _exposed(batched) == _exposed(direct)
