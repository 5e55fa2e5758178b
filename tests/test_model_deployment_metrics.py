"""GetModelDeploymentMetrics: requests, errors, latency percentiles and tokens of one deployment, from the gateway's
own metering (usage_events rows seeded at chosen times), on SQLite and PostgreSQL.

Percentiles are linear interpolation between closest ranks (PostgreSQL's percentile_cont); SQLite computes the
same figures another way, so the expected values below are worked out by hand and asserted on both backends.
"""

from __future__ import annotations

import random
import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, insert_rows
from tests.world import must

OBS = "platform.modelmanager.v1.ModelDeploymentObservabilityService"
DEPLOYMENTS = "platform.modelmanager.v1.ModelDeploymentService"
DEPLOYMENT_KIND = 1
EXTERNAL_KIND = 2


def _hour() -> datetime:
    """A random whole hour in 1990-2009, this test's private stretch of time."""
    return datetime(1990, 1, 1, tzinfo=UTC) + timedelta(hours=random.randrange(20 * 365 * 24))


async def _deployment(connect: ConnectJsonCaller, token: str) -> str:
    name = f"met-{secrets.token_hex(4)}"
    body = {"name": name, "publicModelId": name, "endpointUrl": "http://127.0.0.1:9/v1"}
    must(await connect.call(f"{DEPLOYMENTS}/CreateModelDeployment", {"modelDeployment": body}, token=token))
    return name


def _event(name: str, at: datetime, status: int, latency: float, kind: int = DEPLOYMENT_KIND, **tokens: int) -> Any:
    return UsageEventRow(
        occurred_at=at,
        target_kind=kind,
        target_name=name,
        call_kind=1,
        status=status,
        latency_ms=latency,
        prompt_tokens=tokens.get("prompt", 0),
        completion_tokens=tokens.get("completion", 0),
        embedding_tokens=tokens.get("embedding", 0),
        rerank_tokens=tokens.get("rerank", 0),
        total_tokens=sum(tokens.values()),
    )


def _points(series: list[dict[str, Any]]) -> dict[int, float]:
    return {p["timestamp"]: p.get("value", 0.0) for p in series}


async def test_counts_errors_percentiles_and_tokens_per_step(
    server: Server, database: Database, connect: ConnectJsonCaller
) -> None:
    name = await _deployment(connect, server.admin_token)
    t0 = _hour()
    first = [(200, 10.0), (200, 50.0), (404, 30.0), (500, 20.0), (429, 40.0)]  # latencies 10..50 in any order
    await insert_rows(
        database,
        *(
            _event(name, t0 + timedelta(seconds=10 * i), s, ms, prompt=3, completion=2)
            for i, (s, ms) in enumerate(first)
        ),
        _event(name, t0 + timedelta(minutes=11), 200, 7.5, embedding=4, rerank=1),  # third bucket: one call
        _event(name, t0 + timedelta(minutes=20), 200, 1.0, prompt=100),  # after the range
        _event(name, t0 + timedelta(minutes=2), 500, 999.0, kind=EXTERNAL_KIND),  # an external model's namesake
        _event("another-deployment", t0 + timedelta(minutes=2), 200, 999.0),
    )
    start, end = int(t0.timestamp()), int((t0 + timedelta(minutes=15)).timestamp())
    body = {"deploymentName": name, "startTime": start, "endTime": end, "step": "METRICS_STEP_5M"}
    answer = must(await connect.call(f"{OBS}/GetModelDeploymentMetrics", body, token=server.admin_token, get=True))
    assert answer["timeRange"] == {"start": start, "end": end, "step": "METRICS_STEP_5M"}
    m = answer["metrics"]
    steps = [start, start + 300, start + 600]
    assert _points(m["totalRequests"]) == {steps[0]: 5, steps[1]: 0, steps[2]: 1}  # counts: a point every step
    assert _points(m["total4xxErrors"]) == {steps[0]: 2, steps[1]: 0, steps[2]: 0}
    assert _points(m["total5xxErrors"]) == {steps[0]: 1, steps[1]: 0, steps[2]: 0}
    # Latency (ms): no point for the empty middle step (unknown, not 0). Rank p*(n-1) of 10,20,30,40,50.
    assert set(_points(m["p50Latency"])) == {steps[0], steps[2]}
    assert _points(m["p50Latency"])[steps[0]] == pytest.approx(30.0)
    assert _points(m["p90Latency"])[steps[0]] == pytest.approx(46.0)  # 40 + 0.6 * (50 - 40)
    assert _points(m["p99Latency"])[steps[0]] == pytest.approx(49.6)  # 40 + 0.96 * (50 - 40)
    for series in ("p50Latency", "p90Latency", "p99Latency"):
        assert _points(m[series])[steps[2]] == pytest.approx(7.5)  # one call: every percentile is that call
    assert _points(m["totalPromptTokens"]) == {steps[0]: 15, steps[1]: 0, steps[2]: 0}
    assert _points(m["totalCompletionTokens"])[steps[0]] == 10
    assert _points(m["totalEmbeddingTokens"])[steps[2]] == 4
    assert _points(m["totalRerankTokens"])[steps[2]] == 1
    assert _points(m["totalTokens"]) == {steps[0]: 25, steps[1]: 0, steps[2]: 5}


