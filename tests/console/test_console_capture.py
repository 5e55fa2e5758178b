"""The console's captured-exchanges pages in a real browser (console/e2e/capture.mjs) against `serve --demo`: the test
turns capture on for the demo tenant, makes a buffered and a streamed chat call through the gateway with the demo's
key, waits for the meter to write their exchanges, and the browser (the bootstrap operator, who holds capture) lists,
filters and opens them, is refused an exchange that does not exist in plain words, and turns capture on and off for
the key and the tenant. For each page loaded afresh: its API calls (at most 3), axe, screenshots at 1280 and 390 px.
"""

from __future__ import annotations

import json
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from tests.clients import ConnectJsonCaller
from tests.console.harness import (
    DemoConsole,
    check_accessible,
    check_calls_per_load,
    check_screenshots,
    flow_done,
    run_script,
)
from tests.serving import until

pytestmark = pytest.mark.timeout(300)

CAPTURE = "switchboard.capture.v1.CaptureService"
PAGES = ("capture", "capture-exchange")
MARKER = "capture-marker-7f3a"  # in both prompts, so the test finds its own calls' bodies


async def _chat(demo: DemoConsole, *, stream: bool) -> str:
    """One chat call with the demo's key; the capture header of its answer."""
    body = {"model": demo.demo["CHAT_MODEL"], "stream": stream, "messages": [{"role": "user", "content": MARKER}]}
    headers = {"Authorization": f"Bearer {demo.demo['OPENAI_API_KEY']}"}
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{demo.demo['OPENAI_BASE_URL']}/chat/completions", json=body, headers=headers) as resp,
    ):
        await resp.read()
        assert resp.status == 200, resp.status
        return resp.headers.get("X-Switchboard-Content-Capture", "")


@pytest_asyncio.fixture(scope="module")
async def run(demo_world: DemoConsole) -> dict[str, Any]:
    api = ConnectJsonCaller(demo_world.base)
    tenant_id = demo_world.demo["TENANT"]
    on = await api.call(
        f"{CAPTURE}/SetCapturePolicy",
        {"tenantId": tenant_id, "scope": {"kind": "CAPTURE_SCOPE_KIND_TENANT"}, "enabled": True},
        token=demo_world.admin_token,
    )
    assert on.code == "ok", on
    # The policy reaches the gateway's cache by invalidation, or once its cached answer expires (a second); the
    # header says when a call is captured.

    async def captured() -> bool:
        return await _chat(demo_world, stream=False) == "on"

    await until(captured, attempts=100)
    assert await _chat(demo_world, stream=True) == "on"  # the newest exchange: the page opens it first
    listed: dict[str, Any] = {}

    async def written() -> bool:
        nonlocal listed
        found = await api.call(
            f"{CAPTURE}/ListCapturedExchanges", {"tenantId": tenant_id}, token=demo_world.admin_token
        )
        assert found.code == "ok", found
        listed = found.body
        return len(listed.get("exchanges", [])) >= 2

    await until(written, attempts=300)  # the meter writes its batch within a second or so
    key_id = listed["exchanges"][0]["apiKeyId"]
    result = await run_script(
        "capture.mjs",
        {
            "base": demo_world.base,
            "tenantId": tenant_id,
            "chatModel": demo_world.demo["CHAT_MODEL"],
            "keyId": key_id,
        },
    )
    result["keyId"] = key_id
    policies = await api.call(f"{CAPTURE}/ListCapturePolicies", {"tenantId": tenant_id}, token=demo_world.admin_token)
    assert policies.code == "ok", policies
    result["policiesAfter"] = policies.body.get("policies", [])
    return result


async def test_holders_see_the_page_in_the_nav_and_the_tenants_exchanges(run: dict[str, Any]) -> None:
    flow = flow_done(run, "list")
    assert "Captured exchanges" in flow["nav"]
    assert flow["tenantPolicy"].startswith("Whole tenant: capturing"), flow
    assert flow["count"] >= 2 and all(caller.startswith(f"Key {run['keyId']}") for caller in flow["callers"]), flow


async def test_exchanges_are_filtered_by_the_server(run: dict[str, Any], demo_world: DemoConsole) -> None:
    flow = flow_done(run, "filter")
    assert flow["models"] == [demo_world.demo["CHAT_MODEL"]]
    assert [c.split("/")[-1] for c in flow["callsForFilter"]] == ["ListCapturedExchanges"]
    assert flow["emptyText"] == "No captured exchanges match."


async def test_an_exchange_shows_its_decrypted_bodies_and_usage_row(run: dict[str, Any]) -> None:
    flow = flow_done(run, "exchange")
    # The newest is the streamed call: its request as sent, its answer's events joined in order.
    assert json.loads(flow["request"])["messages"][0]["content"] == MARKER
    assert json.loads(flow["request"])["stream"] is True
    assert flow["response"].startswith("data: {") and flow["response"].rstrip().endswith("data: [DONE]"), flow
    assert "chat.completion.chunk" in flow["response"]
    assert int(flow["usage"][5].replace(",", "")) >= 1, flow["usage"]  # the usage row's id, after the call's 5 terms


async def test_a_refusal_is_in_plain_words(run: dict[str, Any]) -> None:
    banner = flow_done(run, "refusal")["banner"]
    assert banner.startswith("It was not found") and "cap_0000000000000000" in banner, banner


async def test_capture_is_turned_on_and_off_for_a_key_and_the_tenant(run: dict[str, Any]) -> None:
    flow = flow_done(run, "policies")
    assert f"API key {run['keyId']}: capturing" in flow["keyOn"]
    assert f"API key {run['keyId']}: off" in flow["keyOff"]
    assert flow["tenantPolicy"].startswith("Whole tenant: off"), flow
    # And so the server stored them.
    state = {(p["scope"]["kind"], p["scope"].get("id", "")): p.get("enabled", False) for p in run["policiesAfter"]}
    assert state == {("CAPTURE_SCOPE_KIND_TENANT", ""): False, ("CAPTURE_SCOPE_KIND_API_KEY", run["keyId"]): False}


async def test_each_page_load_makes_at_most_three_api_calls(run: dict[str, Any]) -> None:
    check_calls_per_load(run, PAGES)


async def test_no_page_has_serious_accessibility_violations(run: dict[str, Any]) -> None:
    check_accessible(run, PAGES)


async def test_screenshots_at_both_widths(run: dict[str, Any]) -> None:
    check_screenshots(run, PAGES)
