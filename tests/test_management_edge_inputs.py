"""Requests at the edge of what their types allow, each once answered `internal` (a 500 and a traceback):
a usage step longer than the window or than a Duration holds, a usage range in the last day of year 9999, a NaN in a
conversation item's Struct (binary only), and a page token in the server's own format with a number no database
integer holds. Each is now refused naming its field, or answered."""

from __future__ import annotations

import base64
import json
from typing import Any

import aiohttp
import pytest
from google.protobuf.duration_pb2 import Duration
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from gen.platform.conversations.v1 import conversation_item_service_pb2, conversation_pb2, conversation_service_pb2
from gen.platform.metering.v1 import platform_usage_service_pb2, usage_pb2
from tests.clients import ConnectJsonCaller, Result
from tests.conftest import Server
from tests.world import World, make_world, must

PLATFORM_USAGE = "platform.metering.v1.PlatformUsageService"
USAGE = "switchboard.usage.v1.UsageService"
CONVERSATIONS = "platform.conversations.v1.ConversationService"
ITEMS = "platform.conversations.v1.ConversationItemService"
LIMITS = "switchboard.limits.v1.LimitService"

DAY = {"startTime": "2020-01-01T00:00:00Z", "endTime": "2020-01-02T00:00:00Z"}
# The longest Duration protobuf JSON accepts: 10,000 Julian years.
TEN_THOUSAND_YEARS = 315_576_000_000


@pytest.fixture
async def world(server: Server, connect: ConnectJsonCaller) -> World:
    return await make_world(server, connect)


async def _binary(server: Server, method: str, message: Message, token: str) -> Result:
    """A Connect unary call in binary protobuf (which can say what JSON cannot); errors come back as JSON."""
    headers = {"Content-Type": "application/proto", "Authorization": f"Bearer {token}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{server.base_url}/{method}", data=message.SerializeToString(), headers=headers) as resp,
    ):
        if resp.status == 200:
            return Result("ok", {})
        error = json.loads(await resp.read())
        return Result(str(error.get("code")), error)


def _series_body(method: str, window: dict[str, str], step: str) -> dict[str, Any]:
    body: dict[str, Any] = {"window": window, "step": step}
    if method == "GetPlatformCallCountSeries":
        body["kind"] = "CALL_KIND_CHAT_COMPLETION"
    return body


def _point_windows(body: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["window"]["startTime"], p["window"]["endTime"]) for s in body.get("series", []) for p in s["points"]]


# ---- PlatformUsageService: a step longer than the window ---------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["GetPlatformTokenUsageSeries", "GetPlatformCallCountSeries", "GetPlatformApiTrafficSeries"]
)
async def test_platform_series_with_a_ten_thousand_year_step_answers_the_window_as_one_bucket(
    server: Server, connect: ConnectJsonCaller, method: str
) -> None:
    """The bucket holding the window ended past year 9999 (a datetime overflow) before it was clipped."""
    body = _series_body(method, DAY, f"{TEN_THOUSAND_YEARS}s")
    result = must(await connect.call(f"{PLATFORM_USAGE}/{method}", body, token=server.admin_token, get=True))
    assert set(_point_windows(result)) <= {("2020-01-01T00:00:00Z", "2020-01-02T00:00:00Z")}, result
    if method != "GetPlatformApiTrafficSeries":  # no traffic series without traffic; the others always answer one
        assert _point_windows(result), result


async def test_platform_series_bucket_reaching_past_9999_is_clipped_to_the_window(
    server: Server, connect: ConnectJsonCaller
) -> None:
    """A 7,000-year step over 2000-9000: the second epoch-aligned bucket would end in year 15970."""
    window = {"startTime": "2000-01-01T00:00:00Z", "endTime": "9000-01-01T00:00:00Z"}
    body = _series_body("GetPlatformTokenUsageSeries", window, f"{TEN_THOUSAND_YEARS * 7 // 10}s")
    result = must(
        await connect.call(f"{PLATFORM_USAGE}/GetPlatformTokenUsageSeries", body, token=server.admin_token, get=True)
    )
    windows = _point_windows(result)
    assert len(windows) == 2 and windows[0][0] == window["startTime"], windows
    assert windows[0][1] == windows[1][0] and windows[1][1] == window["endTime"], windows


@pytest.mark.parametrize("seconds", [TEN_THOUSAND_YEARS + 1, 10**15, -(10**15)], ids=["past-json", "huge", "negative"])
async def test_platform_series_binary_step_beyond_a_duration_is_refused_naming_step(
    server: Server, seconds: int
) -> None:
    """Binary Durations are not range-checked on decode: past Duration's range (where JSON refuses), step is
    invalid; 10**15 s overflowed timedelta in the handler."""
    window = usage_pb2.TimeWindow(start_time=Timestamp(seconds=1577836800), end_time=Timestamp(seconds=1577923200))
    request = platform_usage_service_pb2.GetPlatformTokenUsageSeriesRequest(
        window=window, step=Duration(seconds=seconds)
    )
    result = await _binary(server, f"{PLATFORM_USAGE}/GetPlatformTokenUsageSeries", request, server.admin_token)
    assert result.code == "invalid_argument" and "step" in result.message, result


