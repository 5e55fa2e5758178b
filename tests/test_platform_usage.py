"""PlatformUsageService: token and call series, token totals and API traffic, on SQLite and PostgreSQL.

Usage rows are written straight into the database at chosen times (the gateway's metering path has its own tests,
and one test below goes end to end through it); every test reads a window of its own, a random hour decades ago,
so tests never see each other's rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import grpc
import pytest

from server.store.models import ApiTrafficRow, UsageEventRow
from tests.clients import ConnectJsonCaller
from tests.conftest import Database, Server, insert_rows

SERVICE = "platform.metering.v1.PlatformUsageService"


def _hour() -> datetime:
    """A random whole hour in 1990-2009, this test's private stretch of time."""
    return datetime(1990, 1, 1, tzinfo=UTC) + timedelta(hours=random.randrange(20 * 365 * 24))


def _window(start: datetime, end: datetime) -> dict[str, str]:
    return {"startTime": start.isoformat().replace("+00:00", "Z"), "endTime": end.isoformat().replace("+00:00", "Z")}


def _event(at: datetime, tenant: str, model: str, **tokens: int) -> UsageEventRow:
    return UsageEventRow(
        occurred_at=at,
        tenant_id=tenant,
        model_id=model,
        user_id="u-any",
        call_kind=tokens.pop("kind", 1),
        prompt_tokens=tokens.get("prompt", 0),
        completion_tokens=tokens.get("completion", 0),
        embedding_tokens=tokens.get("embedding", 0),
        total_tokens=tokens.get("prompt", 0) + tokens.get("completion", 0) + tokens.get("embedding", 0),
    )