async def test_percentiles_over_many_calls(server: Server, database: Database, connect: ConnectJsonCaller) -> None:
    name = await _deployment(connect, server.admin_token)
    t0 = _hour()
    latencies = list(range(1, 102))  # 1..101 ms
    random.shuffle(latencies)
    await insert_rows(
        database, *(_event(name, t0 + timedelta(seconds=i), 200, float(ms)) for i, ms in enumerate(latencies))
    )
    body = {
        "deploymentName": name,
        "startTime": int(t0.timestamp()),
        "endTime": int((t0 + timedelta(hours=1)).timestamp()),
        "step": "METRICS_STEP_1H",
    }
    m = must(await connect.call(f"{OBS}/GetModelDeploymentMetrics", body, token=server.admin_token, get=True))[
        "metrics"
    ]
    assert [p["value"] for p in m["totalRequests"]] == [101]
    assert m["p50Latency"][0]["value"] == pytest.approx(51.0)
    assert m["p90Latency"][0]["value"] == pytest.approx(91.0)
    assert m["p99Latency"][0]["value"] == pytest.approx(100.0)


async def test_a_bare_request_answers_the_last_hour_and_a_long_range_is_coarsened(
    server: Server, connect: ConnectJsonCaller
) -> None:
    name = await _deployment(connect, server.admin_token)
    answer = must(
        await connect.call(f"{OBS}/GetModelDeploymentMetrics", {"deploymentName": name}, token=server.admin_token)
    )
    assert answer["timeRange"]["end"] - answer["timeRange"]["start"] == 3600
    assert answer["timeRange"]["step"] == "METRICS_STEP_1M"
    assert len(answer["metrics"]["totalRequests"]) in (60, 61)
    assert "p50Latency" not in answer["metrics"]  # no calls at all: no latency points
    end = 1_000_000_000
    body = {"deploymentName": name, "startTime": end - 30 * 86400, "endTime": end, "step": "METRICS_STEP_1M"}
    coarse = must(await connect.call(f"{OBS}/GetModelDeploymentMetrics", body, token=server.admin_token, get=True))
    assert coarse["timeRange"]["step"] == "METRICS_STEP_2H"  # 30 days in at most 500 steps
    assert len(coarse["metrics"]["totalRequests"]) <= 500


@pytest.mark.parametrize(
    ("body", "code", "field"),
    [
        ({}, "invalid_argument", "deployment_name"),
        ({"deploymentName": "no-such-deployment"}, "not_found", "no-such-deployment"),
        ({"deploymentName": "DEP", "startTime": 2000, "endTime": 1000}, "invalid_argument", "start_time"),
        ({"deploymentName": "DEP", "startTime": 1, "endTime": 2_000_000_000}, "invalid_argument", "start_time"),
    ],
)
async def test_refusals_name_the_field(
    server: Server, connect: ConnectJsonCaller, body: dict[str, Any], code: str, field: str
) -> None:
    if body.get("deploymentName") == "DEP":
        body = {**body, "deploymentName": await _deployment(connect, server.admin_token)}
    result = await connect.call(f"{OBS}/GetModelDeploymentMetrics", body, token=server.admin_token, get=True)
    assert result.code == code
    assert field in result.message