# ---- UsageService: a range in the last day of 9999 ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "body", "field"),
    [
        (
            "GetUsageSeries",
            {"startTime": "9999-12-31T00:00:00Z", "endTime": "9999-12-31T23:59:59Z", "bucket": "BUCKET_DAY"},
            "end_time",
        ),
        (
            "GetUsageSeries",
            {"startTime": "9999-12-31T22:00:00Z", "endTime": "9999-12-31T23:30:00Z", "bucket": "BUCKET_HOUR"},
            "end_time",
        ),
        (
            "ListTopUsage",
            {"startTime": "9999-12-31T00:00:00Z", "endTime": "9999-12-31T23:59:59Z", "groupBy": "GROUP_BY_MODEL"},
            "end_time",
        ),
        (
            "GetUsageSeries",
            {"startTime": "1969-12-31T00:00:00Z", "endTime": "1970-01-01T00:00:00Z", "bucket": "BUCKET_DAY"},
            "start_time",
        ),
    ],
    ids=["series-day", "series-hour", "top", "before-1970"],
)
async def test_usage_range_outside_the_platform_bounds_is_refused_naming_the_field(
    connect: ConnectJsonCaller, world: World, method: str, body: dict[str, Any], field: str
) -> None:
    """Aligned outward to whole buckets, the end of 9999 became 10000-01-01 (a datetime overflow). Refused with the
    platform usage reads' own bound."""
    request = {"tenantId": world.tenant_id, **body}
    result = await connect.call(f"{USAGE}/{method}", request, token=world.tokens["admin"], get=True)
    assert result.code == "invalid_argument", result
    assert result.message == f"{field} must lie between 1970-01-01 and 9000-01-01", result


# ---- Conversation items: a NaN or infinite number in a Struct (binary) ---------------------------------------------


def _item(extra: float, part_extra: float = 0.0) -> conversation_pb2.ConversationItem:
    part = conversation_pb2.ConversationContentPart(type="input_text", text="hi")
    part.extra.update({"weight": part_extra})
    item = conversation_pb2.ConversationItem(type="message", role="user", content=[part])
    item.extra.update({"weight": extra})
    return item


@pytest.mark.parametrize(
    ("items", "field"),
    [
        ([_item(float("nan"))], "items[0].extra"),
        ([_item(0.0), _item(float("-inf"))], "items[1].extra"),
        ([_item(0.0, part_extra=float("inf"))], "items[0].content[0].extra"),
    ],
    ids=["nan", "infinity-second-item", "infinity-in-part"],
)
async def test_create_items_with_a_non_finite_struct_number_is_refused_naming_it(
    server: Server, connect: ConnectJsonCaller, world: World, items: list[conversation_pb2.ConversationItem], field: str
) -> None:
    admin = world.tokens["admin"]
    created = must(
        await connect.call(f"{CONVERSATIONS}/CreateConversation", {"tenantId": world.tenant_id}, token=admin)
    )
    request = conversation_item_service_pb2.CreateItemsRequest(
        tenant_id=world.tenant_id, conversation_id=created["conversation"]["id"], items=items
    )
    result = await _binary(server, f"{ITEMS}/CreateItems", request, admin)
    assert result.code == "invalid_argument" and result.message.startswith(f"{field} "), result


async def test_create_conversation_with_a_nan_struct_number_is_refused_naming_it(server: Server, world: World) -> None:
    request = conversation_service_pb2.CreateConversationRequest(tenant_id=world.tenant_id, items=[_item(float("nan"))])
    result = await _binary(server, f"{CONVERSATIONS}/CreateConversation", request, world.tokens["admin"])
    assert result.code == "invalid_argument" and result.message.startswith("items[0].extra "), result


async def test_create_items_with_finite_struct_numbers_still_reads_back(
    server: Server, connect: ConnectJsonCaller, world: World
) -> None:
    admin = world.tokens["admin"]
    created = must(
        await connect.call(f"{CONVERSATIONS}/CreateConversation", {"tenantId": world.tenant_id}, token=admin)
    )
    request = conversation_item_service_pb2.CreateItemsRequest(
        tenant_id=world.tenant_id, conversation_id=created["conversation"]["id"], items=[_item(2.5, part_extra=3.0)]
    )
    assert (await _binary(server, f"{ITEMS}/CreateItems", request, admin)).ok
    listed = must(
        await connect.call(
            f"{ITEMS}/ListItems",
            {"tenantId": world.tenant_id, "conversationId": created["conversation"]["id"]},
            token=admin,
            get=True,
        )
    )
    (item,) = listed["items"]
    assert item["extra"] == {"weight": 2.5} and item["content"][0]["extra"] == {"weight": 3}, item


# ---- ListLimitPolicies: a forged token whose numbers no policy has ------------------------------------------------


def _page_token(*key: str) -> str:
    """A token in server.domain.pages' shape: base64url of a JSON array, the list's kind then its sort key."""
    return base64.urlsafe_b64encode(json.dumps(list(key)).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "key",
    [("99999999999999999999", "1", "x"), ("1", "-99999999999999999999", "x"), ("7", "1", "x"), ("1", "0", "x")],
    ids=["huge-tier", "huge-negative-scope-kind", "unknown-tier", "unspecified-scope-kind"],
)
async def test_limit_policies_token_with_a_number_no_policy_has_is_refused_naming_page_token(
    connect: ConnectJsonCaller, world: World, key: tuple[str, str, str]
) -> None:
    body = {"tenantId": world.tenant_id, "page": {"pageSize": 1, "pageToken": _page_token("limit_policies", *key)}}
    result = await connect.call(f"{LIMITS}/ListLimitPolicies", body, token=world.tokens["admin"])
    assert result.code == "invalid_argument" and "page_token" in result.message, result


async def test_limit_policies_token_of_a_real_key_still_pages(connect: ConnectJsonCaller, world: World) -> None:
    """A token naming a tier and scope kind that exist is read as before (past the last policy: an empty page)."""
    body = {
        "tenantId": world.tenant_id,
        "page": {"pageSize": 1, "pageToken": _page_token("limit_policies", "2", "4", "~")},
    }
    result = must(await connect.call(f"{LIMITS}/ListLimitPolicies", body, token=world.tokens["admin"]))
    assert result.get("policies", []) == [], result