async def _call(server: Server, method: str, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
    result = await ConnectJsonCaller(server.base_url).call(
        f"{SERVICE}/{method}", body, token=token or server.admin_token, get=True
    )
    assert result.ok, result
    return result.body


async def test_token_series_per_tenant_in_five_minute_buckets(server: Server, database: Database) -> None:
    t0 = _hour()
    await insert_rows(
        database,
        _event(t0 + timedelta(minutes=1), "ten-a", "m1", prompt=10, completion=5),
        _event(t0 + timedelta(minutes=3), "ten-a", "m2", prompt=1, completion=1),
        _event(t0 + timedelta(minutes=12), "ten-b", "m1", embedding=7),
        _event(t0 + timedelta(minutes=20), "ten-a", "m1", prompt=2),  # outside the window
    )
    body = {"window": _window(t0, t0 + timedelta(minutes=15)), "step": "300s", "groupBy": "TOKEN_USAGE_GROUP_BY_TENANT"}
    series = (await _call(server, "GetPlatformTokenUsageSeries", body))["series"]
    by_tenant = {s["tenantId"]: s["points"] for s in series}
    assert set(by_tenant) == {"ten-a", "ten-b"}
    assert [int(p.get("totalTokens", 0)) for p in by_tenant["ten-a"]] == [17, 0, 0]  # zero-filled buckets
    assert [int(p.get("embeddingTokens", 0)) for p in by_tenant["ten-b"]] == [0, 0, 7]
    first = by_tenant["ten-a"][0]
    assert (int(first["promptTokens"]), int(first["completionTokens"])) == (11, 6)
    assert first["window"] == _window(t0, t0 + timedelta(minutes=5))  # each point carries its own window


async def test_tenant_filter_is_independent_of_grouping(server: Server, database: Database) -> None:
    t0 = _hour()
    await insert_rows(
        database,
        _event(t0, "f-a", "m1", prompt=1),
        _event(t0, "f-b", "m2", prompt=10),
        _event(t0, "f-c", "m1", prompt=100),
    )
    window = _window(t0, t0 + timedelta(hours=1))
    body = {"window": window, "step": "3600s", "tenantIds": ["f-a", "f-b"]}
    series = (await _call(server, "GetPlatformTokenUsageSeries", body))["series"]
    assert len(series) == 1  # no grouping: one summed series of just those tenants
    assert int(series[0]["points"][0]["totalTokens"]) == 11
    body = {"window": window, "step": "3600s", "groupBy": "TOKEN_USAGE_GROUP_BY_MODEL", "modelIds": ["m1"]}
    series = (await _call(server, "GetPlatformTokenUsageSeries", body))["series"]
    assert [(s["modelId"], int(s["points"][0]["totalTokens"])) for s in series] == [("m1", 101)]


async def test_an_empty_window_still_answers_one_zero_series(server: Server) -> None:
    t0 = _hour()
    body = {"window": _window(t0, t0 + timedelta(minutes=2)), "step": "60s"}
    series = (await _call(server, "GetPlatformTokenUsageSeries", body))["series"]
    assert len(series) == 1
    assert [p.get("totalTokens", "0") for p in series[0]["points"]] == ["0", "0"]


async def test_the_server_coarsens_a_step_that_would_give_too_many_buckets(server: Server) -> None:
    t0 = _hour()
    body = {"window": _window(t0, t0 + timedelta(days=30)), "step": "60s"}
    points = (await _call(server, "GetPlatformTokenUsageSeries", body))["series"][0]["points"]
    assert len(points) <= 500
    first = points[0]["window"]
    width = datetime.fromisoformat(first["endTime"]) - datetime.fromisoformat(first["startTime"])
    assert width > timedelta(minutes=1)


@pytest.mark.parametrize(("span", "step"), [(timedelta(minutes=500), "60s"), (timedelta(days=1000), None)])
async def test_a_window_off_the_step_s_boundaries_still_gets_at_most_500_buckets(
    server: Server, span: timedelta, step: str | None
) -> None:
    """Buckets are aligned to the epoch, so 500 minutes from 00:00:30 touch 501 minutes: the server coarsens."""
    t0 = _hour() + timedelta(seconds=30)
    body: dict[str, Any] = {"window": _window(t0, t0 + span)}
    if step:
        body["step"] = step
    points = (await _call(server, "GetPlatformTokenUsageSeries", body))["series"][0]["points"]
    assert len(points) <= 500
    assert points[0]["window"]["startTime"] == body["window"]["startTime"]
    assert points[-1]["window"]["endTime"] == body["window"]["endTime"]


async def test_call_counts_count_one_kind(server: Server, database: Database) -> None:
    t0 = _hour()
    await insert_rows(
        database,
        _event(t0, "c-a", "chat-m", kind=1),
        _event(t0 + timedelta(seconds=5), "c-a", "chat-m", kind=1),
        _event(t0 + timedelta(seconds=9), "c-a", "embed-m", kind=3),
    )
    window = _window(t0, t0 + timedelta(minutes=1))
    body = {"window": window, "step": "60s", "kind": "CALL_KIND_CHAT_COMPLETION", "groupBy": "CALL_GROUP_BY_MODEL"}
    series = (await _call(server, "GetPlatformCallCountSeries", body))["series"]
    assert [(s["resourceId"], s["kind"], int(s["points"][0]["count"])) for s in series] == [
        ("chat-m", "CALL_KIND_CHAT_COMPLETION", 2)
    ]


def _other_call(at: datetime, tenant: str, kind: int, model: str, target: str) -> UsageEventRow:
    """A metered call that reached no model: an MCP tool call (model_id is the tool) or a RAG retrieval."""
    return UsageEventRow(
        occurred_at=at, tenant_id=tenant, model_id=model, user_id="u-any", call_kind=kind, target_name=target
    )


async def test_model_groupings_hold_model_ids_only(server: Server, database: Database) -> None:
    """Grouped by model, token reads list models only: not the tools of MCP calls, nor the empty model of RAG
    retrievals and of requests refused before naming one (which rendered as `{}`). Call counts group each kind by
    the resource it called: the MCP server of a tool call, the RAG of a retrieval."""
    t0 = _hour()
    await insert_rows(
        database,
        _event(t0, "g-a", "chat-m", prompt=4, completion=2),
        _event(t0, "g-a", "", kind=1),  # refused before its model was read
        _other_call(t0, "g-a", 6, "add", "tools-srv"),
        _other_call(t0 + timedelta(seconds=1), "g-a", 6, "mul", "tools-srv"),
        _other_call(t0, "g-a", 7, "", "rag-1"),
    )
    window = _window(t0, t0 + timedelta(minutes=1))
    by_model = {"window": window, "groupBy": "TOKEN_USAGE_GROUP_BY_MODEL", "tenantIds": ["g-a"]}
    groups = (await _call(server, "ListPlatformTokenUsage", by_model))["groups"]
    assert [(g["modelId"], int(g["totalTokens"])) for g in groups] == [("chat-m", 6)]
    series = (await _call(server, "GetPlatformTokenUsageSeries", {**by_model, "step": "60s"}))["series"]
    assert [s["modelId"] for s in series] == ["chat-m"]
    for kind, resource in (("CALL_KIND_MCP_TOOL_CALL", "tools-srv"), ("CALL_KIND_RAG_CONTEXT", "rag-1")):
        body = {"window": window, "step": "60s", "kind": kind, "groupBy": "CALL_GROUP_BY_MODEL", "tenantIds": ["g-a"]}
        counted = (await _call(server, "GetPlatformCallCountSeries", body))["series"]
        assert [s["resourceId"] for s in counted] == [resource], kind
        only = (await _call(server, "GetPlatformCallCountSeries", {**body, "resourceIds": [resource]}))["series"]
        assert sum(int(p["count"]) for p in only[0]["points"]) == (2 if resource == "tools-srv" else 1)
    tools = {"window": window, "step": "60s", "kind": "CALL_KIND_MCP_TOOL_CALL", "resourceIds": ["add"]}
    assert [
        int(p["count"]) for p in (await _call(server, "GetPlatformCallCountSeries", tools))["series"][0]["points"]
    ] == [0]  # a tool is not a resource


async def test_zero_filled_points_carry_their_figures_like_the_others(server: Server, database: Database) -> None:
    """Every point of a series has the same figures, zeros written out: a bucket without calls says `count: 0`."""
    t0 = _hour()
    await insert_rows(
        database,
        _event(t0, "z-a", "z-m", kind=1, prompt=3),
        ApiTrafficRow(occurred_at=t0, service="z-svc", status=200, requests=2, request_bytes=10, response_bytes=20),
    )
    window = _window(t0, t0 + timedelta(minutes=3))
    calls = {"window": window, "step": "60s", "kind": "CALL_KIND_CHAT_COMPLETION", "tenantIds": ["z-a"]}
    points = (await _call(server, "GetPlatformCallCountSeries", calls))["series"][0]["points"]
    assert [p["count"] for p in points] == ["1", "0", "0"]
    tokens = {"window": window, "step": "60s", "tenantIds": ["z-a"]}
    points = (await _call(server, "GetPlatformTokenUsageSeries", tokens))["series"][0]["points"]
    figures = {"promptTokens", "completionTokens", "embeddingTokens", "rerankTokens", "totalTokens"}
    assert all(set(p) == {"window", *figures} for p in points), points
    assert [p["totalTokens"] for p in points] == ["3", "0", "0"]
    traffic = {"window": window, "step": "60s", "service": "z-svc"}
    points = (await _call(server, "GetPlatformApiTrafficSeries", traffic))["series"][0]["points"]
    figures = {"requestCount", "errorCount", "requestBytes", "responseBytes"}
    assert all(set(p) == {"window", *figures} for p in points), points
    assert [p["requestCount"] for p in points] == ["2", "0", "0"]


async def test_token_totals_highest_first_with_a_limit(server: Server, database: Database) -> None:
    t0 = _hour()
    await insert_rows(
        database,
        _event(t0, "l-a", "m", prompt=5),
        _event(t0, "l-b", "m", prompt=50),
        _event(t0, "l-c", "m", prompt=20),
    )
    window = _window(t0, t0 + timedelta(hours=1))
    body = {"window": window, "groupBy": "TOKEN_USAGE_GROUP_BY_TENANT", "limit": 2}
    answer = await _call(server, "ListPlatformTokenUsage", body)
    assert answer["window"] == window  # echoed: rows carry no time
    assert [(g["tenantId"], int(g["totalTokens"])) for g in answer["groups"]] == [("l-b", 50), ("l-c", 20)]
    body = {"window": window, "groupBy": "TOKEN_USAGE_GROUP_BY_TENANT", "limit": 0}
    assert len((await _call(server, "ListPlatformTokenUsage", body))["groups"]) == 3  # 0 means no cap


async def test_api_traffic_per_service_and_the_unfiltered_service_list(server: Server, database: Database) -> None:
    t0 = _hour()
    await insert_rows(
        database,
        ApiTrafficRow(occurred_at=t0, service="gateway", status=200, request_bytes=10, response_bytes=100),
        ApiTrafficRow(occurred_at=t0, service="gateway", status=401, request_bytes=5, response_bytes=50),
        # a row counts the requests of one service, status and second
        ApiTrafficRow(occurred_at=t0, service="gateway", status=503, requests=3, request_bytes=7, response_bytes=70),
        ApiTrafficRow(occurred_at=t0, service="management", status=200, request_bytes=1, response_bytes=2),
    )
    body = {"window": _window(t0, t0 + timedelta(minutes=1)), "step": "60s", "service": "gateway"}
    answer = await _call(server, "GetPlatformApiTrafficSeries", body)
    assert answer["services"] == ["gateway", "management"]
    [series] = answer["series"]
    point = series["points"][0]
    assert series["service"] == "gateway"
    assert (int(point["requestCount"]), int(point["errorCount"])) == (5, 4)
    assert (int(point["requestBytes"]), int(point["responseBytes"])) == (22, 220)


@pytest.mark.parametrize(
    ("method", "extra", "field"),
    [
        ("GetPlatformTokenUsageSeries", {"groupBy": "TOKEN_USAGE_GROUP_BY_API_KEY"}, "group_by"),
        ("ListPlatformTokenUsage", {"groupBy": "TOKEN_USAGE_GROUP_BY_API_KEY"}, "group_by"),
        ("GetPlatformCallCountSeries", {"kind": "CALL_KIND_CHAT_COMPLETION", "groupBy": "CALL_GROUP_BY_API_KEY"}, ""),
        ("GetPlatformCallCountSeries", {}, "kind"),
    ],
)
async def test_refused_queries_name_the_field(server: Server, method: str, extra: dict[str, Any], field: str) -> None:
    t0 = _hour()
    body = {"window": _window(t0, t0 + timedelta(hours=1)), **extra}
    result = await ConnectJsonCaller(server.base_url).call(f"{SERVICE}/{method}", body, token=server.admin_token)
    assert result.code == "invalid_argument"
    assert (field or "group_by") in result.message


@pytest.mark.parametrize("window", [None, "backwards"])
async def test_a_window_is_required_and_must_move_forward(server: Server, window: str | None) -> None:
    t0 = _hour()
    body = {} if window is None else {"window": _window(t0, t0 - timedelta(hours=1))}
    result = await ConnectJsonCaller(server.base_url).call(
        f"{SERVICE}/GetPlatformApiTrafficSeries", body, token=server.admin_token
    )
    assert result.code == "invalid_argument"
    assert "window" in result.message


@pytest.mark.parametrize(
    "method",
    [
        "GetPlatformTokenUsageSeries",
        "GetPlatformCallCountSeries",
        "ListPlatformTokenUsage",
        "GetPlatformApiTrafficSeries",
    ],
)
async def test_every_read_needs_can_manage_tenants(server: Server, method: str) -> None:
    t0 = _hour()
    body: dict[str, Any] = {"window": _window(t0, t0 + timedelta(hours=1))}
    if method == "GetPlatformCallCountSeries":
        body["kind"] = "CALL_KIND_CHAT_COMPLETION"
    connect = ConnectJsonCaller(server.base_url)
    models_only = server.token("models-operator", roles=("can_manage_models",))
    for token in (server.token("plain-user"), models_only):
        result = await connect.call(f"{SERVICE}/{method}", body, token=token, get=True)
        assert result.code == "permission_denied", result
    assert (
        await connect.call(f"{SERVICE}/{method}", body, token=server.token("ops", roles=("can_manage_tenants",)))
    ).ok


async def _management_traffic(server: Server, since: datetime) -> tuple[int, int]:
    """(requests, errors) the management server has counted since `since`."""
    body = {"window": _window(since, datetime.now(UTC) + timedelta(minutes=1)), "service": "management"}
    answer = await _call(server, "GetPlatformApiTrafficSeries", body)
    points = [p for s in answer.get("series", []) for p in s.get("points", [])]  # empty lists are omitted
    return sum(int(p.get("requestCount", 0)) for p in points), sum(int(p.get("errorCount", 0)) for p in points)


async def test_management_requests_are_counted_too(server: Server) -> None:
    """Traffic reads count every request the platform served: the management API's own, refusals included (a gRPC
    refusal travels over HTTP 200 and is still an error)."""
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    before = await _management_traffic(server, since)
    connect = ConnectJsonCaller(server.base_url)
    for _ in range(4):
        assert (await connect.call("platform.tenants.v1.UserService/GetCurrentUser", {}, token=server.admin_token)).ok
    for _ in range(2):
        assert (await connect.call("platform.tenants.v1.UserService/GetCurrentUser", {})).code == "unauthenticated"
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        call = channel.unary_unary(
            "/platform.tenants.v1.UserService/GetCurrentUser",
            request_serializer=bytes,
            response_deserializer=bytes,
        )
        with pytest.raises(grpc.aio.AioRpcError):
            await call(b"", timeout=10)
    after = before
    for _ in range(100):  # the meter writes in batches; wait for this one (bounded, not a timing assertion)
        after = await _management_traffic(server, since)
        if after[0] - before[0] >= 7 and after[1] - before[1] >= 3:
            break
        await asyncio.sleep(0.1)
    assert after[0] - before[0] >= 7
    assert after[1] - before[1] >= 3


async def _management_traffic(server: Server, since: datetime) -> tuple[int, int]:
    body = {"window": _window(since, datetime.now(UTC) + timedelta(minutes=1)), "service": "management"}
    result = await ConnectJsonCaller(server.base_url).call(
        f"{SERVICE}/GetPlatformApiTrafficSeries", body, token=server.admin_token, get=True
    )
    assert result.ok, result
    points = [p for s in result.body.get("series", []) for p in s.get("points", [])]
    return sum(int(p.get("requestCount", 0)) for p in points), sum(int(p.get("requestBytes", 0)) for p in points)


async def test_grpc_request_bodies_are_counted_in_request_bytes(server: Server) -> None:
    """ApiTrafficPoint.requestBytes is 'request body bytes received': a gRPC request (HTTP/2, no Content-Length)
    was counted as 0 bytes, being counted by its Content-Length (found by probing)."""
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=1)
    before = await _management_traffic(server, since)
    big = "x" * 20000
    async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        call = channel.unary_unary(
            "/platform.tenants.v1.TenantService/CreateTenant",
            request_serializer=lambda b: b,
            response_deserializer=lambda b: b,
        )
        # field 1 (a string) holding 20,000 bytes: whatever the server answers, it received them
        payload = b"\x0a" + bytes([0xA0, 0x9C, 0x01]) + big.encode()
        with contextlib.suppress(grpc.aio.AioRpcError):
            await call(payload, timeout=10, metadata=[("authorization", f"Bearer {server.admin_token}")])
    after = before
    for _ in range(100):
        after = await _management_traffic(server, since)
        # the gRPC call and one traffic read; a batch of earlier tests' calls may land first, so wait for the bytes
        if after[0] - before[0] >= 2 and after[1] - before[1] >= 20000:
            break
        await asyncio.sleep(0.1)
    assert after[0] - before[0] >= 2
    assert after[1] - before[1] >= 20000, (before, after)
