"""The console's usage, audit and limits pages in a real browser (console/e2e/insight.mjs) against `serve --demo`
after the chat run (test_console_chat.py, which runs first in this folder): the chat's calls are real metered usage
and audit events. For each page loaded afresh: its API calls (at most 3), axe, screenshots at 1280 and 390 px.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.console.harness import (
    DemoConsole,
    check_accessible,
    check_calls_per_load,
    check_screenshots,
    flow_done,
    run_script,
)

pytestmark = pytest.mark.timeout(300)

PAGES = ("usage", "usage-all", "audit", "audit-all", "limits")


@pytest_asyncio.fixture(scope="module")
async def run(demo_world: DemoConsole) -> dict[str, Any]:
    return await run_script(
        "insight.mjs",
        {"base": demo_world.base, "tenantId": demo_world.demo["TENANT"], "chatModel": demo_world.demo["CHAT_MODEL"]},
    )


async def test_usage_charts_the_tenants_calls_by_model_and_kind_with_top_lists(run: dict[str, Any]) -> None:
    flow = flow_done(run, "usage")
    requests = int(flow["totals"][0].replace(",", ""))
    assert requests >= 1, flow  # the demo's seeding and, when the chat ran first, its calls
    assert flow["legend"] and flow["top"], flow
    # Split by call kind names kinds in words; a change of split or top list is one call each.
    assert set(flow["kinds"]) <= {
        "Chat completions",
        "Responses",
        "Embeddings",
        "Rerank",
        "Transcriptions",
        "MCP tool calls",
        "RAG retrievals",
        "Other",
    }
    assert [c.split("/")[-1] for c in flow["callsForChanges"]] == ["GetUsageSeries", "ListTopUsage"]
    assert any("(sb_" in row for row in flow["topKeys"]), flow["topKeys"]  # a key by its name and prefix


async def test_operators_see_usage_across_tenants(run: dict[str, Any]) -> None:
    flow = flow_done(run, "usageAcross")
    assert "Demo" in flow["legend"] and flow["top"][0].startswith("Demo"), flow


async def test_the_audit_trail_is_filtered_by_the_server(run: dict[str, Any]) -> None:
    flow = flow_done(run, "audit")
    assert flow["first"] >= 1 and "ApiKeyService/CreateApiKey" in flow["actions"], flow
    # The method filter as a person types it (no leading slash): one call, and only that method's events.
    assert flow["filtered"] and set(flow["filtered"]) == {"ApiKeyService/CreateApiKey"}, flow
    assert [c.split("/")[-1] for c in flow["callsForFilter"]] == ["ListAuditEvents"]
    assert all(outcome.startswith("Refused") for outcome in flow["refused"]), flow


async def test_operators_read_the_audit_trail_across_tenants(run: dict[str, Any], demo_world: DemoConsole) -> None:
    assert demo_world.demo["TENANT"] in flow_done(run, "auditAcross")["tenants"]


async def test_limits_are_set_edited_read_and_deleted(run: dict[str, Any]) -> None:
    flow = flow_done(run, "limits")
    # A quantity the server refuses is shown in plain words with the server's reason, and sets nothing.
    assert flow["refusal"].startswith("Some of what you entered was not accepted.") and "lots" in flow["refusal"]
    assert flow["set"] == "600 requests/min · 1M tokens/month (soft 800k)"
    assert flow["edited"] == "1k requests/min · 1M tokens/month (soft 800k)"
    # Current use of the key's limits, each named with its tier and scope; the demo runs without a shared counter
    # store: each figure says its use is unknown, and the page says why once.
    assert [line.split(" (")[0] for line in flow["use"]] == ["Requests per minute", "Token budget"], flow["use"]
    assert flow["use"][0].startswith("Requests per minute (Tenant, whole tenant)"), flow["use"]
    assert flow["use"][0].count("usage unknown (limit 1,000)") == 1, flow["use"]  # said once, not beside itself
    assert "usage unknown (limit 1,000,000)" in flow["use"][1], flow["use"]
    assert "Soft budget of 800,000 not crossed this period." in flow["use"][1], flow["use"]
    assert "no shared counter store" in flow["useStatus"], flow["useStatus"]
    assert flow["left"] == 0


async def test_limits_are_set_and_read_beside_keys_service_accounts_tenants_and_models(run: dict[str, Any]) -> None:
    flow = flow_done(run, "limitsBeside")
    # Opening the panel asks for the scope's policies and use; the page's own load asked for neither.
    assert sorted(c.split("/")[-1] for c in flow["opened"]) == ["GetLimitUsage", "ListLimitPolicies"], flow
    # Only the key's own policies, never the whole tenant's.
    assert flow["listed"]["scope"]["kind"] == "LIMIT_SCOPE_KIND_API_KEY" and flow["listed"]["scope"]["id"], flow
    assert flow["refusal"].startswith("Some of what you entered was not accepted.") and "lots" in flow["refusal"]
    # The key's tenant-tier limits with their current use against each (no shared counter store in the demo: unknown,
    # said so) and the soft budget's state.
    panel = flow["keyPanel"]
    assert "30 requests/min · 50k tokens/month (soft 40k)" in panel, panel
    assert "Requests per minute" in panel and "Token budget" in panel and panel.count("usage unknown (limit 30)") == 1
    assert "Soft budget of 40,000 not crossed this period." in panel, panel
    assert "no shared counter store" in panel, panel
    assert "3 at once" in flow["accountPanel"] and "Concurrent requests" in flow["accountPanel"], flow
    # The demo admin is an operator and the tenant's admin: both tiers, beside the tenant and beside a model.
    assert flow["tenantTiers"] == ["Platform limits", "Tenant limits"], flow
    assert flow["modelTiers"] == ["Platform limits", "Tenant limits"], flow
    assert flow["modelTitle"].startswith("Limits of the model "), flow


async def test_each_page_load_makes_at_most_three_api_calls(run: dict[str, Any]) -> None:
    check_calls_per_load(run, PAGES)


async def test_no_page_has_serious_accessibility_violations(run: dict[str, Any]) -> None:
    check_accessible(run, (*PAGES, "limits-set", "limits-panel"))


async def test_screenshots_at_both_widths(run: dict[str, Any]) -> None:
    check_screenshots(run, (*PAGES, "limits-set", "limits-panel"))
