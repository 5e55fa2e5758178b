"""GetExternalModelMetrics: token-usage series of one external model, from what the gateway metered."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import Any

from server.store.models import UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, insert_rows
from tests.world import make_world, must

EXTERNAL = "platform.modelmanager.v1.ExternalModelService"
EXTERNAL_KIND = 2


async def _model(connect: ConnectJsonCaller, token: str) -> str:
    name = f"ext-{secrets.token_hex(4)}"
    body = {
        "name": name,
        "provider": "EXTERNAL_MODEL_PROVIDER_CUSTOM_COMPATIBLE",
        "providerModelId": "m",
        "baseUrl": "http://127.0.0.1:9/v1",
        "publicModelId": f"pub-{name}",
    }
    must(await connect.call(f"{EXTERNAL}/CreateExternalModel", {"externalModel": body}, token=token))
    return name


async def _seed(database: Database, name: str, at: datetime, **tokens: int) -> None:
    prompt, completion = tokens.get("prompt", 0), tokens.get("completion", 0)
    row = UsageEventRow(
        occurred_at=at,
        target_kind=EXTERNAL_KIND,
        target_name=name,
        call_kind=1,
        prompt_tokens=prompt,
        completion_tokens=completion,
        total_tokens=prompt + completion,
    )
    await insert_rows(database, row)


def _values(points: list[dict[str, Any]]) -> list[float]:
    return [p.get("value", 0.0) for p in points]


async def test_token_series_per_step(server: Server, database: Database) -> None:
    connect = ConnectJsonCaller(server.base_url)
    name = await _model(connect, server.admin_token)
    t0 = datetime(2004, 5, 6, 7, 0, tzinfo=UTC)
    await _seed(database, name, t0 + timedelta(minutes=2), prompt=10, completion=3)
    await _seed(database, name, t0 + timedelta(minutes=4), prompt=1)
    await _seed(database, name, t0 + timedelta(minutes=11), completion=8)
    await _seed(database, "another-model", t0 + timedelta(minutes=2), prompt=1000)
    start, end = int(t0.timestamp()), int((t0 + timedelta(minutes=15)).timestamp())
    body = {"name": name, "startTime": start, "endTime": end, "step": "METRICS_STEP_5M"}
    answer = must(await connect.call(f"{EXTERNAL}/GetExternalModelMetrics", body, token=server.admin_token, get=True))
    assert answer["timeRange"] == {"start": start, "end": end, "step": "METRICS_STEP_5M"}
    metrics = answer["metrics"]
    assert _values(metrics["totalPromptTokens"]) == [11, 0, 0]
    assert _values(metrics["totalCompletionTokens"]) == [3, 0, 8]
    assert _values(metrics["totalTokens"]) == [14, 0, 8]
    assert [p["timestamp"] for p in metrics["totalTokens"]] == [start, start + 300, start + 600]
    assert set(metrics) <= {
        "totalPromptTokens",
        "totalCompletionTokens",
        "totalEmbeddingTokens",
        "totalRerankTokens",
        "totalTokens",
    }  # token usage only: no request counts, latencies or error rates


async def test_metrics_need_admin_rights_on_the_model(server: Server, connect: ConnectJsonCaller) -> None:
    world = await make_world(server, connect)
    name = await _model(connect, server.admin_token)
    must(
        await connect.call(
            f"{EXTERNAL}/UpdateExternalModelSharing",
            {"name": name, "sharing": {"shareToAll": True}},
            token=server.admin_token,
        )
    )
    body = {"name": name}
    refused = await connect.call(f"{EXTERNAL}/GetExternalModelMetrics", body, token=world.tokens["admin"], get=True)
    assert refused.code == "permission_denied"  # a shared model's usage spans every tenant: readers do not see it
    missing = await connect.call(
        f"{EXTERNAL}/GetExternalModelMetrics", {"name": "no-such-model"}, token=server.admin_token, get=True
    )
    assert missing.code == "not_found"


async def test_a_bare_request_answers_the_last_hour(server: Server, connect: ConnectJsonCaller) -> None:
    name = await _model(connect, server.admin_token)
    answer = must(
        await connect.call(f"{EXTERNAL}/GetExternalModelMetrics", {"name": name}, token=server.admin_token, get=True)
    )
    span = answer["timeRange"]["end"] - answer["timeRange"]["start"]
    assert span == 3600
    assert len(answer["metrics"]["totalTokens"]) in (60, 61)  # one-minute steps, epoch-aligned


async def test_an_overlong_or_backwards_range_is_refused(server: Server, connect: ConnectJsonCaller) -> None:
    name = await _model(connect, server.admin_token)
    for start, end in ((1, 2_000_000_000), (2000, 1000)):
        body = {"name": name, "startTime": start, "endTime": end}
        result = await connect.call(f"{EXTERNAL}/GetExternalModelMetrics", body, token=server.admin_token)
        assert result.code == "invalid_argument"
        assert "start_time" in result.message
