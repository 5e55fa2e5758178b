"""The console's chat page in a real browser (console/e2e/chat.mjs) against `switchboard serve --demo`, the world
`make run` gives a person: the real gateway, the demo's MCP server, RAG, stand-in chat model, guardrail and agent.
One browser session (about 20 s; the demo's start, shared with test_console_insight.py, about 90 s); the tests
below read its findings.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from server.dev.demo import SPEECH_PUBLIC_ID
from server.dev.stand_in import stand_in_transcript
from tests.console.harness import DemoConsole, check_accessible, check_screenshots, flow_done, run_script

pytestmark = pytest.mark.timeout(300)

PAGES = ("chat", "chat-tools", "chat-search", "chat-refusal")


@pytest.fixture(scope="module")
def world(demo_world: DemoConsole) -> DemoConsole:
    return demo_world


@pytest_asyncio.fixture(scope="module")
async def run(world: DemoConsole) -> dict[str, Any]:
    return await run_script(
        "chat.mjs",
        {
            "base": world.base,
            "gateway": world.gateway,
            "tenantId": world.demo["TENANT"],
            "chatModel": world.demo["CHAT_MODEL"],
            "agent": world.demo["AGENT"],
        },
    )


async def test_a_page_load_makes_two_calls_and_lists_what_the_person_may_invoke(
    run: dict[str, Any], world: DemoConsole
) -> None:
    flow = flow_done(run, "load")
    print("chat page load:", flow["calls"])
    # The session and the gateway's model list: the tab's console key was made by the load after sign-in and is
    # reused; nothing else until a panel is opened.
    assert flow["calls"] == [
        "GET api/switchboard.console.v1.ConsoleService/GetSession",
        "GET gateway/v1/models",
    ]
    # Models and the preset agent; not the guardrail or the embedding model (they do not chat).
    assert world.demo["CHAT_MODEL"] in flow["options"] and world.demo["AGENT"] in flow["options"]
    assert world.demo["GUARDRAIL_MODEL"] not in flow["options"]
    assert world.demo["EMBEDDING_MODEL"] not in flow["options"]


async def test_an_mcp_tool_call_waits_for_approval_and_runs_once_approved(run: dict[str, Any]) -> None:
    flow = flow_done(run, "toolApproved")
    assert "get_weather" in flow["call"] and "Paris: 18 °C, light rain (demo data)" in flow["call"]
    assert "answered: Paris: 18 °C, light rain (demo data)" in flow["answer"]


async def test_a_denied_tool_call_is_not_run_and_answered_approvals_offer_no_buttons(run: dict[str, Any]) -> None:
    assert flow_done(run, "toolDenied")["buttons"] == 0


async def test_a_file_search_shows_its_sources(run: dict[str, Any]) -> None:
    flow = flow_done(run, "fileSearch")
    assert flow["first"].startswith("api-keys.md"), flow
    assert "api-keys.md" in flow["answer"]


async def test_a_guardrail_refusal_is_in_plain_words(run: dict[str, Any]) -> None:
    text = flow_done(run, "refusal")["text"]
    assert text.startswith("The answer was withheld.") and "output guardrail" in text and "password" in text


async def test_a_past_conversation_is_listed_and_resumed(run: dict[str, Any]) -> None:
    flow = flow_done(run, "resume")
    assert flow["titles"][:3] == [
        "What is the admin password?",
        "Search the handbook: how do I rotate an API key?",
        "What is the weather in Paris?",
    ]
    # One page of conversations (management API), one page of the chosen one's items (gateway).
    assert [c.split("/")[-1] for c in flow["calls"]] == ["ListConversations", "items"], flow["calls"]
    assert flow["items"] >= 4  # the question, the approval request, the decision, the call, the answer


async def test_an_audio_file_over_the_spec_limit_is_refused_before_upload(run: dict[str, Any]) -> None:
    flow = flow_done(run, "audioTooLarge")
    assert flow["status"] == "meeting.wav (127.00 MiB) is over the 127 MiB limit for audio files in chat."
    assert flow["calls"] == []


async def test_an_audio_file_is_transcribed_through_the_gateway_into_the_message(
    run: dict[str, Any], world: DemoConsole
) -> None:
    flow = flow_done(run, "audioTranscribed")
    assert flow["calls"] == ["POST gateway/v1/audio/transcriptions"], flow
    assert flow["message"] == stand_in_transcript("hello.wav", 4096), flow
    assert world.demo["SPEECH_MODEL"] == SPEECH_PUBLIC_ID


async def test_one_console_key_per_tab_reused_across_loads_and_revoked_at_sign_out(run: dict[str, Any]) -> None:
    flow = flow_done(run, "keyKept")
    assert flow["keysMade"] == 1, flow  # every page load after the first reused it
    assert flow["heldForTenant"] and not flow["secretInLocalStorage"], flow
    assert (flow["statusBefore"], flow["statusAfterSignOut"]) == (200, 401), flow
    assert flow["left"] == "{}", flow


async def test_no_chat_view_has_serious_accessibility_violations(run: dict[str, Any]) -> None:
    check_accessible(run, PAGES)


async def test_screenshots_at_both_widths(run: dict[str, Any]) -> None:
    check_screenshots(run, PAGES)


async def test_the_chat_ran_without_errors_under_the_csp(run: dict[str, Any]) -> None:
    ours = [e for e in run["errors"] if "Failed to load resource" not in e]
    assert ours == [], ours
