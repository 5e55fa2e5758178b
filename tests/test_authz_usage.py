"""Authorization matrix rows for PlatformUsageService: every read needs can_manage_tenants, which only a platform
operator's own session carries (API keys never carry platform roles, whoever owns them)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.clients import ConnectJsonCaller
from tests.matrix import Cast, Row, allow, build_cast, check_rows, fixed

USAGE = "platform.metering.v1.PlatformUsageService"
WINDOW = {"startTime": "2001-01-01T00:00:00Z", "endTime": "2001-01-01T01:00:00Z"}

ROWS = [
    Row(f"{USAGE}/GetPlatformTokenUsageSeries", fixed(window=WINDOW), allow("platform_admin"), get=True),
    Row(
        f"{USAGE}/GetPlatformCallCountSeries",
        fixed(window=WINDOW, kind="CALL_KIND_EMBEDDING"),
        allow("platform_admin"),
        get=True,
    ),
    Row(f"{USAGE}/ListPlatformTokenUsage", fixed(window=WINDOW), allow("platform_admin"), get=True),
    Row(f"{USAGE}/GetPlatformApiTrafficSeries", fixed(window=WINDOW), allow("platform_admin"), get=True),
]


@pytest.fixture
async def cast(server: Any, connect: ConnectJsonCaller) -> Cast:
    return await build_cast(server, connect)


async def test_usage_authorization_matrix(connect: ConnectJsonCaller, cast: Cast) -> None:
    failures = await check_rows(connect, cast, ROWS)
    assert failures == [], "\n".join(failures)
